"""Transmission channels: band limits, G.711 companding, linear quantisation and MP3 keep length and
speech level, and add the distortion they should."""

import numpy as np
import pytest

from asrkit.augment import channel
from asrkit.augment.noisifier import Noisifier
from asrkit.augment.styles import parse_style_config
from asrkit.errors import AudioError

RATE = 8000


def tone(frequency, seconds=1.0, amplitude=0.3):
    time = np.arange(int(RATE * seconds)) / RATE
    return (amplitude * np.sin(2 * np.pi * frequency * time)).astype(np.float32)


def snr_db(clean, processed):
    error = processed - clean
    return 10 * np.log10(np.mean(clean ** 2) / np.mean(error ** 2))


def test_bandpass_passes_the_telephone_band_and_stops_the_rest():
    def gain(frequency):
        out = channel.bandpass(tone(frequency), RATE, 300, 3400)
        return np.sqrt(np.mean(out[2000:] ** 2) / np.mean(tone(frequency)[2000:] ** 2))

    assert gain(1000) == pytest.approx(1.0, abs=0.05)
    assert gain(100) < 0.1 and gain(3900) < 0.2
    with pytest.raises(ValueError, match="0 < low < high"):
        channel.bandpass(tone(1000), RATE, 3500, 3000)


@pytest.mark.parametrize("codec", [channel.mulaw, channel.alaw])
def test_g711_keeps_about_38_db_snr_at_any_level(codec):
    # Logarithmic companding: the SNR hardly depends on the level, unlike 8-bit linear PCM.
    for amplitude in (0.5, 0.02):
        clean = tone(440, amplitude=amplitude)
        assert 30 < snr_db(clean, codec(clean)) < 45
    quiet = tone(440, amplitude=0.02)
    assert snr_db(quiet, channel.quantize(quiet, 8)) < 25


def test_quantize_has_the_levels_of_its_bits():
    out = channel.quantize(tone(440), 4)
    assert len(np.unique(out)) <= 16 and out.dtype == np.float32
    assert snr_db(tone(440), out) == pytest.approx(6.02 * 4 - 10.5 + 1.76, abs=3)


def test_mp3_round_trip_keeps_length_and_most_of_the_signal():
    clean = tone(440, seconds=2.0)
    out = channel.mp3(clean, RATE, 0.9)
    assert out.shape == clean.shape and out.dtype == np.float32
    assert np.sqrt(np.mean(out[4000:-4000] ** 2)) == pytest.approx(0.3 / np.sqrt(2), rel=0.2)


@pytest.mark.parametrize("level", [0.99998, 1.0])
def test_mp3_at_the_top_of_the_range_is_the_smallest_stream_libsndfile_encodes(level):
    # libsndfile refuses levels above 0.9999; a style drawn from [0.6, 1.0] once killed a server.
    clean = tone(440, seconds=1.0)
    assert np.array_equal(channel.mp3(clean, RATE, level), channel.mp3(clean, RATE, channel.MP3_MAX_COMPRESSION_LEVEL))


def test_mp3_that_libsndfile_cannot_encode_is_an_audio_error():
    with pytest.raises(AudioError, match="MP3 channel at 1000 Hz, compression level 0.5"):
        channel.mp3(tone(100, seconds=0.5), 1000, 0.5)


def test_noisifier_applies_the_channel_after_the_noise_and_records_it():
    config = parse_style_config({"styles": [{"name": "phone", "noise": {"type": "white", "snr_db": 30},
                                             "channel": [{"type": "bandpass", "low_hz": 300, "high_hz": 3400},
                                                         {"type": "mulaw"}, {"type": "quantize", "bits": [6, 8]}]}]})
    out, params = Noisifier(config, seed=3).apply(tone(440, 2.0), "utt1", sample_rate=RATE)
    assert out.shape == (2 * RATE,)
    assert params["bandpass_hz"] == [300.0, 3400.0] and params["mulaw"] is True
    assert 6 <= params["quantize_bits"] <= 8
    again, _ = Noisifier(config, seed=3).apply(tone(440, 2.0), "utt1", sample_rate=RATE)
    assert np.array_equal(out, again)
