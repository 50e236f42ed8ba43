"""steps/lfmmi.sh multi-style, as egs/voiceover trains it, on a small featurized audio data dir (the example server
noisifying on the fly, the LF-MMI trainer), with its decoding step (steps/decode_tuned.sh) stubbed; its
--first-only false; egs/voiceover/run.sh's --lfmmi option and its stages 14-16 (the combination, its package and
its adaptation) with each --combine-with; and egs/voicesearch/run.sh's stages 19-21 (LF-MMI, the combination and
its package) with --lfmmi true, --lfmmi-epochs and each --combine-with, their steps stubbed; and its --precision,
which reaches the training of stages 7, 9 and 19."""

import json
import os
import shutil
import subprocess
import sys

from asrkit.io.table import TableReader
from asrkit.nn.precision import bf16_support
from tests.train.conftest import label_den_graph

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NUM_PDFS = 4


def _den_graph(ali_dir, path):
    """The denominator graph of a one-state monophone set where phone k + 1 is pdf k, its LM from the alignments."""
    with TableReader(os.path.join(ali_dir, "ali.scp")) as alignments:
        label_den_graph([labels for _, labels in alignments.items()], NUM_PDFS).write(path)


def test_lfmmi_multi_style_trains_from_the_example_server_and_decodes_on_the_ce_graph(featurized_corpus, tmp_path):
    """The recipes' default network, the windowed BLSTM, with the xent layer as egs/voiceover trains it."""
    data_dir, ali_dir = featurized_corpus({f"spk{s}-{u}": 0.6 + 0.1 * u for s in range(2) for u in range(4)},
                                          NUM_PDFS)
    data, exp = tmp_path / "recipe_data", tmp_path / "exp"
    data.mkdir()
    exp.mkdir()
    os.symlink(data_dir, data / "train")
    os.symlink(ali_dir, exp / "tree_ali")
    _den_graph(ali_dir, str(exp / "wblstm_lfmmi_den.npz"))
    styles = tmp_path / "styles.json"
    styles.write_text(json.dumps({"styles": [{"name": "clean"}, {"name": "noisy", "noise": {"type": "white",
                                                                                             "snr_db": [10, 20]}}]}))
    # The steps of this checkout, the decoding replaced by a stub that shows its arguments.
    steps = tmp_path / "steps"
    shutil.copytree(os.path.join(ROOT, "steps"), steps)
    (steps / "decode_tuned.sh").write_text('#!/bin/sh\necho "decode_tuned.sh $*"\n')
    graph = exp / "wblstm_ce" / "graph"
    graph.mkdir(parents=True)
    (graph / "HCLG.fst").write_bytes(b"")
    command = [str(steps / "lfmmi.sh"), "--cmd", "run-local --num-threads 1", "--train-cmd", "run-local --num-threads 1",
               "--nj", "1", "--log-dir", str(exp / "log" / "stage11"), "--num-epochs", "2", "--num-streams", "2",
               "--train-opts", "--num-streams 2 --log-every 2 --valid-utts 0 --num-threads 1 --learning-rate 0.01 "
               "--optimizer adam --model wblstm --model-param num_cells=4 --model-param num_layers=1 "
               "--model-param context=2 --model-param group=2", "--lfmmi-opts", "--xent-regularize 0.1",
               "--more-opts", f"--example-servers local:1 --server-styles {styles}", "--tuned-sets", "dev:test:train_fit",
               str(data / "train"), str(exp / "tree_ali"), str(graph), str(data), str(exp / "wblstm_lfmmi")]
    # The commands of this checkout (an environment installed before they existed may lack their scripts).
    commands = tmp_path / "commands"
    commands.mkdir()
    (commands / "asrkit-train-ce").write_text(f'#!/bin/sh\nexec "{sys.executable}" -m asrkit.cli.train_ce "$@"\n')
    (commands / "asrkit-train-ce").chmod(0o755)
    environment = {**os.environ, "PYTHONPATH": ROOT, "LC_ALL": "C",
                   "PATH": f"{commands}:{ROOT}/bin:{os.environ['PATH']}"}
    result = subprocess.run(command, capture_output=True, text=True, env=environment, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    # Decoded on the CE model's graph, the first dev and test set, uniform priors, LM weights near 1.
    assert ("--prior-scales 1 --sweep-opts --lmwt-sweep --sweep-method lattice --acoustic-scale 1 --min-lmwt 0.5 "
            "--max-lmwt 3 --lmwt-step 0.25 --first-only true " f"{graph} {data} {exp / 'wblstm_lfmmi'}" in result.stdout)
    assert "asrkit-train-ce summary: status=ok" in result.stderr
    config = json.load(open(exp / "wblstm_lfmmi" / "config.json"))
    assert config["train"]["criterion"] == "lfmmi" and config["train"]["xent_regularize"] == 0.1
    assert config["train"]["unroll"] == 50 and config["train"]["den_graph"] == str(exp / "wblstm_lfmmi_den.npz")
    log = open(exp / "wblstm_lfmmi" / "log" / "serve.1.log").read()
    assert "noisifying on the fly with 2 styles" in log and "asrkit-serve-examples summary: status=ok" in log
    train_log = open(exp / "log" / "stage11" / "train_wblstm_lfmmi.log").read()
    assert "lfmmi_objective" in train_log and "cross-entropy regularisation" in train_log
    assert os.path.exists(exp / "wblstm_lfmmi" / "final" / "priors")
    assert "--lfmmi-opts --xent-regularize\\ 0.1\n" in (exp / "wblstm_lfmmi" / "log" / "lfmmi.options").read_text()


def test_the_voiceover_recipe_refuses_a_bad_lfmmi_value():
    run_sh = os.path.join(ROOT, "egs", "voiceover", "run.sh")
    result = subprocess.run([run_sh, "--lfmmi", "yes"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 2 and "--lfmmi must be true or false, not 'yes'" in result.stderr
    usage = subprocess.run([run_sh, "--help"], capture_output=True, text=True, timeout=60)
    assert "--lfmmi true|false" in usage.stdout


def test_the_voiceover_recipe_combines_lfmmi_with_the_model_combine_with_names(tmp_path):
    """Stages 14-16 alone, their steps stubbed: the combination, its package and its adapted second pass take the
    sMBR model by default and the CE model with --combine-with ce, each in its own exp dir."""
    _stubbed_steps(tmp_path, "decode_combined.sh", "export_package.sh", "adapt_combined.sh")
    recipe = tmp_path / "egs" / "voiceover"
    shutil.copytree(os.path.join(ROOT, "egs", "voiceover"), recipe,
                    ignore=shutil.ignore_patterns("data", "exp", "*.pyc", "__pycache__"))
    data, exp = tmp_path / "data", tmp_path / "exp"
    environment = {**os.environ, "PATH": f"{ROOT}/bin:{os.environ['PATH']}"}
    for first, options in (("smbr", []), ("ce", ["--combine-with", "ce"])):
        chosen = exp / f"wblstm_{first}_lfmmi" / "decode_dev" / "combination_opts"  # what decode_combined.sh leaves
        chosen.parent.mkdir(parents=True)
        chosen.write_text("--combine-model M --combine-weight 0.7\n")
        result = subprocess.run([str(recipe / "run.sh"), "--stage", "14", "--stop-stage", "16", *options, "--data",
                                 str(data), "--exp", str(exp)], capture_output=True, text=True, env=environment,
                                timeout=120)
        assert result.returncode == 0, result.stderr[-3000:]
        calls = {line.split()[0]: line for line in result.stdout.splitlines()}
        assert calls["decode_combined.sh"].endswith(f"{exp}/wblstm_{first} {exp}/tdnnf_lfmmi {exp}/wblstm_{first}_lfmmi")
        assert "--combine-model M --combine-weight 0.7" in calls["export_package.sh"]
        assert calls["export_package.sh"].endswith(f"{exp}/wblstm_{first}/final {exp}/wblstm_ce/graph "
                                                   f"{exp}/wblstm_{first}_lfmmi/decode_dev "
                                                   f"{exp}/wblstm_{first}_lfmmi/package")
        assert calls["adapt_combined.sh"].endswith(f"{exp}/wblstm_{first} {exp}/tdnnf_lfmmi {exp}/wblstm_{first}_lfmmi "
                                                   f"{exp}/wblstm_{first}_lfmmi_adapted")
    refused = subprocess.run([str(recipe / "run.sh"), "--combine-with", "lfmmi"], capture_output=True, text=True,
                             env=environment, timeout=60)
    assert refused.returncode != 0 and "--combine-with must be smbr or ce, not 'lfmmi'" in refused.stderr


def _recipe_environment():
    """A recipe copied out of the checkout runs its stubbed steps and this checkout's Python (run.sh asks asrkit
    whether bf16 is native before stages 7-19), with no .venv of its own beside it."""
    return {**os.environ, "PYTHONPATH": ROOT,
            "PATH": f"{ROOT}/bin:{os.path.dirname(sys.executable)}:{os.environ['PATH']}"}


def _stubbed_steps(tmp_path, *names):
    """This checkout's steps under tmp_path/steps, each of `names` replaced by a stub that shows its arguments."""
    steps = tmp_path / "steps"
    shutil.copytree(os.path.join(ROOT, "steps"), steps)
    for name in names:
        (steps / name).write_text(f'#!/bin/sh\necho "{name} $*"\n')
    return steps


def test_lfmmi_first_only_false_decodes_every_tuned_set(tmp_path):
    steps = _stubbed_steps(tmp_path, "train_ce.sh", "decode_tuned.sh")
    data, exp = tmp_path / "data", tmp_path / "exp"
    for path in (data / "train" / "feats.scp", exp / "tree_ali" / "ali.scp", exp / "graph" / "HCLG.fst"):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("")
    result = subprocess.run([str(steps / "lfmmi.sh"), "--tuned-sets", "dev:test dev_noisy:test_noisy", "--first-only",
                             "false", str(data / "train"), str(exp / "tree_ali"), str(exp / "graph"), str(data),
                             str(exp / "lstm_lfmmi")], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert "--tuned-sets dev:test dev_noisy:test_noisy --prior-scales 1 " in result.stdout
    assert "--first-only false " in result.stdout and "--first-only true" not in result.stdout
    assert "--first-only false\n" in (exp / "lstm_lfmmi" / "log" / "lfmmi.options").read_text()
    refused = subprocess.run([str(steps / "lfmmi.sh"), "--first-only", "no", str(data / "train"), str(exp / "tree_ali"),
                              str(exp / "graph"), str(data), str(exp / "lstm_lfmmi")], capture_output=True, text=True,
                             timeout=60)
    assert refused.returncode == 2 and "--first-only must be true or false, not 'no'" in refused.stderr


def test_the_voicesearch_recipe_trains_lfmmi_multi_style_and_decodes_the_noisy_sets(tmp_path):
    """Stages 19-21 alone, their steps stubbed: LF-MMI from the example server with the CE models' noise styles and
    cross-entropy regularisation, decoded on every dev and test set the CE and sMBR models are (test_noisy too)."""
    steps = _stubbed_steps(tmp_path, "lfmmi.sh", "decode_tuned.sh", "align.sh", "decode_combined.sh",
                           "export_package.sh")
    recipe = tmp_path / "egs" / "voicesearch"
    shutil.copytree(os.path.join(ROOT, "egs", "voicesearch"), recipe,
                    ignore=shutil.ignore_patterns("data", "exp", "*.pyc", "__pycache__"))
    data, exp = tmp_path / "data", tmp_path / "exp"
    for first in ("ce", "smbr"):  # what decode_combined.sh leaves
        chosen = exp / f"wblstm_{first}_lfmmi" / "decode_dev" / "combination_opts"
        chosen.parent.mkdir(parents=True)
        chosen.write_text("--model-acoustic-scale 0.25 --combine-model M --combine-weight 0.6\n")
    environment = _recipe_environment()
    result = subprocess.run([str(recipe / "run.sh"), "--stage", "19", "--stop-stage", "21", "--lfmmi", "true", "--data",
                             str(data), "--exp", str(exp)], capture_output=True, text=True, env=environment,
                            timeout=120)
    assert result.returncode == 0, result.stderr[-3000:]
    calls = [line for line in result.stdout.splitlines() if line.startswith("lfmmi.sh ")]
    assert len(calls) == 1, result.stdout
    call = calls[0]
    assert "--more-opts --example-servers local:1 --server-styles conf/noise_styles.json " in call
    assert "--lfmmi-opts --xent-regularize 0.1 " in call and "--num-epochs 6 " in call  # the CE model's 3 + 3
    assert "--tuned-sets dev:test:train_fit dev_noisy:test_noisy --first-only false " in call
    assert call.endswith(f"{data}/train {exp}/tree_ali {exp}/wblstm_ce/graph {data} {exp}/wblstm_lfmmi")
    # Then its combination with the multi-style CE model (--combine, on by default; --combine-with ce): test at dev's
    # weights, test_noisy at dev_noisy's, and the combination dev chose exported as the recipe's recognizer package.
    _assert_combined_with(result.stdout, exp, "ce")
    # --combine-with smbr: the same with the sMBR model; --lfmmi-epochs gives LF-MMI's epochs.
    result = subprocess.run([str(recipe / "run.sh"), "--stage", "19", "--stop-stage", "21", "--combine-with", "smbr",
                             "--lfmmi-epochs", "4", "--data", str(data), "--exp", str(exp)], capture_output=True,
                            text=True, env=environment, timeout=120)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "--num-epochs 4 " in next(line for line in result.stdout.splitlines() if line.startswith("lfmmi.sh "))
    _assert_combined_with(result.stdout, exp, "smbr")
    refused = subprocess.run([str(recipe / "run.sh"), "--lfmmi-epochs", "many", "--data", str(data), "--exp",
                              str(exp)], capture_output=True, text=True, env=environment, timeout=120)
    assert refused.returncode != 0 and "--lfmmi-epochs takes a whole number, not 'many'" in refused.stderr
    refused = subprocess.run([str(recipe / "run.sh"), "--stage", "20", "--combine-with", "lfmmi", "--data", str(data),
                              "--exp", str(exp)], capture_output=True, text=True, env=environment, timeout=120)
    assert refused.returncode != 0 and "--combine-with must be ce or smbr, not 'lfmmi'" in refused.stderr


def _assert_combined_with(stdout, exp, first):
    """run.sh's stubbed stages 20-21 combined LF-MMI with exp/wblstm_<first> on both dev/test pairs and exported the
    combination dev chose."""
    combined = [line for line in stdout.splitlines() if line.startswith("decode_combined.sh ")]
    assert len(combined) == 2, stdout
    for call, (dev_set, test_set) in zip(combined, (("dev", "test"), ("dev_noisy", "test_noisy"))):
        assert f"--dev-set {dev_set} --test-sets {test_set} " in call
        assert call.endswith(f"{exp}/wblstm_{first} {exp}/wblstm_lfmmi {exp}/wblstm_{first}_lfmmi")
    exported = [line for line in stdout.splitlines() if line.startswith("export_package.sh ")]
    assert len(exported) == 1 and "--model-acoustic-scale 0.25 --combine-model M --combine-weight 0.6" in exported[0]
    assert exported[0].endswith(f"{exp}/wblstm_{first}/final {exp}/wblstm_ce/graph "
                                f"{exp}/wblstm_{first}_lfmmi/decode_dev {exp}/wblstm_{first}_lfmmi/package")


def test_the_voicesearch_recipe_trains_every_acoustic_network_at_the_precision_asked(tmp_path):
    """--precision bf16 reaches the CE trainings of stage 7 (--train-opts), the sMBR training of stage 9
    (--more-opts) and LF-MMI's of stage 19 (--train-opts), their steps stubbed; with fp32 none of them is given a
    precision (the trainers' default); auto, the default, is bf16 where the CPU multiplies it natively and fp32
    elsewhere, where bf16 is refused before any stage runs."""
    steps = _stubbed_steps(tmp_path, "train_tree_and_ce.sh", "train_smbr.sh", "lfmmi.sh")
    recipe = tmp_path / "egs" / "voicesearch"
    shutil.copytree(os.path.join(ROOT, "egs", "voicesearch"), recipe,
                    ignore=shutil.ignore_patterns("data", "exp", "*.pyc", "__pycache__"))
    data, exp = tmp_path / "data", tmp_path / "exp"
    environment = _recipe_environment()

    def run(stage, *options):
        return subprocess.run([str(recipe / "run.sh"), "--stage", str(stage), "--stop-stage", str(stage),
                               "--combine", "false", *options, "--data", str(data), "--exp", str(exp)],
                              capture_output=True, text=True, env=environment, timeout=120)

    native, why_not = bf16_support()
    for stage, step, given in ((7, "train_tree_and_ce.sh", "--train-opts --config conf/train_ce.conf"),
                               (9, "train_smbr.sh", "--more-opts --precision bf16 "),
                               (19, "lfmmi.sh", "--train-opts --config conf/train_ce.conf")):
        for options, bf16 in ((("--precision", "bf16"), True), (("--precision", "fp32"), False), ((), native)):
            result = run(stage, *options)
            if options == ("--precision", "bf16") and not native:
                assert result.returncode == 1 and f"--precision bf16: {why_not}" in result.stderr
                assert not (exp / "log" / f"stage{stage}").exists()
                continue
            assert result.returncode == 0, result.stderr[-3000:]
            call = next(line for line in result.stdout.splitlines() if line.startswith(step + " "))
            if bf16:
                assert given in call and call.count("--precision bf16") == 1, call
            else:
                assert "--precision" not in call, call
            if options != ("--precision", "fp32"):
                assert f"the acoustic networks train in {'bf16' if bf16 else 'fp32'}" in result.stderr
    refused = run(7, "--precision", "fp16")
    assert refused.returncode != 0 and "--precision must be auto, fp32 or bf16, not 'fp16'" in refused.stderr
