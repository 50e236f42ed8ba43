"""ExampleProducer: targets follow a speed-perturbed utterance; a foreign alignment is still refused."""

import json

import numpy as np
import pytest

from asrkit.serving.producer import ExampleProducer, SkipUtterance


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
