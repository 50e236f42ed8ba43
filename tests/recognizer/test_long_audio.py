"""Long recordings: read a block at a time, resampled as they come, cut at pauses into segments recognised as
utterances."""

import numpy as np
import pytest
import soundfile

from asrkit.recognizer.long_audio import recording_pieces, recording_seconds
from asrkit.recognizer.recognizer import Recognizer
from asrkit.recognizer.resample import resample
from asrkit.recognizer.stream import default_endpoint, default_final_pass
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


def test_segments_cover_the_recording_and_each_is_recognised_as_an_utterance(package_dir, tmp_path):  # noqa: F811
    audio = np.concatenate([speech_like(2.0, 8000, seed=1), np.zeros(12000, np.float32),
                            speech_like(2.5, 8000, seed=2), np.zeros(8000, np.float32),
                            speech_like(1.0, 8000, seed=3)])
    path = str(tmp_path / "talk.wav")
    soundfile.write(path, audio, 8000, subtype="FLOAT")
    recognizer = Recognizer(package_dir)
    endpoint = default_endpoint(default_final_pass(recognizer), recognizer.package.frame_shift_s, 1.5)
    read = []
    results = list(recognizer.segments(path, endpoint, on_piece=read.append))
    assert sum(read) == len(audio) and len(read) >= 7
    assert len(results) >= 4 and all(result.is_final for result in results)  # rule 5 at 1.5 s, in 7 s
    assert results[0].start == 0.0 and results[-1].end == pytest.approx(len(audio) / 8000)
    assert all(after.start == pytest.approx(before.end, abs=1e-6) for before, after in zip(results, results[1:]))
    if default_final_pass(recognizer) == "batch":
        for result in results:
            segment = audio[round(result.start * 8000):round(result.end * 8000)]
            assert result.text == recognizer.transcribe(segment, sample_rate=8000).text
    words = [word for result in results for word in result.words]
    assert all(result.start <= word.start <= word.end <= result.end + 1e-6 for result in results
               for word in result.words) and len(words) == sum(len(result.text.split()) for result in results)
