"""asrkit.data.mp3_check: MPEG frame headers, LAME's CRC, and clean files of every MPEG version found clean."""

import io

import numpy as np
import pytest
import soundfile

from asrkit.data.mp3_check import crc16, mp3_damage, parse_header


def test_crc16_is_the_arc_checksum():
    assert crc16(b"123456789") == 0xBB3D  # CRC-16/ARC's check value


@pytest.mark.parametrize("header,expected", [
    (b"\xff\xfb\x90\x64", (1, 3, 44100, 417, 1152, False)),  # MPEG-1 layer III, 128 kbit/s
    (b"\xff\xfb\x92\x64", (1, 3, 44100, 418, 1152, False)),  # ... with its padding byte
    (b"\xff\xf3\x88\xc4", (2, 3, 16000, 288, 576, True)),  # MPEG-2 layer III, 64 kbit/s, mono
    (b"\xff\xe3\x40\xc4", (25, 3, 11025, 208, 576, True)),  # MPEG-2.5 layer III, 32 kbit/s, mono
    (b"\xff\xfd\x80\x04", (1, 2, 44100, 417, 1152, False)),  # MPEG-1 layer II, 128 kbit/s
])
def test_frame_headers(header, expected):
    frame = parse_header(header, 0)
    assert (frame.version, frame.layer, frame.sample_rate, frame.length, frame.samples, frame.mono) == expected


@pytest.mark.parametrize("header", [b"\xff\xfb\xf0\x64", b"\xff\xfb\x0c\x64", b"\xff\xeb\x90\x64", b"\xff\xf9\x90\x64",
                                    b"\xfe\xfb\x90\x64", b"\xff\xfb\x90"])
def test_invalid_headers(header):
    # A bad bit rate or sample rate, the reserved version or layer, no sync, too short.
    assert parse_header(header, 0) is None


@pytest.mark.parametrize("rate", [8000, 11025, 16000, 22050, 44100, 48000])
@pytest.mark.parametrize("channels", [1, 2])
def test_libsndfiles_own_mp3s_are_clean(rate, channels):
    signal = 0.3 * np.sin(2 * np.pi * 440 * np.arange(rate * 2) / rate)
    buffer = io.BytesIO()
    soundfile.write(buffer, np.stack([signal] * channels, 1), rate, format="MP3")
    data = buffer.getvalue()
    assert mp3_damage(data, soundfile.info(io.BytesIO(data)).frames) is None


def test_no_frames_is_left_to_libsndfile():
    assert mp3_damage(b"not an mp3 at all", 100) is None
