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
