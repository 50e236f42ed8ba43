"""A recognizer adapted to the speaker of a session: the first pass's lattices fit LHUC amplitudes, folded into the
package's weights, and the second pass runs the same NumPy networks with them."""

import os

import numpy as np
import pytest
import soundfile

from asrkit.errors import AsrkitError
from asrkit.frontend.cmvn import CmvnStats, Moments
from asrkit.inference.frontend import features
from asrkit.recognizer.acoustic import AcousticStream
from asrkit.recognizer.adaptation import SessionOptions
from asrkit.recognizer.package import write_package
from asrkit.recognizer.recognizer import Recognizer
from tests.conftest import speech_like
from tests.recognizer.conftest import assert_same_rows

COMBINATION = {"weight": 0.4, "model_scale": 0.5, "combine_scale": 1.5, "combine_prior_scale": 0.0}


def _recordings(count=3, seconds=2.0):
    return [speech_like(seconds, 8000, seed=20 + index, f0=180.0).astype(np.float32) for index in range(count)]


def test_a_session_fits_the_speaker_and_scales_only_what_the_hidden_units_feed(package_dir):
    recognizer = Recognizer(package_dir)
    session = recognizer.session(SessionOptions(min_frames=20, iterations=5))
    recordings = _recordings()
    first = [session.add(samples, details=False) for samples in recordings]
    adapted = session.adapt()
    assert adapted is not recognizer and len(session.losses) == 1
    before, after = session.losses[0]
    assert after < before
    base, folded = recognizer.package.weights, adapted.package.weights
    assert sorted(base) == sorted(folded)
    # LHUC scales the rows of the kernels that read a hidden layer's outputs, nothing else.
    reading = {"blstm2/forward/kernel", "blstm2/backward/kernel", "softmax/kernel"}
    for name in sorted(set(base) - reading):
        np.testing.assert_array_equal(folded[name], base[name], err_msg=name)
    scales = {name: folded[name].sum(axis=1) / base[name].sum(axis=1) for name in reading}
    for name in reading:
        np.testing.assert_allclose(folded[name], base[name] * scales[name][:, None], rtol=1e-4, atol=1e-6)
        assert np.all((scales[name] > 0) & (scales[name] < 2)) and not np.allclose(scales[name], 1.0)
    np.testing.assert_allclose(scales["blstm2/forward/kernel"], scales["blstm2/backward/kernel"], rtol=1e-4)
    # The second pass is the adapted recognizer's transcription; the original recognizer is left as it was.
    second = session.results(details=False)
    assert [result.text for result in second] == [adapted.transcribe(samples, details=False).text
                                                  for samples in recordings]
    assert [result.text for result in first] == [recognizer.transcribe(samples, details=False).text
                                                 for samples in recordings]
    assert recognizer.package.weights is base


def test_a_combination_fits_its_own_network_and_both_when_told(model_dirs, toy_task, tmp_path):
    path = str(tmp_path / "combined")
    write_package(model_dirs["wblstm"], toy_task["graph"], path, {"lm_weight": 1.0, "prior_scale": 0.5,
                                                                  "combination": COMBINATION}, model_dirs["lstm"])
    recognizer = Recognizer(path)
    recordings = _recordings(2)

    def adapted(networks):
        session = recognizer.session(SessionOptions(min_frames=20, iterations=5, learning_rate=0.02,
                                                    method="lhuc+input", networks=networks))
        for samples in recordings:
            session.add(samples, details=False)
        return session, session.adapt()

    session, first = adapted("first")
    assert len(session.losses) == 1 and session.losses[0][1] < session.losses[0][0]
    assert first.package.combined["weights"] is recognizer.package.combined["weights"]
    assert not np.array_equal(first.package.weights["softmax/kernel"], recognizer.package.weights["softmax/kernel"])
    session, both = adapted("all")
    assert len(session.losses) == 2 and all(after < before for before, after in session.losses)
    for name in ("lstm1/kernel", "lstm2/kernel", "softmax/kernel"):  # the input transform reaches lstm1's
        assert not np.array_equal(both.package.combined["weights"][name],
                                  recognizer.package.combined["weights"][name]), name
    np.testing.assert_allclose(both.package.weights["softmax/kernel"], first.package.weights["softmax/kernel"],
                               rtol=1e-5)
    assert len(session.results()) == 2


def test_a_tdnnf_package_fits_its_top_layers_amplitudes_and_input_transform(model_dirs, toy_task, tmp_path):
    path = str(tmp_path / "tdnnf")
    write_package(model_dirs["tdnnf"], toy_task["graph"], path, {"lm_weight": 2.0, "prior_scale": 0.5})
    recognizer = Recognizer(path)
    session = recognizer.session(SessionOptions(min_frames=20, iterations=5, method="lhuc+input"))
    for samples in _recordings(2):
        session.add(samples, details=False)
    adapted = session.adapt()
    assert session.losses[0][1] < session.losses[0][0]
    base, folded = recognizer.package.weights, adapted.package.weights
    # The prefinal and softmax kernels read the adapted outputs (rows scaled), tdnn1's the input (transformed);
    # the TDNN-F layers, whose outputs also pass through the bypass, are left as they are.
    changed = {name for name in base if not np.array_equal(folded[name], base[name])}
    assert changed == {"tdnn1/kernel", "prefinal/kernel", "softmax/kernel"}
    for name in ("prefinal/kernel", "softmax/kernel"):
        scales = folded[name].sum(axis=1) / base[name].sum(axis=1)
        np.testing.assert_allclose(folded[name], base[name] * scales[:, None], rtol=1e-4, atol=1e-6)


def test_too_little_speech_leaves_the_recognizer_as_it_is(package_dir):
    recognizer = Recognizer(package_dir)
    session = recognizer.session(SessionOptions(min_frames=10 ** 6))
    session.add(_recordings(1)[0])
    assert session.adapt() is recognizer and session.losses == []
    with pytest.raises(Exception, match="method must be one of"):
        bad = recognizer.session(SessionOptions(method="fmllr", min_frames=1))
        bad.add(_recordings(1)[0])
        bad.adapt()
    with pytest.raises(Exception, match="networks adapted must be one of"):
        bad = recognizer.session(SessionOptions(networks="second", min_frames=1))
        bad.add(_recordings(1)[0])
        bad.adapt()


def test_a_session_hears_a_speaker_cmvn_model_with_the_speaker_s_own_statistics(speaker_cmvn_package):
    recognizer = Recognizer(speaker_cmvn_package)
    recordings = _recordings()
    session = recognizer.session(SessionOptions(min_frames=20, iterations=5))
    for samples in recordings:
        session.add(samples, details=False)
    online = [recording.inputs for recording in session._recordings]
    adapted = session.adapt()
    # Training's normalisation (asrkit.frontend.cmvn) with the speaker's moments over all of the recordings.
    stats = CmvnStats.read(os.path.join(speaker_cmvn_package, "..", "model", "cmvn.h5"))
    frames = [features(recognizer.package.feature_config, samples) for samples in recordings]
    speaker = Moments.of(np.concatenate(frames))
    for recording, utterance, before in zip(session._recordings, frames, online):
        np.testing.assert_allclose(recording.inputs, stats.normalize(utterance, speaker), rtol=1e-5, atol=1e-5)
        assert not np.allclose(recording.inputs, before, atol=1e-3)  # the package alone: online CMN
    # The second pass is the adapted networks on those inputs; the adapted recognizer hears a recording of the
    # speaker the same way, in batch and streaming, and the recognizer it came from still hears online CMN.
    second = session.results(details=False)
    for result, recording in zip(second, session._recordings):
        loglikes = adapted.acoustic.network.log_posteriors(recording.inputs) - adapted.acoustic.log_priors
        assert result.text == adapted.result(loglikes, details=False).text
    np.testing.assert_allclose(adapted.acoustic.network_input(recordings[0]), session._recordings[0].inputs,
                               rtol=1e-6)
    stream = AcousticStream(adapted.package)
    streamed = np.concatenate([stream.accept(recordings[0][:5000]), stream.accept(recordings[0][5000:]),
                               stream.finish()])
    assert_same_rows(streamed, adapted.acoustic.log_likelihoods(recordings[0]))
    np.testing.assert_array_equal(recognizer.acoustic.network_input(recordings[0]), online[0])
    # Too little speech to fit: the speaker's CMVN alone; without speaker_cmvn the inputs stay online.
    alone = recognizer.session(SessionOptions(min_frames=10 ** 6))
    kept = recognizer.session(SessionOptions(min_frames=10 ** 6, speaker_cmvn=False))
    for samples in recordings:
        alone.add(samples, details=False)
        kept.add(samples, details=False)
    normalized = alone.adapt()
    assert kept.adapt() is recognizer and normalized is not recognizer and alone.losses == []
    assert normalized.package.weights is recognizer.package.weights
    np.testing.assert_allclose(alone._recordings[0].inputs, session._recordings[0].inputs, rtol=1e-6)
    np.testing.assert_allclose(normalized.acoustic.network_input(recordings[0]), alone._recordings[0].inputs,
                               rtol=1e-6)
    np.testing.assert_array_equal(kept._recordings[0].inputs, online[0])
    assert kept.speaker_statistics is None and alone.speaker_statistics is not None


def test_a_long_recording_is_added_as_the_segments_its_pauses_cut_it_into(package_dir, tmp_path):
    recognizer = Recognizer(package_dir)
    audio = np.concatenate([speech_like(2.0, 8000, seed=41, f0=180.0), np.zeros(16000, np.float32),
                            speech_like(2.5, 8000, seed=42, f0=180.0)])
    path = str(tmp_path / "talk.wav")
    soundfile.write(path, audio, 8000, subtype="PCM_16")
    session = recognizer.session(SessionOptions(min_frames=20, iterations=3))
    first = session.add_long(path, 2.0, details=False)
    segments = list(recognizer.segments(path, 2.0, details=False))
    assert len(first) == len(segments) >= 3
    assert [(r.start, r.end, r.text) for r in first] == [(r.start, r.end, r.text) for r in segments]
    second = session.results(details=False)
    assert [(r.start, r.end) for r in second] == [(r.start, r.end) for r in segments]
    assert session.losses and session.frames > 20
    # A recording that cannot be read to its end (its header promises more samples) leaves the session as it was.
    truncated = tmp_path / "truncated.wav"
    truncated.write_bytes(open(path, "rb").read()[:-4000])
    with pytest.raises(AsrkitError, match="truncated.wav"):
        session.add_long(str(truncated), 2.0)
    assert [(r.start, r.end) for r in session.results(details=False)] == [(r.start, r.end) for r in segments]
