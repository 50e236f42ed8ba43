"""train_ce on a tiny synthetic corpus: learning, skipping misaligned utterances, resume, export."""

import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from asrkit.errors import AsrkitError
from asrkit.nn.model_dir import load_acoustic_model
from asrkit.train.trainer import TrainOptions, train_ce

TINY = {"num_layers": 1, "num_cells": 16, "label_delay": 2}


def options(**params):
    base = {"num_streams": 4, "unroll": 8, "num_epochs": 0, "max_steps": 20, "log_every": 5, "valid_every": 10,
            "checkpoint_every": 10, "learning_rate": 0.1, "valid_utts": 2}
    base.update(params)
    return TrainOptions(model="lstm", model_overrides=dict(TINY), params=base)


def test_loss_decreases_and_the_export_decodes_the_training_data(corpus, tmp_path):
    data_dir, ali_dir, utterances = corpus(num_utts=20)
    first = train_ce(data_dir, ali_dir, str(tmp_path / "exp0"), options(max_steps=5, log_every=5))
    result = train_ce(data_dir, ali_dir, str(tmp_path / "exp"), options(max_steps=120, log_every=20, valid_every=60,
                                                                         checkpoint_every=60))
    assert result.steps == 120 and result.resumed_from == 0
    assert result.loss < 0.6 * first.loss
    assert result.frame_accuracy > 0.7 and result.valid_accuracy > 0.6
    assert result.apr == 0.0  # endless epochs: streams never run dry
    assert 0 < result.t_session <= 1
    # One held-out point per validation (steps 60 and 120), in wall-time order, the last one the result's.
    assert [point[0] for point in result.valid_history] == [60, 120]
    assert 0 < result.valid_history[0][1] < result.valid_history[1][1] <= result.seconds
    assert result.valid_history[-1][2] == result.valid_accuracy
    assert json.load(open(tmp_path / "exp" / "result.json"))["valid_history"] == result.valid_history

    config = json.load(open(tmp_path / "exp" / "config.json"))
    assert config["model"]["params"]["num_cells"] == 16 and config["train"]["optimizer"] == "adagrad"
    assert config["data"]["num_pdfs"] == 5 and config["data"]["valid_utterances"] == 2
    assert os.listdir(tmp_path / "exp" / "tensorboard")

    model = load_acoustic_model(tmp_path / "exp" / "final")
    correct = total = 0
    for features, labels in utterances.values():
        predicted = model.log_posteriors(features).argmax(axis=1)
        correct += (predicted == labels).sum()
        total += len(labels)
    assert correct / total > 0.7
    counts = np.loadtxt(tmp_path / "exp" / "final" / "pdf_counts")
    assert counts.sum() == config["data"]["train_frames"] < sum(len(labels) for _, labels in utterances.values())


def test_dropout_trains_and_is_recorded_but_not_exported(corpus, tmp_path, caplog):
    import logging

    caplog.set_level(logging.INFO, logger="asrkit")
    data_dir, ali_dir, utterances = corpus(num_utts=20)
    steps = dict(max_steps=120, log_every=20, valid_every=60, checkpoint_every=60)
    result = train_ce(data_dir, ali_dir, str(tmp_path / "exp"), options(dropout=0.2, **steps))
    assert "dropout: 0.2 of each hidden layer's outputs in training steps" in caplog.text
    assert result.valid_accuracy > 0.6
    assert json.load(open(tmp_path / "exp" / "config.json"))["train"]["dropout"] == 0.2
    # The exported model decodes without dropout: the same posteriors every time.
    model = load_acoustic_model(tmp_path / "exp" / "final")
    features = next(iter(utterances.values()))[0]
    np.testing.assert_array_equal(model.log_posteriors(features), model.log_posteriors(features))
    with pytest.raises(AsrkitError, match=r"--dropout: the dropout rate must be in \[0, 1\), not 1"):
        train_ce(data_dir, ali_dir, str(tmp_path / "bad"), options(dropout=1.0, **steps))


def test_each_log_interval_gives_the_c_heap_s_freed_pages_back(corpus, tmp_path, monkeypatch):
    from asrkit.train import loop

    trims = []
    monkeypatch.setattr(loop, "trim_freed_memory", lambda: trims.append(1))
    data_dir, ali_dir, _ = corpus(num_utts=8)
    result = train_ce(data_dir, ali_dir, str(tmp_path / "exp"), options(max_steps=15, log_every=5, valid_every=0,
                                                                        checkpoint_every=0))
    assert result.steps == 15 and len(trims) == 3


def test_full_unrolling_mode_trains(corpus, tmp_path):
    data_dir, ali_dir, _ = corpus(num_utts=12)
    result = train_ce(data_dir, ali_dir, str(tmp_path / "exp"),
                      options(mode="full", frames_per_batch=120, bucket_bounds="20,40,70", num_epochs=3, max_steps=0,
                              optimizer="adam", learning_rate=0.01))
    assert result.steps > 0 and result.epochs == 3
    assert 0 < result.apr < 0.5


def test_misaligned_utterances_are_skipped_counted_and_named(corpus, tmp_path, caplog):
    utterances = corpus(num_utts=12, name="probe")[2]
    ids = sorted(utterances)
    lengths = {ids[3]: len(utterances[ids[3]][1]) + 4, ids[5]: len(utterances[ids[5]][1]) + 1}
    data_dir, ali_dir, _ = corpus(num_utts=12, ali_lengths=lengths)
    with pytest.raises(AsrkitError, match="1 of 12 utterances have no usable alignment"):
        train_ce(data_dir, ali_dir, str(tmp_path / "exp"), options(max_steps=2))
    assert ids[3] in caplog.text and "alignment has" in caplog.text
    result = train_ce(data_dir, ali_dir, str(tmp_path / "exp"), options(max_steps=2, max_skip_ratio=0.1))
    assert result.skipped == 1  # the one-frame difference is within the tolerance


def test_resume_continues_exactly_where_the_run_stopped(corpus, tmp_path):
    data_dir, ali_dir, _ = corpus(num_utts=10)
    train_ce(data_dir, ali_dir, str(tmp_path / "straight"), options(max_steps=12, checkpoint_every=4))
    first = train_ce(data_dir, ali_dir, str(tmp_path / "resumed"), options(max_steps=6, checkpoint_every=4))
    assert first.steps == 6
    second = train_ce(data_dir, ali_dir, str(tmp_path / "resumed"), options(max_steps=12, checkpoint_every=4))
    assert second.resumed_from == 6 and second.steps == 12
    features = next(iter(corpus_features(data_dir)))
    expected = load_acoustic_model(tmp_path / "straight" / "final").log_posteriors(features)
    got = load_acoustic_model(tmp_path / "resumed" / "final").log_posteriors(features)
    np.testing.assert_allclose(got, expected, atol=1e-5)

    with pytest.raises(AsrkitError, match="cannot resume.*num_streams 4 vs now 8"):
        train_ce(data_dir, ali_dir, str(tmp_path / "resumed"), options(max_steps=14, num_streams=8))


def corpus_features(data_dir):
    from asrkit.io.table import TableReader

    with TableReader(os.path.join(data_dir, "feats.scp")) as table:
        for _, features in table.items():
            yield features


def test_resume_after_sigkill(corpus, tmp_path):
    data_dir, ali_dir, _ = corpus(num_utts=10)
    exp_dir = tmp_path / "exp"
    script = (
        "import sys; from asrkit.train.trainer import TrainOptions, train_ce\n"
        f"train_ce({data_dir!r}, {ali_dir!r}, {str(exp_dir)!r}, TrainOptions(model='lstm', "
        f"model_overrides={TINY!r}, params=dict(num_streams=4, unroll=8, num_epochs=0, max_steps=100000, "
        "checkpoint_every=3, log_every=1000, valid_utts=0)))\n"
    )
    process = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while not os.path.exists(exp_dir / "checkpoints" / "checkpoint") and time.monotonic() < deadline:
            time.sleep(0.2)
        time.sleep(0.5)
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait()
    assert os.path.exists(exp_dir / "checkpoints" / "checkpoint"), "no checkpoint within 60 s"
    params = dict(num_streams=4, unroll=8, num_epochs=0, max_steps=1, log_every=1000, valid_utts=0)
    result = train_ce(data_dir, ali_dir, str(exp_dir), TrainOptions(model="lstm", model_overrides=dict(TINY),
                                                                    params=params))
    # max_steps 1 is below the checkpoint's step: nothing more to train, the checkpoint is exported.
    assert result.resumed_from >= 3 and result.resumed_from % 3 == 0 and result.steps == result.resumed_from
    assert os.path.exists(exp_dir / "final" / "model.json")
    again = train_ce(data_dir, ali_dir, str(exp_dir), TrainOptions(
        model="lstm", model_overrides=dict(TINY), resume=False, params=dict(params, max_steps=2)))
    assert again.resumed_from == 0 and again.steps == 2
    assert os.path.isdir(exp_dir / "checkpoints.old-1")


def test_bf16_training_learns_like_fp32_and_exports_fp32_weights(corpus, tmp_path, monkeypatch, caplog):
    import logging

    from asrkit.nn import precision

    caplog.set_level(logging.INFO, logger="asrkit")
    monkeypatch.setattr(precision, "bf16_support", lambda: (True, "the test's say-so"))
    data_dir, ali_dir, _ = corpus(num_utts=20)
    steps = dict(max_steps=120, log_every=20, valid_every=60, checkpoint_every=60)
    fp32 = train_ce(data_dir, ali_dir, str(tmp_path / "fp32"), options(**steps))
    bf16 = train_ce(data_dir, ali_dir, str(tmp_path / "bf16"), options(precision="bf16", **steps))
    assert "precision: bf16 GEMMs, fp32 weights, states and loss (the test's say-so)" in caplog.text
    assert "LSTM cells: the fused CPU kernel" in caplog.text
    assert "frame loss: the fused CPU kernel" in caplog.text
    assert abs(bf16.valid_accuracy - fp32.valid_accuracy) < 0.1 and bf16.loss < 1.2 * fp32.loss
    assert json.load(open(tmp_path / "bf16" / "config.json"))["train"]["precision"] == "bf16"
    model = load_acoustic_model(tmp_path / "bf16" / "final")
    assert model.log_posteriors(next(iter(corpus_features(data_dir)))).dtype == np.float32
    monkeypatch.setattr(precision, "bf16_support", lambda: (False, "no native bf16"))
    with pytest.raises(AsrkitError, match="--precision bf16: no native bf16"):
        train_ce(data_dir, ali_dir, str(tmp_path / "refused"), options(precision="bf16", **steps))


@pytest.mark.parametrize("name, value", [("seed", -1), ("learning_rate", float("nan")), ("num_streams", -4),
                                         ("rolling_window_blocks", -1), ("clip_norm", float("inf"))])
def test_numbers_no_algorithm_can_use_are_refused_naming_the_option(tmp_path, name, value):
    """#42 item 10: --seed -1 was a numpy traceback; a NaN rate or a negative count fails or hangs later."""
    with pytest.raises(AsrkitError, match=f"--{name.replace('_', '-')} {value}: must be a finite number >= 0"):
        train_ce(str(tmp_path / "data"), str(tmp_path / "ali"), str(tmp_path / "exp"), options(**{name: value}))


def test_a_float_alignment_table_is_refused_naming_the_utterance_and_table(corpus, tmp_path):
    """#42 item 10: a float table (features given as alignments, say) gave a traceback from np.bincount, and
    the example sources cast it to ids silently."""
    from asrkit.io.table import ShardWriter

    data_dir, ali_dir, utterances = corpus(num_utts=12)
    first = sorted(utterances)[0]
    with ShardWriter(os.path.join(ali_dir, "ali.1.h5")) as ali:
        for utterance_id, (_, labels) in sorted(utterances.items()):
            ali.write(utterance_id, labels.astype(np.float32) + 0.5)
    with pytest.raises(AsrkitError, match=f"utterance {first}: .*ali.scp holds a float32 array of shape "
                                          r"\[\d+\], not one integer id per frame"):
        train_ce(data_dir, ali_dir, str(tmp_path / "exp"), options(max_steps=2))
