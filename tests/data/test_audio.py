import io
import logging
import os
import shutil

import numpy as np
import pytest
import soundfile

from asrkit.data import audio
from asrkit.data.audio import AudioOptions, load_recording, load_utterance_audio, to_pcm16
from asrkit.data.data_dir import DataDir
from asrkit.data.kaldi_files import Segment
from asrkit.errors import AsrkitError, AudioError

needs_sox = pytest.mark.skipif(shutil.which("sox") is None, reason="sox is not installed")


def peak_frequency(samples, sample_rate):
    spectrum = np.abs(np.fft.rfft(samples * np.hanning(len(samples))))
    return np.argmax(spectrum) * sample_rate / len(samples)


def test_reads_16bit_wav_as_float32_mono(tmp_path, tone, write_wav):
    samples = tone(440.0, 0.5)
    path = write_wav(tmp_path / "a.wav", samples)
    loaded = load_recording(path, AudioOptions())
    assert loaded.dtype == np.float32 and loaded.ndim == 1 and loaded.shape == (8000,)
    np.testing.assert_allclose(loaded, samples, atol=1.0 / 32768)
    assert loaded.min() >= -1.0 and loaded.max() < 1.0


def test_reads_flac(tmp_path, tone):
    path = os.fspath(tmp_path / "a.flac")
    soundfile.write(path, tone(300.0, 0.25), 16000, subtype="PCM_16")
    assert load_recording(path).shape == (4000,)


def test_a_flac_whose_frames_do_not_decode_is_an_audio_error(tmp_path, tone):
    path = tmp_path / "cut.flac"
    soundfile.write(path, tone(300.0, 2.0), 16000, format="FLAC")
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])  # the header reads, the frames lose sync
    with pytest.raises(AudioError, match="cut.flac.*cannot be decoded .*damaged or cut off"):
        load_recording(str(path), AudioOptions())


def test_truncated_wav_is_refused_with_sizes(tmp_path, tone, write_wav):
    path = write_wav(tmp_path / "cut.wav", tone(440.0, 1.0))
    with open(path, "rb") as handle:
        data = handle.read()
    with open(path, "wb") as handle:
        handle.write(data[:20000])  # 44-byte header + 32000 data bytes promised
    with pytest.raises(AudioError) as caught:
        load_recording(path, utterance_id="spk-1")
    message = str(caught.value)
    assert message.startswith(f"utterance spk-1, file {path}: truncated WAV")
    assert "32000 bytes" in message and f"only {20000 - 44} follow" in message


def test_truncation_found_after_extra_chunks(tmp_path, tone):
    # A LIST chunk before the data chunk moves the data offset; the parser must follow the chunks.
    path = os.fspath(tmp_path / "list.wav")
    with soundfile.SoundFile(path, "w", 16000, 1, "PCM_16") as handle:
        handle.title = "a title long enough to make a LIST chunk"
        handle.write(tone(440.0, 0.5))
    full_size = os.path.getsize(path)
    assert load_recording(path).shape == (8000,)
    with open(path, "r+b") as handle:
        handle.truncate(full_size - 100)
    with pytest.raises(AudioError, match="truncated WAV"):
        load_recording(path)



def _mp3(path, samples):
    """An MP3 as libsndfile writes it (LAME, with a Xing/Info header that gives its length)."""
    soundfile.write(os.fspath(path), samples, 16000, format="MP3")
    with open(path, "rb") as handle:
        return handle.read()


def _mp3_frame_starts(data):
    """Offsets of the frames of an MPEG-2 layer III stream at 16 kHz (as _mp3 writes it): each header's
    bitrate and padding give its length (ISO/IEC 13818-3)."""
    bitrates_kbps = [0, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160]
    starts, offset = [], 0
    while offset + 4 <= len(data) and data[offset] == 0xFF and data[offset + 1] & 0xE0 == 0xE0:
        starts.append(offset)
        offset += 72_000 * bitrates_kbps[data[offset + 2] >> 4] // 16000 + (data[offset + 2] >> 1 & 1)
    assert len(starts) > 10
    return starts


def test_truncated_or_damaged_mp3_is_refused_not_read_short(tmp_path, tone):
    data = _mp3(tmp_path / "a.mp3", tone(440.0, 3.0))
    assert load_recording(os.fspath(tmp_path / "a.mp3")).shape == (48000,)
    cut = tmp_path / "cut.mp3"
    cut.write_bytes(data[:int(len(data) * 0.3)])
    with pytest.raises(AudioError, match=r"file .*cut.mp3: the MP3 is damaged or truncated: .* the file is truncated"):
        load_recording(os.fspath(cut), utterance_id="spk-1")
    # The header of a frame in the middle flipped: libmpg123 skips what it cannot decode.
    flipped = bytearray(data)
    middle = _mp3_frame_starts(data)[len(_mp3_frame_starts(data)) // 2]
    flipped[middle + 1] ^= 0xFF
    (tmp_path / "flipped.mp3").write_bytes(bytes(flipped))
    with pytest.raises(AudioError, match=f"damaged or truncated: no MPEG frame header at byte {middle}"):
        load_recording(os.fspath(tmp_path / "flipped.mp3"))
    # A segment that reaches past what a cut-off MP3 decodes is refused the same way.
    data_dir = DataDir(path=os.fspath(tmp_path), wav_scp={"rec": os.fspath(cut)},
                       segments={"u1": Segment("rec", 0.25, 1.25)})
    with pytest.raises(AudioError, match="utterance u1, file .*cut.mp3: the MP3 is damaged or truncated"):
        load_utterance_audio(data_dir, "u1")


def _lame_tag_offset(data):
    from asrkit.data.mp3_check import _first_frame, _lame_tag, parse_header

    first = _first_frame(data)
    return _lame_tag(data, first, parse_header(data, first))


def _flipped(data, offset, bit=0):
    damaged = bytearray(data)
    damaged[offset] ^= 1 << bit
    return bytes(damaged)


# What libmpg123 decodes past without an error, and how each is named (the bytes of _mp3's file: LAME's tag in
# its first frame, frames from the second on).
MP3_DAMAGES = {
    "the Xing tag's name": (lambda data, starts, lame: _flipped(data, data.index(b"Xing") + 2),
                            r"its header gives \d+ samples but its frames hold about \d+"),
    "the encoder delay": (lambda data, starts, lame: _flipped(data, lame + 22, 4),
                          "the CRC of its LAME tag .* does not match"),
    "the frame count": (lambda data, starts, lame: _flipped(data, data.index(b"Xing") + 11, 1),
                        "the CRC of its LAME tag .* does not match"),
    "audio data": (lambda data, starts, lame: _flipped(data, starts[len(starts) // 2] + 20, 3),
                   "its audio frames do not match the CRC its LAME tag records"),
    "the last bytes": (lambda data, starts, lame: data[:-1], "its last MPEG frame .* is cut off"),
    "the tag frame, on a VBR file": (lambda data, starts, lame: data[starts[1]:],
                                     r"its header gives \d+ samples but its frames hold about \d+"),
}


@pytest.mark.parametrize("damage", sorted(MP3_DAMAGES))
def test_mp3_damage_the_decoder_passes_over_is_named(tmp_path, tone, damage):
    data = _mp3(tmp_path / "a.mp3", tone(440.0, 3.0) * np.linspace(0.1, 1.0, 48000, dtype=np.float32))
    make, message = MP3_DAMAGES[damage]
    path = tmp_path / "damaged.mp3"
    path.write_bytes(make(data, _mp3_frame_starts(data), _lame_tag_offset(data)))
    with soundfile.SoundFile(path) as handle:
        handle.read(handle.frames)  # libsndfile reads it without an error
    with pytest.raises(AudioError, match=f"damaged.mp3: the MP3 is damaged or truncated: {message}"):
        load_recording(os.fspath(path))
    with pytest.raises(AudioError, match=message):  # the same bytes from a wav.scp command
        load_recording(f"cat {path} |")


def test_an_mp3_with_id3_tags_and_zero_padding_reads_whole(tmp_path, tone):
    data = _mp3(tmp_path / "a.mp3", tone(440.0, 3.0))
    id3v2 = b"ID3\x03\x00\x00\x00\x00\x00\x0a" + b"\x00" * 10
    (tmp_path / "tagged.mp3").write_bytes(id3v2 + data + b"\x00" * 100 + b"TAG" + b"x" * 125)
    assert load_recording(os.fspath(tmp_path / "tagged.mp3")).shape == (48000,)


def test_only_an_mp3_without_a_length_tag_may_fall_short_of_its_header(tmp_path, tone, write_wav):
    # Without its first frame (LAME's Xing or Info tag) an MP3's length is libsndfile's estimate, which whole
    # files fall a little short of (egs/voiceover's by 0.40-0.48%; its tiny recipe test reads such files).
    data = _mp3(tmp_path / "tagged.mp3", tone(440.0, 3.0))
    starts = _mp3_frame_starts(data)
    assert b"Xing" in data[:starts[1]] or b"Info" in data[:starts[1]]
    (tmp_path / "untagged.mp3").write_bytes(data[starts[1]:])
    wav = write_wav(tmp_path / "a.wav", tone(440.0, 1.0))
    tolerances = {}
    for name in ("tagged.mp3", "untagged.mp3", wav):
        with soundfile.SoundFile(os.fspath(tmp_path / name)) as handle:
            tolerances[os.path.basename(name)] = audio._length_tolerance(handle)
    with soundfile.SoundFile(io.BytesIO(data[starts[1]:])) as handle:
        tolerances["piped"] = audio._length_tolerance(handle)
    assert tolerances == {"tagged.mp3": 0.0, "untagged.mp3": audio.ESTIMATED_LENGTH_TOLERANCE,
                          os.path.basename(wav): 0.0, "piped": audio.ESTIMATED_LENGTH_TOLERANCE}


def test_empty_file(tmp_path):
    path = tmp_path / "empty.wav"
    path.write_bytes(b"")
    with pytest.raises(AudioError) as caught:
        load_recording(os.fspath(path), utterance_id="u1")
    assert "utterance u1" in str(caught.value) and "empty (0 bytes)" in str(caught.value)


def test_header_without_samples(tmp_path, write_wav):
    path = write_wav(tmp_path / "zero.wav", np.zeros(0, dtype=np.float32))
    with pytest.raises(AudioError, match="no samples"):
        load_recording(path, utterance_id="u1")


def test_not_audio(tmp_path):
    path = tmp_path / "notes.wav"
    path.write_text("this is a transcript, not audio\n")
    with pytest.raises(AudioError) as caught:
        load_recording(os.fspath(path), utterance_id="u7")
    message = str(caught.value)
    assert f"utterance u7, file {path}" in message and "not audio that soundfile can read" in message


def test_missing_file(tmp_path):
    with pytest.raises(AudioError, match="cannot read the file .*No such file"):
        load_recording(os.fspath(tmp_path / "nope.wav"), utterance_id="u1")


def test_wrong_rate_is_refused_naming_both_rates(tmp_path, tone, write_wav):
    path = write_wav(tmp_path / "8k.wav", tone(440.0, 1.0, 8000), 8000)
    with pytest.raises(AudioError) as caught:
        load_recording(path, AudioOptions(), utterance_id="u1")
    message = str(caught.value)
    assert "sample rate is 8000 Hz but 16000 Hz is expected" in message
    assert "sox" in message and "resample" in message


def test_wrong_rate_is_resampled_keeping_frequency(tmp_path, tone, write_wav, caplog):
    path = write_wav(tmp_path / "8k.wav", tone(440.0, 1.0, 8000), 8000)
    audio._logged_resampling.clear()
    with caplog.at_level(logging.INFO, logger="asrkit.data.audio"):
        loaded = load_recording(path, AudioOptions(on_rate_mismatch="resample"))
    assert loaded.dtype == np.float32 and loaded.shape == (16000,)
    assert peak_frequency(loaded, 16000) == pytest.approx(440.0, abs=2.0)
    # Amplitude survives too (no gain error from the up/down factors).
    assert np.abs(loaded[2000:14000]).max() == pytest.approx(0.5, abs=0.02)
    assert "scipy.signal.resample_poly" in caplog.text


def test_downsampling_44100(tmp_path, tone, write_wav):
    path = write_wav(tmp_path / "44k.wav", tone(1000.0, 0.5, 44100), 44100)
    loaded = load_recording(path, AudioOptions(on_rate_mismatch="resample"))
    assert loaded.shape == (8000,)
    assert peak_frequency(loaded, 16000) == pytest.approx(1000.0, abs=2.0)


def stereo_file(tmp_path, tone, write_wav):
    left, right = tone(300.0, 0.5), tone(1200.0, 0.5)
    return write_wav(tmp_path / "stereo.wav", np.stack([left, right], axis=1))


def test_stereo_is_refused_by_default(tmp_path, tone, write_wav):
    path = stereo_file(tmp_path, tone, write_wav)
    with pytest.raises(AudioError) as caught:
        load_recording(path, utterance_id="u1")
    message = str(caught.value)
    assert "utterance u1" in message and "2 channels but mono is expected" in message
    assert "--channel" in message


def test_channel_pick(tmp_path, tone, write_wav):
    path = stereo_file(tmp_path, tone, write_wav)
    right = load_recording(path, AudioOptions(channel=1))
    assert right.ndim == 1 and right.flags["C_CONTIGUOUS"]
    assert peak_frequency(right, 16000) == pytest.approx(1200.0, abs=4.0)
    left = load_recording(path, AudioOptions(channel=0))
    assert peak_frequency(left, 16000) == pytest.approx(300.0, abs=4.0)


def test_channel_out_of_range(tmp_path, tone, write_wav):
    path = stereo_file(tmp_path, tone, write_wav)
    with pytest.raises(AudioError, match=r"channel 2 was asked for but the audio has 2 channel\(s\)"):
        load_recording(path, AudioOptions(channel=2), utterance_id="u1")


def test_8bit_is_refused_unless_allowed(tmp_path, tone, write_wav):
    path = write_wav(tmp_path / "8bit.wav", tone(440.0, 0.25), subtype="PCM_U8")
    with pytest.raises(AudioError) as caught:
        load_recording(path, utterance_id="u1")
    message = str(caught.value)
    assert "8-bit PCM" in message and "quantisation noise" in message
    assert "sox in.wav -b 16 out.wav" in message
    loaded = load_recording(path, AudioOptions(allow_8bit=True))
    assert loaded.shape == (4000,)
    assert peak_frequency(loaded, 16000) == pytest.approx(440.0, abs=4.0)


def test_raw_pcm_by_extension_and_by_option(tmp_path, tone):
    samples = (tone(500.0, 0.25) * 32767).astype("<i2")
    raw = tmp_path / "a.raw"
    raw.write_bytes(samples.tobytes())
    loaded = load_recording(os.fspath(raw))
    np.testing.assert_allclose(loaded, samples / 32768.0, atol=1e-6)
    other_name = tmp_path / "a.bin"
    other_name.write_bytes(samples.tobytes())
    with pytest.raises(AudioError):  # no extension hint, no option: not readable audio
        load_recording(os.fspath(other_name))
    assert load_recording(os.fspath(other_name), AudioOptions(raw_format="PCM_16")).shape == (4000,)


def test_raw_pcm_with_partial_sample(tmp_path):
    raw = tmp_path / "odd.pcm"
    raw.write_bytes(b"\x00\x01\x02")
    with pytest.raises(AudioError, match="3 bytes, not a whole number of 2-byte samples"):
        load_recording(os.fspath(raw), utterance_id="u1")


def test_bad_options():
    with pytest.raises(AsrkitError, match="on_rate_mismatch"):
        AudioOptions(on_rate_mismatch="ignore")
    with pytest.raises(AsrkitError, match="channel"):
        AudioOptions(channel=-2)
    with pytest.raises(AsrkitError, match="raw_format"):
        AudioOptions(raw_format="MP3")


# --- `command |` entries ---------------------------------------------------------------------

def test_cat_pipe(tmp_path, tone, write_wav):
    path = write_wav(tmp_path / "a.wav", tone(440.0, 0.5))
    loaded = load_recording(f"cat {path} |")
    np.testing.assert_array_equal(loaded, load_recording(path))


@needs_sox
def test_sox_pipe(tmp_path, tone, write_wav):
    path = write_wav(tmp_path / "a.wav", tone(440.0, 0.5, 8000), 8000)
    loaded = load_recording(f"sox {path} -t wav -r 16000 - |")
    assert loaded.shape == (8000,)
    assert peak_frequency(loaded, 16000) == pytest.approx(440.0, abs=4.0)


@needs_sox
def test_pipe_with_unknown_length_header_is_not_truncation():
    # sox cannot seek back on a pipe, so it writes a sentinel data size.
    loaded = load_recording("sox -n -r 16000 -b 16 -t wav - synth 0.5 sine 440 |")
    assert loaded.shape == (8000,)


def test_truncated_wav_through_pipe(tmp_path, tone, write_wav):
    path = write_wav(tmp_path / "a.wav", tone(440.0, 1.0))
    with pytest.raises(AudioError, match="truncated WAV"):
        load_recording(f"head -c 5000 {path} |", utterance_id="u1")


def test_failing_pipe_reports_status_and_stderr(tmp_path):
    missing = tmp_path / "missing.wav"
    with pytest.raises(AudioError) as caught:
        load_recording(f"cat {missing} |", utterance_id="u3")
    error = caught.value
    assert error.utterance_id == "u3" and error.source == f"cat {missing}"
    assert "exited with status 1" in str(error) and "No such file or directory" in str(error)


def test_pipe_with_no_output():
    with pytest.raises(AudioError, match="wrote no audio to stdout"):
        load_recording("true |", utterance_id="u1")


# --- utterances of a data dir ------------------------------------------------------------------

def segmented_data_dir(tmp_path, tone, write_wav, segments):
    # 2 s recording: 0.5 s of 200 Hz then 1.5 s of 1000 Hz.
    samples = np.concatenate([tone(200.0, 0.5), tone(1000.0, 1.5)])
    path = write_wav(tmp_path / "rec.wav", samples)
    return DataDir(path=os.fspath(tmp_path), wav_scp={"rec": path}, segments=segments), samples


def test_segment_is_cut_from_recording(tmp_path, tone, write_wav):
    data_dir, samples = segmented_data_dir(tmp_path, tone, write_wav, {
        "u1": Segment("rec", 0.0, 0.5), "u2": Segment("rec", 0.75, 1.25), "u3": Segment("rec", 1.5, None)})
    first = load_utterance_audio(data_dir, "u1")
    np.testing.assert_allclose(first, samples[:8000], atol=1.0 / 32768)
    second = load_utterance_audio(data_dir, "u2")
    np.testing.assert_allclose(second, samples[12000:20000], atol=1.0 / 32768)
    assert peak_frequency(second, 16000) == pytest.approx(1000.0, abs=4.0)
    assert load_utterance_audio(data_dir, "u3").shape == (8000,)  # to the end (-1)


def test_segment_past_end_of_recording(tmp_path, tone, write_wav):
    data_dir, _ = segmented_data_dir(tmp_path, tone, write_wav, {"u1": Segment("rec", 1.5, 2.5)})
    with pytest.raises(AudioError) as caught:
        load_utterance_audio(data_dir, "u1")
    message = str(caught.value)
    assert message.startswith("utterance u1, file ") and "rec.wav" in message
    assert "ends past the end of recording 'rec' (2.000 s)" in message


def test_segment_end_rounded_up_by_a_few_ms_is_accepted(tmp_path, tone, write_wav):
    data_dir, _ = segmented_data_dir(tmp_path, tone, write_wav, {"u1": Segment("rec", 1.0, 2.005)})
    assert load_utterance_audio(data_dir, "u1").shape == (16000,)


def test_segment_of_piped_recording(tmp_path, tone, write_wav):
    data_dir, samples = segmented_data_dir(tmp_path, tone, write_wav, {"u1": Segment("rec", 0.5, 1.0)})
    data_dir.wav_scp["rec"] = f"cat {data_dir.wav_scp['rec']} |"
    np.testing.assert_allclose(load_utterance_audio(data_dir, "u1"), samples[8000:16000],
                               atol=1.0 / 32768)


def test_unknown_utterance_and_recording(tmp_path, tone, write_wav):
    data_dir, _ = segmented_data_dir(tmp_path, tone, write_wav, {"u1": Segment("other", 0.0, 1.0)})
    with pytest.raises(AudioError, match="not in segments"):
        load_utterance_audio(data_dir, "u9")
    with pytest.raises(AudioError, match="recording 'other' is not in wav.scp"):
        load_utterance_audio(data_dir, "u1")


def test_utterance_without_segments(small_data_dir):
    data_dir = DataDir.load(small_data_dir)
    assert load_utterance_audio(data_dir, "A-2").shape == (8000,)
    with pytest.raises(AudioError, match="utterance C-1, file .*wav.scp: not in wav.scp"):
        load_utterance_audio(data_dir, "C-1")


def _alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().split(")")[-1].split()[0] != "Z"  # a zombie is dead, only not yet reaped
    except FileNotFoundError:
        return False


def test_hanging_pipe_is_stopped_with_everything_it_started(tmp_path):
    import time

    pid_file = tmp_path / "child.pid"
    # The shell starts a child and waits for it: killing the shell alone would leave the child running.
    command = f"sleep 60 & echo $! > {pid_file}; wait |"
    started = time.monotonic()
    with pytest.raises(AudioError, match="did not finish within 0.5 s") as caught:
        load_recording(command, AudioOptions(pipe_timeout=0.5), utterance_id="u1")
    assert "u1" in str(caught.value) and time.monotonic() - started < 10
    child = int(pid_file.read_text())
    deadline = time.monotonic() + 5
    while _alive(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(child)
    with pytest.raises(AsrkitError, match="pipe_timeout must be positive"):
        AudioOptions(pipe_timeout=0)


def test_downsample_only_converts_higher_rates(tmp_path, tone, write_wav):
    high = write_wav(tmp_path / "11k.wav", tone(440.0, 1.0, 11025), 11025)
    low = write_wav(tmp_path / "6k.wav", tone(440.0, 1.0, 6000), 6000)
    options = AudioOptions(sample_rate=8000, on_rate_mismatch="downsample")
    loaded = load_recording(high, options)
    assert loaded.shape == (8000,)
    assert peak_frequency(loaded, 8000) == pytest.approx(440.0, abs=2.0)
    with pytest.raises(AudioError, match="sample rate is 6000 Hz but 8000 Hz.*only downsample is allowed"):
        load_recording(low, options, utterance_id="u1")
    upsampled = load_recording(low, AudioOptions(sample_rate=8000, on_rate_mismatch="upsample"))
    assert upsampled.shape == (8000,)
    with pytest.raises(AudioError, match="only upsample is allowed"):
        load_recording(high, AudioOptions(sample_rate=8000, on_rate_mismatch="upsample"))


def test_mp3_is_read_through_libsndfile(tmp_path, tone):
    # Game voice-overs (egs/voiceover) are MPEG layer III at 11025 Hz; libsndfile >= 1.1 decodes it.
    path = os.fspath(tmp_path / "tone.mp3")
    soundfile.write(path, tone(440.0, 1.0, 11025), 11025, format="MP3", subtype="MPEG_LAYER_III")
    loaded = load_recording(path, AudioOptions(sample_rate=8000, on_rate_mismatch="downsample"))
    # MP3 adds encoder delay and padding: about a second, at the peak frequency.
    assert abs(loaded.shape[0] - 8000) < 1000
    assert peak_frequency(loaded, 8000) == pytest.approx(440.0, abs=4.0)


def test_pcm16_conversion_clips():
    assert to_pcm16(np.array([0.0, 1.5, -1.5, 0.5])).tolist() == [0, 32767, -32768, 16384]


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_float_samples_are_refused(tmp_path, tone, bad):
    samples = tone(440.0, 0.25).astype(np.float32)
    samples[1000:1003] = bad
    path = os.fspath(tmp_path / "float.wav")
    soundfile.write(path, samples, 16000, subtype="FLOAT")
    with pytest.raises(AudioError, match=r"3 samples are NaN or infinite \(the first at sample 1000") as caught:
        load_recording(path, utterance_id="spk-9")
    assert "spk-9" in str(caught.value) and "float.wav" in str(caught.value)


def segmented_pipe_dir(tmp_path, tone, write_wav, recordings=3, segments=6, broken=None):
    """A data dir of `recordings` wav.scp commands (each appends a line to runs.txt), `segments` segments each."""
    data = tmp_path / "segmented"
    data.mkdir()
    runs = tmp_path / "runs.txt"
    wav_lines, segment_lines, utt2spk = [], [], []
    for r in range(recordings):
        path = write_wav(tmp_path / f"rec{r}.wav", tone(200.0 + 100 * r, 0.25 * segments))
        command = "exit 3" if r == broken else f"cat {path}"
        wav_lines.append(f"rec{r} echo rec{r} >> {runs}; {command} |\n")
        for s in range(segments):
            utterance = f"rec{r}-{s:02d}"
            segment_lines.append(f"{utterance} rec{r} {0.25 * s:.2f} {0.25 * (s + 1):.2f}\n")
            utt2spk.append(f"{utterance} rec{r}\n")
    (data / "wav.scp").write_text("".join(wav_lines))
    (data / "segments").write_text("".join(segment_lines))
    (data / "utt2spk").write_text("".join(utt2spk))
    return DataDir.load(str(data)), runs


def test_each_recording_command_runs_once_for_its_segments(tmp_path, tone, write_wav):
    data, runs = segmented_pipe_dir(tmp_path, tone, write_wav)
    utterances = list(data.utterance_ids)
    reader = audio.UtteranceAudio(data, utterances)
    loaded = {utterance: reader(utterance) for utterance in utterances}
    assert runs.read_text().split() == ["rec0", "rec1", "rec2"] and reader.commands_run == 3
    assert not reader.outputs  # each recording dropped after its last segment
    runs.unlink()
    for utterance in utterances:  # the same samples as reading each segment on its own
        np.testing.assert_array_equal(loaded[utterance], load_utterance_audio(data, utterance))
        assert loaded[utterance].shape == (4000,)
    assert len(runs.read_text().split()) == 18


def test_a_failed_command_is_not_rerun_for_its_other_segments(tmp_path, tone, write_wav):
    data, runs = segmented_pipe_dir(tmp_path, tone, write_wav, recordings=2, segments=3, broken=1)
    reader = audio.UtteranceAudio(data, list(data.utterance_ids))
    reader("rec0-00")
    with pytest.raises(AudioError, match="utterance rec1-00.*status 3"):
        reader("rec1-00")
    with pytest.raises(AudioError, match="utterance rec1-01.*rec1' could not be read for an earlier segment"):
        reader("rec1-01")
    assert runs.read_text().split() == ["rec0", "rec1"]


def test_interleaved_segments_keep_at_most_max_kept_recordings(tmp_path, tone, write_wav):
    data, runs = segmented_pipe_dir(tmp_path, tone, write_wav, recordings=3, segments=2)
    interleaved = ["rec0-00", "rec1-00", "rec2-00", "rec0-01", "rec1-01", "rec2-01"]
    reader = audio.UtteranceAudio(data, interleaved, max_kept=2)
    for utterance in interleaved:
        reader(utterance)
        assert len(reader.outputs) <= 2
    assert reader.commands_run == 6 - 1  # rec2 was still kept when its second segment came
    assert audio.UtteranceAudio(data, interleaved).commands_run == 0


def test_blocks_of_a_recording_are_the_whole_read_a_piece_at_a_time(tmp_path, tone, write_wav):
    path = write_wav(tmp_path / "stereo.wav", np.stack([tone(300.0, 1.05), tone(1200.0, 1.05)], axis=1))
    blocks = list(audio.recording_blocks(path, 0.25, AudioOptions(channel=1)))
    assert [rate for rate, _ in blocks] == [16000] * 5 and [len(samples) for _, samples in blocks] == [4000] * 4 + [800]
    whole = load_recording(path, AudioOptions(channel=1))
    np.testing.assert_array_equal(np.concatenate([samples for _, samples in blocks]), whole)
    odd_rate = tmp_path / "odd.flac"
    soundfile.write(odd_rate, tone(300.0, 0.5), 11025, subtype="PCM_16")  # any rate: the caller resamples
    assert [rate for rate, _ in audio.recording_blocks(os.fspath(odd_rate), 1.0)] == [11025]


def test_blocks_of_a_damaged_recording_are_refused_as_the_whole_is(tmp_path, tone):
    cut = tmp_path / "cut.flac"
    soundfile.write(cut, tone(300.0, 2.0), 16000, format="FLAC")
    cut.write_bytes(cut.read_bytes()[: len(cut.read_bytes()) // 2])
    with pytest.raises(AudioError, match="cut.flac.*cannot be decoded .*damaged or cut off"):
        list(audio.recording_blocks(os.fspath(cut), 0.5))
    late_nan = np.zeros(16000, np.float32)
    late_nan[12000] = np.nan
    soundfile.write(tmp_path / "nan.wav", late_nan, 16000, subtype="FLOAT")
    with pytest.raises(AudioError, match=r"the first at sample 12000, 0.750 s"):  # counted from the file's start
        list(audio.recording_blocks(os.fspath(tmp_path / "nan.wav"), 0.5))
    (tmp_path / "empty.wav").write_bytes(b"")
    with pytest.raises(AudioError, match="empty.wav"):
        list(audio.recording_blocks(os.fspath(tmp_path / "empty.wav"), 0.5))
