"""CTC (asrkit.train.criteria.ctc, asrkit.graph.ctc_topology): labels from frame phones, the loss against a sum over every
path, the CTC topology against the collapsing rule, and a CTC model trained, graphed and decoded on the toy task."""

import itertools
import os

import numpy as np
import pytest
from click.testing import CliRunner

from asrkit.errors import AsrkitError
from asrkit.tf_runtime import import_tensorflow

tf = import_tensorflow()


def collapse(path, blank=0):
    """CTC's rule: merge repeated outputs, then drop the blanks."""
    merged = [output for index, output in enumerate(path) if index == 0 or output != path[index - 1]]
    return [output for output in merged if output != blank]


def test_label_sequence_and_counts(tmp_path):
    from asrkit.io.table import ShardWriter, write_scp
    from asrkit.train.criteria.ctc import label_counts, label_sequence

    assert list(label_sequence([1, 1, 3, 3, 3, 2, 1, 1])) == [1, 3, 2, 1]
    assert list(label_sequence([])) == []
    shard = str(tmp_path / "phone_ali.1.h5")
    with ShardWriter(shard) as out:
        out.write("a", np.array([1, 1, 3, 3, 2], np.int32))
        out.write("b", np.array([2, 2, 2], np.int32))
    write_scp(str(tmp_path / "phone_ali.scp"), [shard])
    frames = {"a": 5, "b": 4}  # b's alignment is a frame short: padded with its last phone, as for CE
    counts = label_counts(str(tmp_path / "phone_ali.scp"), ["a", "b"], 4, frames.get)
    # a: labels 1 3 2 (5 frames, 2 not starting a label); b: label 2 (4 frames, 3 not)
    assert list(counts) == [5, 1, 2, 1]


def brute_force_ctc_loss(log_probs, labels):
    """-log of the summed probability of every frame path that collapses to labels ([T, K] log-softmax)."""
    num_frames, num_outputs = log_probs.shape
    total = 0.0
    for path in itertools.product(range(num_outputs), repeat=num_frames):
        if collapse(list(path)) == list(labels):
            total += np.exp(sum(log_probs[t, k] for t, k in enumerate(path)))
    return -np.log(total)


@pytest.mark.parametrize("delay", [0, 2])
def test_ctc_sums_match_every_path_and_skip_the_label_delay(delay):
    from asrkit.train.criteria.ctc import ctc_sums

    rng = np.random.default_rng(3)
    num_outputs = 4
    # Two utterances of 5 and 4 frames (+ delay frames in front, NO_LABEL), padded to one batch, time-major.
    frame_phones = [[1, 1, 2, 2, 1], [3, 3, 3, 2]]
    length = 5 + delay
    targets = np.full((length, 2), -1, np.int32)
    mask = np.zeros((length, 2), np.float32)
    for row, phones in enumerate(frame_phones):
        targets[delay:delay + len(phones), row] = phones
        mask[:delay + len(phones), row] = 1.0
    logits = rng.standard_normal((length, 2, num_outputs)).astype(np.float32)
    loss_sum, correct, count = ctc_sums(tf.constant(logits), tf.constant(targets), tf.constant(mask), delay)
    log_probs = logits - np.log(np.exp(logits).sum(axis=-1, keepdims=True))
    expected = (brute_force_ctc_loss(log_probs[delay:delay + 5, 0], [1, 2, 1])
                + brute_force_ctc_loss(log_probs[delay:delay + 4, 1], [3, 2]))
    assert float(loss_sum) == pytest.approx(expected, rel=1e-4)
    assert float(count) == 5.0
    # Greedy decoding: the argmax path collapsed, against the labels.
    greedy = [collapse(list(log_probs[delay:delay + n, row].argmax(axis=-1))) for row, n in enumerate((5, 4))]
    edits = sum(_edit_distance(hyp, ref) for hyp, ref in zip(greedy, ([1, 2, 1], [3, 2])))
    assert float(correct) == pytest.approx(5.0 - edits)


def _edit_distance(a, b):
    row = list(range(len(b) + 1))
    for i in range(1, len(a) + 1):
        previous, row[0] = row[0], i
        for j in range(1, len(b) + 1):
            previous, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, previous + (a[i - 1] != b[j - 1]))
    return row[-1]


def test_token_fst_writes_the_collapsed_labels_of_every_path():
    """T read along any frame path (input-deterministic, so a walk) writes collapse(path); disambiguation
    loops write their symbol anywhere and consume no frame."""
    from asrkit.graph.ctc_topology import make_ctc_token_fst
    from asrkit.graph.fst_arrays import fst_to_arrays

    phones, disambig = [1, 2, 4], [6, 7]
    fst, disambig_inputs = make_ctc_token_fst(phones, disambig, num_outputs=5)
    assert disambig_inputs == [6, 7]
    arrays = fst_to_arrays(fst)
    arcs = {}
    for state, ilabel, olabel, target in zip(arrays.source, arrays.ilabel, arrays.olabel, arrays.target):
        assert (int(state), int(ilabel)) not in arcs, "T must be input-deterministic"
        arcs[(int(state), int(ilabel))] = (int(olabel), int(target))
    for length in range(1, 5):
        for path in itertools.product([0] + phones, repeat=length):
            state, written = 0, []
            for output in path:
                olabel, state = arcs[(state, output + 1)]
                if olabel:
                    written.append(olabel)
                # A disambiguation symbol may come between any two frames and leaves the state alone.
                assert arcs[(state, 6)] == (6, state)
            assert written == collapse(list(path)), path
    assert all(fst.final(state) == 0.0 for state in range(fst.num_states))


def test_ctc_needs_full_mode(featurized_corpus, tmp_path):
    from asrkit.cli.train_ce import main

    data_dir, ali_dir = featurized_corpus({"spk0-0": 0.5, "spk0-1": 0.5})
    result = CliRunner().invoke(main, [data_dir, ali_dir, str(tmp_path / "exp"), "--criterion", "ctc"])
    assert result.exit_code == 1 and "--criterion ctc needs whole utterances" in result.output
    # Phone targets need the phone alignments and table.
    missing = CliRunner().invoke(main, [data_dir, ali_dir, str(tmp_path / "exp"), "--criterion", "ctc",
                                        "--mode", "full"])
    assert missing.exit_code == 1 and "phones.txt does not exist" in missing.output


def test_ctc_model_trains_graphs_and_decodes_the_toy_task(tmp_path):
    """--criterion ctc through asrkit-train-ce, utils/mkgraph (T o L o G) and asrkit-decode: the toy sentences
    come back; the model dir says what its outputs are and has no tree; a CE graph's model is refused."""
    from asrkit.cli.decode import main as decode_main
    from asrkit.cli.lang import mkgraph_command
    from asrkit.cli.lattice import main as lattice_main
    from asrkit.cli.train_ce import main as train_main
    from asrkit.decode.synthetic import build_toy_task, write_toy_corpus
    from asrkit.nn.model_dir import read_model_json

    task = build_toy_task(str(tmp_path / "task"))
    data_dir, ali_dir = write_toy_corpus(str(tmp_path), task, num_utts=60)
    max_phone = max(int(line.split()[1]) for line in open(os.path.join(ali_dir, "phones.txt"))
                    if not line.startswith("#"))
    exp_dir = str(tmp_path / "exp")
    result = CliRunner().invoke(train_main, [
        data_dir, ali_dir, exp_dir, "--criterion", "ctc", "--mode", "full", "--frames-per-batch", "400",
        "--bucket-bounds", "40,80", "--model-param", "num_layers=1", "--model-param", "num_cells=32",
        "--model-param", "label_delay=2", "--optimizer", "adam", "--learning-rate", "0.02", "--num-epochs", "25",
        "--valid-utts", "4", "--log-every", "50", "--num-threads", "1"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert "CTC label priors: blank" in result.output
    model_dir = os.path.join(exp_dir, "final")
    config = read_model_json(model_dir)
    assert config["outputs"] == "ctc-phones" and config["num_pdfs"] == max_phone + 1
    assert not os.path.exists(os.path.join(model_dir, "tree.json"))
    valid_accuracy = float(result.output.split("valid_accuracy=")[1].split()[0])
    assert valid_accuracy > 0.8, result.output  # greedy label accuracy on held-out utterances

    graph_dir = str(tmp_path / "graph_ctc")
    built = CliRunner().invoke(mkgraph_command, [task["lang"], model_dir, graph_dir], catch_exceptions=False)
    assert built.exit_code == 0, built.output
    assert open(os.path.join(graph_dir, "num_pdfs")).read().strip() == str(max_phone + 1)
    decode = CliRunner().invoke(decode_main, [graph_dir, model_dir, data_dir, str(tmp_path / "decode"),
                                              "--no-lmwt-sweep", "--acoustic-scale", "1.0", "--write-lattices"],
                                catch_exceptions=False)
    assert decode.exit_code == 0, decode.output
    wer = float(decode.output.split("%WER ")[1].split()[0])
    assert wer < 20.0, decode.output
    # Its lattices serve [McDermott2014]'s selection like an HMM model's (silence frames: the silence phones' outputs).
    selected = CliRunner().invoke(lattice_main, ["select", "--max-utts", "10", graph_dir, str(tmp_path / "decode"),
                                                 data_dir, str(tmp_path / "selected")], catch_exceptions=False)
    assert selected.exit_code == 0, selected.output
    assert len(open(tmp_path / "selected" / "text").read().splitlines()) == 10
    # The HMM graph of the same lang dir has the tree's pdfs as its inputs: decoding the CTC model with it is refused.
    wrong = CliRunner().invoke(decode_main, [task["graph"], model_dir, data_dir, str(tmp_path / "decode2")])
    assert wrong.exit_code == 1, wrong.output


def test_ctc_graph_refuses_a_model_of_other_phones(tmp_path):
    from asrkit.decode.synthetic import build_toy_task
    from asrkit.graph.ctc_topology import make_ctc_graph

    task = build_toy_task(str(tmp_path / "task"))
    model_dir = tmp_path / "model"
    model_dir.mkdir()
    (model_dir / "phones.txt").write_text("<eps> 0\nSIL 1\nAA 2\n")
    (model_dir / "num_pdfs").write_text("3\n")
    with pytest.raises(AsrkitError, match="phones of .* differ"):
        make_ctc_graph(task["lang"], str(model_dir), str(tmp_path / "graph"))


def test_ctc_trains_from_example_servers(tmp_path):
    """local:N servers started by a CTC run serve the phone alignments (--targets phones): the handshake
    agrees on the classes and the run learns as it does in-process."""
    from asrkit.cli.train_ce import main as train_main
    from asrkit.decode.synthetic import build_toy_task, write_toy_corpus

    task = build_toy_task(str(tmp_path / "task"))
    data_dir, ali_dir = write_toy_corpus(str(tmp_path), task, num_utts=40)
    exp_dir = tmp_path / "exp"
    result = CliRunner().invoke(train_main, [
        data_dir, ali_dir, str(exp_dir), "--criterion", "ctc", "--mode", "full", "--frames-per-batch", "400",
        "--bucket-bounds", "40,80", "--model-param", "num_layers=1", "--model-param", "num_cells=32",
        "--optimizer", "adam", "--learning-rate", "0.02", "--num-epochs", "12", "--valid-utts", "4",
        "--log-every", "20", "--num-threads", "1", "--example-servers", "local:1", "--server-from-feats"],
        catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert "--targets phones" in open(exp_dir / "log" / "serve.1.log").read()
    assert float(result.output.split("valid_accuracy=")[1].split()[0]) > 0.5, result.output


def test_resume_keeps_the_criterion(tmp_path):
    """A CE run made before the criterion existed resumes as CE; the same exp dir refuses to go on with CTC."""
    import json

    from asrkit.cli.train_ce import main as train_main
    from asrkit.decode.synthetic import build_toy_task, write_toy_corpus

    task = build_toy_task(str(tmp_path / "task"))
    data_dir, ali_dir = write_toy_corpus(str(tmp_path), task, num_utts=12)
    exp_dir = tmp_path / "exp"
    common = [data_dir, ali_dir, str(exp_dir), "--model-param", "num_layers=1", "--model-param", "num_cells=8",
              "--mode", "full", "--num-epochs", "0", "--valid-utts", "0", "--num-threads", "1"]
    first = CliRunner().invoke(train_main, common + ["--max-steps", "2"], catch_exceptions=False)
    assert first.exit_code == 0, first.output
    config = json.load(open(exp_dir / "config.json"))
    del config["train"]["criterion"]
    json.dump(config, open(exp_dir / "config.json", "w"))
    resumed = CliRunner().invoke(train_main, common + ["--max-steps", "3"], catch_exceptions=False)
    assert resumed.exit_code == 0 and "resumed_from=2" in resumed.output, resumed.output
    refused = CliRunner().invoke(train_main, common + ["--max-steps", "4", "--criterion", "ctc"])
    assert refused.exit_code == 1 and "criterion 'ce' vs now 'ctc'" in refused.output, refused.output


def test_phone_zero_the_blank_is_refused_as_a_target_naming_the_utterance(corpus):
    """#42 item 8: phone 0 is phones.txt's <eps>, CTC's blank; an alignment that makes it a frame's target is
    refused (skipped and named, counted against --max-skip-ratio) in the trainer's tables and by the servers."""
    from asrkit.training_examples.alignments import target_problem
    from asrkit.io.table import ShardWriter, write_scp
    from asrkit.example_servers.producer import ExampleProducer, SkipUtterance
    from asrkit.train.training_set import load_training_data

    data_dir, ali_dir, utterances = corpus(num_utts=12)
    with open(os.path.join(ali_dir, "phones.txt"), "w") as out:
        out.write("<eps> 0\nSIL 1\na 2\nb 3\nc 4\nd 5\n#0 6\n")
    bad = sorted(utterances)[4]
    with ShardWriter(os.path.join(ali_dir, "phone_ali.1.h5")) as phone_ali:
        for utterance_id, (_, labels) in sorted(utterances.items()):
            phones = labels + 1  # phones 1-5
            if utterance_id == bad:
                phones[3] = 0
            phone_ali.write(utterance_id, phones.astype(np.int32))
    write_scp(os.path.join(ali_dir, "phone_ali.scp"), [os.path.join(ali_dir, "phone_ali.1.h5")])
    assert "phone 0 (<eps>, CTC's blank) is the target of frame 3" in target_problem(
        np.array([1, 2, 2, 0, 1]), 6, "phones")
    assert target_problem(np.array([0, 2]), 6, "pdfs") is None and target_problem(np.array([1, 5]), 6, "phones") is None
    data = load_training_data(data_dir, ali_dir, targets="phones", max_skip_ratio=0.1)
    assert bad not in data.train.utterance_ids and len(data.train.utterance_ids) == 11
    assert "phone 0 (<eps>, CTC's blank) is the target of frame 3" in data.skipped[bad]
    with pytest.raises(AsrkitError, match=f"utterance {bad}: phone 0 .*CTC's blank"):
        load_training_data(data_dir, ali_dir, targets="phones", max_skip_ratio=0.0)
    producer = ExampleProducer(data_dir, ali_dir, from_feats=True, targets="phones")
    try:
        with pytest.raises(SkipUtterance, match="phone 0 .*CTC's blank"):
            producer.produce(bad, 0)
        assert producer.produce(sorted(utterances)[0], 0)[1].min() >= 1
    finally:
        producer.close()
