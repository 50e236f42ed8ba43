"""Long recordings: read a block at a time, resampled as they come, cut at pauses into segments recognised as
utterances."""

import numpy as np
import pytest
import soundfile

from asrkit.inference.resample import resample
from asrkit.recognizer.long_audio import PauseCutter, first_pause, recording_pieces, recording_seconds
from asrkit.recognizer.recognizer import Recognizer
from tests.conftest import speech_like
from tests.recognizer.conftest import model_dirs, package_dir, toy_task  # noqa: F401 (fixtures)


def test_pieces_are_the_recording_resampled_whole(tmp_path):
    audio = speech_like(2.3, 11025, seed=4)
    path = str(tmp_path / "odd.wav")
    soundfile.write(path, audio, 11025, subtype="FLOAT")
    pieces = list(recording_pieces(path, 8000, block_seconds=0.3))
    assert len(pieces) > 7  # read in blocks, not whole
    np.testing.assert_allclose(np.concatenate(pieces), resample(audio.astype(np.float32), 11025, 8000), atol=1e-5)
    assert recording_seconds(path) == pytest.approx(2.3, abs=1e-4)
    assert recording_seconds("cat odd.wav |") is None and recording_seconds(str(tmp_path / "none.wav")) is None


def test_the_cutter_cuts_in_every_pause_and_at_the_quietest_moment_without_one():
    rate = 8000
    speech = [speech_like(seconds, rate, seed=seed) for seed, seconds in enumerate((4.0, 2.0, 9.0))]
    gap = np.zeros(int(0.4 * rate), np.float32)
    audio = np.concatenate([speech[0], gap, speech[1], gap, speech[2]])
    cutter = PauseCutter(rate, max_seconds=6.0)
    segments = [segment for start in range(0, len(audio), 3000) for segment in cutter.accept(audio[start:start + 3000])]
    segments += cutter.finish()
    starts = [first for first, _ in segments]
    np.testing.assert_array_equal(np.concatenate([samples for _, samples in segments]), audio)
    assert starts == [0] + list(np.cumsum([len(samples) for _, samples in segments[:-1]]))
    assert all(len(samples) <= 6.0 * rate for _, samples in segments)
    # speech_like begins with a tenth of digital silence, which lengthens each gap
    first_gap = (len(speech[0]), len(speech[0]) + len(gap) + len(speech[1]) // 10)
    second_end = len(speech[0]) + 2 * len(gap) + len(speech[1])
    second_gap = (second_end - len(gap), second_end + len(speech[2]) // 10)
    # both pauses cut, the 2-s phrase between them alone in its segment; the 9 s without a pause are cut too
    assert first_gap[0] < starts[1] < first_gap[1] and second_gap[0] < starts[2] < second_gap[1]
    assert len(segments) >= 4 and all(start > second_gap[1] for start in starts[3:])
    assert PauseCutter(rate, 6.0).accept(np.zeros(100, np.float32)) == []


def test_a_pause_is_long_enough_quiet_enough_and_late_enough():
    loud = np.ones(100)
    power = loud.copy()
    power[10:40] = 1e-4  # 40 dB down but its middle (25) before min_middle
    power[50:55] = 1e-4  # too short
    power[60:70] = 10 ** -2.5  # 25 dB down: speech, not a pause
    power[80:92] = 1e-4
    assert first_pause(power, run_frames=10, min_middle=30) == 86
    assert first_pause(power, run_frames=10, min_middle=20) == 25
    assert first_pause(power, run_frames=13, min_middle=30) is None
    assert first_pause(loud, run_frames=1, min_middle=0) is None


def test_segments_cover_the_recording_and_each_is_recognised_as_an_utterance(package_dir, tmp_path):  # noqa: F811
    audio = np.concatenate([speech_like(2.0, 8000, seed=1), np.zeros(12000, np.float32),
                            speech_like(2.5, 8000, seed=2), np.zeros(8000, np.float32),
                            speech_like(1.0, 8000, seed=3)])
    path = str(tmp_path / "talk.wav")
    soundfile.write(path, audio, 8000, subtype="FLOAT")
    recognizer = Recognizer(package_dir)
    read = []
    results = list(recognizer.segments(path, 2.5, on_piece=read.append))
    assert sum(read) == len(audio) and len(read) >= 7
    assert len(results) >= 3 and all(result.is_final for result in results)
    assert results[0].start == 0.0 and results[-1].end == pytest.approx(len(audio) / 8000)
    assert all(after.start == pytest.approx(before.end, abs=1e-6) for before, after in zip(results, results[1:]))
    for result in results:
        segment = audio[round(result.start * 8000):round(result.end * 8000)]
        alone = recognizer.transcribe(segment, sample_rate=8000)
        assert result.text == alone.text
        assert [word.start for word in result.words] == pytest.approx([result.start + word.start
                                                                       for word in alone.words], abs=1e-3)
