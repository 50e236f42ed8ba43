"""asrkit-adapt end to end on the toy task: a model per new speaker from the first pass, decoded with
asrkit-decode --speaker-models."""

import json
import os
import shutil

import numpy as np
from click.testing import CliRunner

from asrkit.adapt.adapt_dir import AdaptOptions, adapt_speakers
from asrkit.cli.adapt import main as adapt_main
from asrkit.cli.decode import main as decode_main
from asrkit.decode.loglikes import ModelLoglikes


def _adapt(first_pass, out_dir, *options):
    result = CliRunner().invoke(adapt_main, [first_pass["model"], first_pass["data"], first_pass["decode"], out_dir,
                                             "--min-frames", "20", *options], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


def test_each_new_speaker_gets_a_model_that_fits_its_first_pass_better(first_pass, tmp_path):
    output = _adapt(first_pass, str(tmp_path / "lhuc"), "--iterations", "6")
    assert "command line:" in output and "asrkit-adapt summary: status=ok" in output and "speakers=4" in output
    record = json.load(open(tmp_path / "lhuc" / "adapt.json"))
    spk2model = dict(line.split() for line in open(tmp_path / "lhuc" / "spk2model"))
    assert sorted(spk2model) == ["spk4", "spk5", "spk6", "spk7"] == sorted(record["speakers"])
    for speaker, stats in record["speakers"].items():
        assert stats["loss_after"] < stats["loss_before"], speaker
        transform = np.load(tmp_path / "lhuc" / spk2model[speaker] / "transform.npz")
        assert sorted(transform) == ["lhuc1_amplitudes", "lhuc2_amplitudes"]
        assert np.all((transform["lhuc1_amplitudes"] > 0) & (transform["lhuc1_amplitudes"] < 2))
    # The same inputs give the same models, to the last bit.
    _adapt(first_pass, str(tmp_path / "again"), "--iterations", "6")
    for name in spk2model.values():
        for file_name in os.listdir(tmp_path / "lhuc" / name / "weights"):
            assert (open(tmp_path / "lhuc" / name / "weights" / file_name, "rb").read() ==
                    open(tmp_path / "again" / name / "weights" / file_name, "rb").read())


def test_a_tdnnf_adapts_its_top_layers_and_input_to_each_speaker(first_pass, tdnnf_model, tmp_path):
    """A TDNN-F (the recipes' LF-MMI network) gets LHUC amplitudes of its top two layers and an input transform,
    fitted to the first pass's lattices (of another model: the targets are pdf posteriors)."""
    _adapt({**first_pass, "model": tdnnf_model}, str(tmp_path / "adapted"), "--method", "lhuc+input",
           "--iterations", "6")
    record = json.load(open(tmp_path / "adapted" / "adapt.json"))
    spk2model = dict(line.split() for line in open(tmp_path / "adapted" / "spk2model"))
    assert sorted(spk2model) == sorted(record["speakers"]) and len(spk2model) == 4
    for speaker, stats in record["speakers"].items():
        assert stats["loss_after"] < stats["loss_before"], speaker
        transform = np.load(tmp_path / "adapted" / spk2model[speaker] / "transform.npz")
        assert sorted(transform) == ["input_matrix", "lhuc1_amplitudes", "lhuc2_amplitudes"]
        assert transform["lhuc1_amplitudes"].shape == (16,) and transform["lhuc2_amplitudes"].shape == (8,)
    adapted = ModelLoglikes(tdnnf_model, first_pass["data"], speaker_models=str(tmp_path / "adapted"))
    plain = ModelLoglikes(tdnnf_model, first_pass["data"])
    utterance_id = adapted.utterance_ids()[0]
    assert not np.allclose(adapted.loglikes(utterance_id), plain.loglikes(utterance_id), atol=1e-3)


def test_decoding_with_the_speakers_models_uses_each_speaker_s_own(first_pass, tmp_path):
    adapt_dir = str(tmp_path / "both")
    _adapt(first_pass, adapt_dir, "--method", "lhuc+input", "--iterations", "4", "--kld-weight", "0.2")
    decode_dir = str(tmp_path / "decode")
    result = CliRunner().invoke(decode_main, [first_pass["graph"], first_pass["model"], first_pass["data"], decode_dir,
                                              "--acoustic-scale", "0.5", "--no-lmwt-sweep", "--speaker-models",
                                              adapt_dir], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert "4 speakers' adapted models from" in result.output and "status=ok" in result.output
    assert len(open(os.path.join(decode_dir, "hyp.txt")).read().splitlines()) == 16
    # Each utterance's log-likelihoods are its speaker's model's, not the unadapted model's.
    adapted = ModelLoglikes(first_pass["model"], first_pass["data"], speaker_models=adapt_dir)
    plain = ModelLoglikes(first_pass["model"], first_pass["data"])
    spk2model = dict(line.split() for line in open(os.path.join(adapt_dir, "spk2model")))
    for utterance_id in adapted.utterance_ids()[:6]:
        speaker = utterance_id.split("-")[0]
        own = ModelLoglikes(os.path.join(adapt_dir, spk2model[speaker]), first_pass["data"])
        np.testing.assert_allclose(adapted.loglikes(utterance_id), own.loglikes(utterance_id), atol=1e-5)
        assert not np.allclose(adapted.loglikes(utterance_id), plain.loglikes(utterance_id), atol=1e-3)


def test_a_speaker_with_too_few_frames_keeps_the_model_and_wrong_inputs_are_refused(first_pass, tmp_path):
    result = adapt_speakers(first_pass["model"], first_pass["data"], first_pass["decode"], str(tmp_path / "none"),
                            AdaptOptions(min_frames=10 ** 6))
    assert result.speakers == 0 and result.skipped_speakers == 4
    assert open(tmp_path / "none" / "spk2model").read() == ""
    # The speakers' first-pass confidence, over speech frames (the graph's silence left out), gates them too.
    output = _adapt(first_pass, str(tmp_path / "sure"), "--iterations", "1", "--graph", first_pass["graph"])
    confidences = {speaker: stats["confidence"] for speaker, stats in
                   json.load(open(tmp_path / "sure" / "adapt.json"))["speakers"].items()}
    assert sorted(confidences) == ["spk4", "spk5", "spk6", "spk7"] and all(0 < c < 1 for c in confidences.values())
    floor = sorted(confidences.values())[2]  # the two surest speakers are adapted, the others not
    output = _adapt(first_pass, str(tmp_path / "surest"), "--iterations", "1", "--graph", first_pass["graph"],
                    "--min-confidence", f"{floor - 1e-9:.12f}")
    spk2model = dict(line.split() for line in open(tmp_path / "surest" / "spk2model"))
    assert sorted(spk2model) == sorted(s for s, c in confidences.items() if c >= floor - 1e-9) and len(spk2model) == 2
    assert "speakers=2 skipped_speakers=2" in output
    # Speaker models of another model are refused by name.
    other = str(tmp_path / "other_model")
    shutil.copytree(first_pass["model"], other)
    weights = os.path.join(other, "weights")
    data_file = [name for name in os.listdir(weights) if name.startswith("model.data")][0]
    with open(os.path.join(weights, data_file), "r+b") as handle:
        handle.seek(100)
        handle.write(b"\x01\x02\x03\x04")
    bad = CliRunner().invoke(decode_main, [first_pass["graph"], other, first_pass["data"], str(tmp_path / "d"),
                                           "--no-lmwt-sweep", "--speaker-models", str(tmp_path / "none")])
    assert bad.exit_code == 1 and "not the model" in bad.output and "its weights differ" in bad.output
    # The output may not be an input, nor a directory asrkit-adapt did not write.
    bad = CliRunner().invoke(adapt_main, [first_pass["model"], first_pass["data"], first_pass["decode"],
                                          first_pass["data"]])
    assert bad.exit_code == 1 and "is or holds the input" in bad.output
    bad = CliRunner().invoke(adapt_main, [first_pass["model"], first_pass["data"], first_pass["decode"],
                                          first_pass["root"]])
    assert bad.exit_code == 1 and "is or holds the input" in bad.output
