"""ExampleProducer: targets follow a speed-perturbed utterance; a foreign alignment is still refused."""

import json

import numpy as np
import pytest

from asrkit.example_servers.producer import ExampleProducer, SkipUtterance


def _styles(tmp_path, speed):
    path = tmp_path / "styles.json"
    path.write_text(json.dumps({"styles": [{"name": "fast", "speed": speed}]}))
    return str(path)


def test_speed_perturbed_examples_get_their_alignment_re_timed(audio_corpus, tmp_path):
    data_dir, ali_dir = audio_corpus
    plain = ExampleProducer(data_dir, ali_dir)
    for speed in (0.9, 1.1):
        producer = ExampleProducer(data_dir, ali_dir, styles_path=_styles(tmp_path, speed))
        producer.prepare_noisifier(producer.utterance_ids)
        for utterance_id in producer.utterance_ids[:3]:
            _, original, _ = plain.produce(utterance_id, 0)
            features, targets, style = producer.produce(utterance_id, 0)
            assert style == "fast" and len(targets) == len(features)
            assert abs(len(features) - len(original) / speed) <= 2
            # The labels come in the same order, each one's frames scaled by the speed.
            assert list(dict.fromkeys(targets.tolist())) == list(dict.fromkeys(original.tolist()))
            for label in np.unique(original):
                assert abs(np.sum(targets == label) - np.sum(original == label) / speed) <= 2

def test_an_alignment_of_another_length_is_skipped_at_any_speed(audio_corpus, tmp_path, monkeypatch):
    data_dir, ali_dir = audio_corpus
    producer = ExampleProducer(data_dir, ali_dir, styles_path=_styles(tmp_path, 1.1))
    producer.prepare_noisifier(producer.utterance_ids)
    utterance_id = producer.utterance_ids[0]
    alignments = producer._alignments
    short = np.asarray(alignments[utterance_id])[:-10]
    monkeypatch.setattr(producer, "_alignments", {utterance_id: short})
    with pytest.raises(SkipUtterance, match=r"at speed 1.1, but the features have"):
        producer.produce(utterance_id, 0)
    alignments.close()


def _by_hand(data_dir, utterance_id, features):
    """(features - the speaker's mean) / the within-speaker stddev, from the table and utt2spk in numpy."""
    import os

    from asrkit.io.table import TableReader

    utt2spk = dict(line.split() for line in open(os.path.join(data_dir, "utt2spk")))
    with TableReader(os.path.join(data_dir, "feats.scp")) as table:
        frames = {}
        for key, value in table.items():
            frames.setdefault(utt2spk[key], []).append(np.asarray(value, np.float64))
    frames = {speaker: np.concatenate(parts) for speaker, parts in frames.items()}
    within = np.concatenate([own - own.mean(axis=0) for own in frames.values()]).std(axis=0)
    return (features - frames[utt2spk[utterance_id]].mean(axis=0)) / within


@pytest.fixture
def speaker_corpus(featurized_corpus):
    return featurized_corpus({f"spk{s}-{u}": 0.5 + 0.1 * u for s in range(2) for u in range(3)}, 6, "speaker")


def test_speaker_cmvn_examples_from_audio_equal_the_tables(speaker_corpus):
    from asrkit.io.table import TableReader

    data_dir, ali_dir = speaker_corpus
    from_audio = ExampleProducer(data_dir, ali_dir)
    from_table = ExampleProducer(data_dir, ali_dir, from_feats=True)
    with TableReader(f"{data_dir}/feats.scp") as table:
        for utterance_id in from_audio.utterance_ids:
            features, _, _ = from_audio.produce(utterance_id, 0)
            expected = _by_hand(data_dir, utterance_id, np.asarray(table[utterance_id], np.float64))
            np.testing.assert_allclose(features, expected, atol=2e-3)
            np.testing.assert_allclose(from_table.produce(utterance_id, 0)[0], expected, atol=1e-4)


class _QuieterChannel:
    """A noisifier whose one style halves the amplitude: in log-mel, the same offset on every frame."""

    seed = 0

    def apply(self, samples, utterance_id, sample_rate):
        return samples * 0.5, {"style": "quieter"}


def test_noisified_examples_take_the_speakers_mean_in_the_noises_condition(speaker_corpus):
    data_dir, ali_dir = speaker_corpus
    clean = ExampleProducer(data_dir, ali_dir)
    quieter = ExampleProducer(data_dir, ali_dir)
    quieter.noisifier = _QuieterChannel()
    for utterance_id in clean.utterance_ids:
        expected, _, _ = clean.produce(utterance_id, 0)
        features, _, style = quieter.produce(utterance_id, 0)
        assert style == "quieter"
        # A speaker recorded through that channel at test time has its mean moved by the same offset, so
        # the normalised frames are the clean ones; the clean speaker mean would leave log(1/4) / stddev in.
        # (Up to the bins at the log floor, which no gain moves: a tenth of that offset here.)
        noisy, _, clean_features = quieter._features(utterance_id, 0)
        assert clean_features is not None
        stale = clean.cmvn.normalize(noisy, speaker=clean.normalize.speaker_moments(utterance_id))
        assert np.abs(stale - expected).mean() > 0.1
        assert np.abs(features - expected).mean() < 0.15 * np.abs(stale - expected).mean()


def _noise_styles(tmp_path):
    path = tmp_path / "noise.json"
    path.write_text(json.dumps({"styles": [{"name": "noisy", "noise": {"type": "white", "snr_db": [5, 5]}}]}))
    return str(path)


def test_examples_with_ivectors_equal_the_table_path_when_clean(audio_corpus, train_ivectors):
    from asrkit.frontend.cmvn import CmvnStats
    from asrkit.ivector.append import IvectorExamples, IvectorTable, OnlineIvectorAppender
    from asrkit.train.examples import TableExamples

    data_dir, ali_dir = audio_corpus
    _, ivector_dir = train_ivectors(data_dir)
    appender = OnlineIvectorAppender.from_dir(ivector_dir)
    from_feats = ExampleProducer(data_dir, ali_dir, from_feats=True, ivectors=appender)
    from_audio = ExampleProducer(data_dir, ali_dir, ivectors=appender)
    assert (from_feats.feature_dim, from_feats.input_dim, from_audio.input_dim) == (512, 515, 515)
    tables = IvectorExamples(TableExamples(f"{data_dir}/feats.scp", f"{ali_dir}/ali.scp", from_feats.utterance_ids,
                                           CmvnStats.read(f"{data_dir}/cmvn.h5")), IvectorTable(ivector_dir))
    for utterance_id in from_feats.utterance_ids[:4]:
        expected = tables.load(utterance_id).features
        np.testing.assert_allclose(from_feats.produce(utterance_id, 0)[0], expected, rtol=1e-5, atol=1e-5)
        # Featurized again from the audio, the features differ by rounding; the i-vectors follow them closely.
        np.testing.assert_allclose(from_audio.produce(utterance_id, 0)[0], expected, atol=2e-2)
    tables.close()


def test_noisified_examples_get_the_ivectors_of_the_noisy_features(audio_corpus, train_ivectors, tmp_path):
    from asrkit.ivector.append import OnlineIvectorAppender
    from asrkit.ivector.online import expand_to_frames, online_ivectors

    data_dir, ali_dir = audio_corpus
    _, ivector_dir = train_ivectors(data_dir)
    appender = OnlineIvectorAppender.from_dir(ivector_dir)
    clean = ExampleProducer(data_dir, ali_dir, ivectors=appender)
    noisy = ExampleProducer(data_dir, ali_dir, styles_path=_noise_styles(tmp_path), ivectors=appender)
    noisy.prepare_noisifier(noisy.utterance_ids)
    for utterance_id in noisy.utterance_ids[:2]:
        served, _, style = noisy.produce(utterance_id, 1)
        assert style == "noisy" and served.shape[1] == 515
        assert np.abs(served[:, 512:] - clean.produce(utterance_id, 1)[0][:, 512:]).max() > 1e-2
        # By hand: the noisy features of this epoch (the noisifier is seeded by it), their i-vectors.
        raw, _, _ = noisy._features(utterance_id, 1)
        ivectors, _ = online_ivectors(appender.extractor, raw, appender.options)
        np.testing.assert_allclose(served[:, 512:], expand_to_frames(ivectors, len(raw), 4), rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(served[:, :512], noisy.normalize(utterance_id, raw), rtol=1e-6, atol=1e-6)


def test_a_speakers_warp_factor_warps_the_audio_of_its_examples(speaker_corpus):
    data_dir, ali_dir = speaker_corpus
    plain = ExampleProducer(data_dir, ali_dir)
    with open(f"{data_dir}/spk2warp", "w") as spk2warp:
        spk2warp.write("spk0 1.1\n")
    warped = ExampleProducer(data_dir, ali_dir)
    for utterance_id in plain.utterance_ids:
        before, after = plain._features(utterance_id, 0)[0], warped._features(utterance_id, 0)[0]
        assert before.shape == after.shape
        assert np.allclose(before, after) == utterance_id.startswith("spk1"), utterance_id
