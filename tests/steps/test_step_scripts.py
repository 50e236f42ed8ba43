"""The recipe steps (steps/*.sh) as scripts: a usage on wrong arguments, an error naming a missing input, a record
of their options in their output dir; featurize.sh and decode_tuned.sh with their commands stubbed."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from asrkit.decode.synthetic import write_dict_dir
from tests.recognizer.conftest import model_dirs, toy_task  # noqa: F401 (fixtures)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.path.dirname(sys.executable)  # the console scripts (make_lm, mix_lm, ...) beside this Python
STEPS = sorted(name for name in os.listdir(os.path.join(ROOT, "steps"))
               if name.endswith(".sh") and name not in ("parse_options.sh", "common.sh"))

# step -> (its arguments under a directory that holds nothing, the input it must name as missing)
MISSING = {
    "adapt_combined.sh": (["graph", "data", "lstm_smbr", "lstm_lfmmi", "combined", "adapted"], "graph/HCLG.fst"),
    "align.sh": (["data", "lang", "mono1/final", "mono_ali1"], "data/feats.scp"),
    "decode.sh": (["graph", "final", "data/test", "decode_test"], "graph/HCLG.fst"),
    "decode_combined.sh": (["graph", "data", "lstm_smbr", "lstm_lfmmi", "combined"], "data/dev/wav.scp"),
    "decode_tuned.sh": (["graph", "data", "exp/lstm_ce"], "data/dev/wav.scp"),
    "export_package.sh": (["lstm/final", "graph", "lstm/decode_dev", "lstm/package"], "lstm/final"),
    "featurize.sh": (["data/train", "data/dev", "feats"], "data/train/wav.scp"),
    "flat_start.sh": (["data/train", "data/lang", "exp"], "data/train/feats.scp"),
    "kaldi_baseline.sh": (["data", "dict", "test.arpa", "exp"], "dict/lexicon.txt"),
    "lfmmi.sh": (["data/train", "tree_ali", "graph", "data", "lstm_lfmmi"], "data/train/feats.scp"),
    "make_dict.sh": (["data/train/text", "dict"], "data/train/text"),
    "make_lang_and_lms.sh": (["dict", "data/train", "data/dev", "data"], "dict/lexicon.txt"),
    "make_results.sh": (["exp"], "exp"),
    "pocketsphinx_baseline.sh": (["data", "dict", "test.arpa", "pocketsphinx"], "dict/lexicon.txt"),
    "rescore_lm.sh": (["graph", "test.arpa", "fourgram.arpa", "data", "lstm_smbr"], "graph"),
    "select_warps.sh": (["graph", "lstm_smbr/final", "data/dev", "data/test", "warps"], "graph/HCLG.fst"),
    "train_ce.sh": (["data/train", "tree_ali", "lstm_ce"], "data/train/feats.scp"),
    "train_ivectors.sh": (["data/train", "extractor", "ivectors"], "data/train/feats.scp"),
    "train_sat.sh": (["data/train", "ali", "lstm_ce", "lstm_sat"], "data/train/feats.scp"),
    "train_smbr.sh": (["--noise-styles", "styles.json", "data/train", "ali", "lstm_ce", "lang_bigram", "smbr"],
                      "data/train/wav.scp"),
    "train_tree_and_ce.sh": (["--noise-styles", "styles.json", "data/train", "lang", "mono_ali3", "exp"],
                             "data/train/feats.scp"),
    "unsupervised_demo.sh": (["data", "exp"], "data/train/utt2spk"),
}


# What a recipe's path.sh puts first on PATH: the environment's commands and utils/ (utils/acoustic_scale).
RECIPE_PATH = f"{BIN}:{ROOT}/utils:{os.environ['PATH']}"


def run_step(path, *args, cwd=None, env=None):
    return subprocess.run([path, *map(str, args)], capture_output=True, text=True, timeout=60, cwd=cwd, env=env)


def test_every_step_has_a_missing_input_case():
    assert sorted(MISSING) == STEPS


@pytest.mark.parametrize("step", STEPS)
def test_wrong_arguments_print_the_usage(step):
    path = os.path.join(ROOT, "steps", step)
    none = run_step(path)
    assert none.returncode == 1 and f"Usage: steps/{step} [options] <" in none.stderr, none.stderr
    if step not in ("featurize.sh", "make_dict.sh", "select_warps.sh"):  # these take any number of inputs
        too_many = run_step(path, *MISSING[step][0], "extra")
        assert too_many.returncode == 1 and "Usage:" in too_many.stderr
    helped = run_step(path, "--help")
    assert helped.returncode == 0 and helped.stdout.startswith(f"Usage: steps/{step} [options] ")
    assert "Options:" in helped.stdout
    unknown = run_step(path, "--no-such-option", "1", *MISSING[step][0])
    assert unknown.returncode == 2 and "unknown option '--no-such-option'" in unknown.stderr


@pytest.mark.parametrize("step", STEPS)
def test_a_missing_input_is_named(step, tmp_path):
    args, missing = MISSING[step]
    result = run_step(os.path.join(ROOT, "steps", step), *args, cwd=tmp_path)
    assert result.returncode == 1 and f"missing input: {missing}\n" in result.stderr, result.stderr
    # what makes a data dir's features, where those are missing
    assert ("steps/featurize.sh, a recipe's features stage" in result.stderr) == missing.endswith("feats.scp")


def stub(directory, name, body):
    path = directory / name
    path.write_text("#!/bin/bash\n" + body)
    path.chmod(0o755)


def test_featurize_runs_each_set_through_the_launcher_and_records_its_options(make_data_dir, tmp_path):
    commands = tmp_path / "commands"
    commands.mkdir()
    stub(commands, "asrkit-featurize", 'echo "args: $*"; echo "asrkit-featurize summary: status=ok dir=${@: -1}"\n')
    train = make_data_dir({"a-1": 0.3}, name="train")
    dev = make_data_dir({"b-1": 0.3}, name="dev")
    env = {**os.environ, "PATH": f"{commands}:{ROOT}/bin:{os.environ['PATH']}"}
    result = run_step(os.path.join(ROOT, "steps", "featurize.sh"), "--nj", 3, "--feature-opts", "--cmvn-mean speaker",
                      train, dev, tmp_path / "feats", env=env)
    assert result.returncode == 0, result.stderr
    # Each set's summary is shown; the training set alone computes the CMVN statistics.
    assert f"summary: status=ok dir={tmp_path}/feats/train" in result.stderr
    assert f"summary: status=ok dir={tmp_path}/feats/dev" in result.stderr
    train_log = (tmp_path / "feats" / "log" / "featurize_train.log").read_text()
    dev_log = (tmp_path / "feats" / "log" / "featurize_dev.log").read_text()
    assert f"args: --cmvn-mean speaker --nj 3 --compute-cmvn {train} {tmp_path}/feats/train" in train_log
    assert f"args: --cmvn-mean speaker --nj 3 {dev} {tmp_path}/feats/dev" in dev_log
    record = (tmp_path / "feats" / "log" / "featurize.options").read_text().splitlines()
    assert record[0].startswith(f"# {ROOT}/steps/featurize.sh --nj 3 --feature-opts --cmvn-mean\\ speaker ")
    assert record[2:] == ["--cmd run-local", "--nj 3", f"--log-dir {tmp_path}/feats/log", "--feature-opts --cmvn-mean\\ speaker"]


def test_train_sat_fine_tunes_the_model_s_final_into_the_sat_dir_and_records_its_options(make_data_dir, tmp_path):
    commands = tmp_path / "commands"
    commands.mkdir()
    stub(commands, "asrkit-train-sat", 'echo "args: $*"; mkdir -p "${@: -1}"; echo "asrkit-train-sat summary: status=ok"\n')
    train = Path(make_data_dir({"a-1": 0.3, "b-1": 0.3}, name="train"))
    (train / "feats.scp").write_text("")
    (tmp_path / "ali").mkdir()
    (tmp_path / "ali" / "ali.scp").write_text("")
    (tmp_path / "lstm_ce" / "final").mkdir(parents=True)
    env = {**os.environ, "PATH": f"{commands}:{ROOT}/bin:{os.environ['PATH']}"}
    sat_dir = tmp_path / "lstm_sat"
    result = run_step(os.path.join(ROOT, "steps", "train_sat.sh"), "--sat-opts", "--method lhuc --epochs 1", train,
                      tmp_path / "ali", tmp_path / "lstm_ce", sat_dir, env=env)
    assert result.returncode == 0, result.stderr
    assert "asrkit-train-sat summary: status=ok" in result.stderr
    log = (sat_dir / "log" / "train_lstm_sat.log").read_text()
    assert f"args: --method lhuc --epochs 1 {tmp_path}/lstm_ce/final {train} {tmp_path}/ali {sat_dir}/final" in log
    record = (sat_dir / "log" / "train_sat.options").read_text().splitlines()
    assert record[2:] == ["--cmd run-local", f"--log-dir {sat_dir}/log", "--sat-opts --method\\ lhuc\\ --epochs\\ 1"]


def test_rescore_lm_rescores_each_set_at_dev_s_lm_weight_and_names_its_score_by_absolute_path(tmp_path):
    commands = tmp_path / "commands"
    commands.mkdir()
    stub(commands, "asrkit-lattice", 'echo "args: $*"; mkdir -p "${@: -1}"\n')
    stub(commands, "asrkit-score", 'mkdir -p "$3"; echo "%WER 12.50 [ 1 / 8, 0 ins, 0 del, 1 sub ]" > "$3/wer"\n')
    for path in ("graph/HCLG.fst", "test.arpa", "fourgram.arpa", "data/dev/text", "data/test/text",
                 "exp/lstm_smbr/decode_dev/lat.scp", "exp/lstm_smbr/decode_test/lat.scp"):
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text("")
    (tmp_path / "exp" / "lstm_smbr" / "decode_dev" / "best_lmwt").write_text("1.5\n")
    env = {**os.environ, "PATH": f"{commands}:{ROOT}/bin:{os.environ['PATH']}"}
    # Relative paths, as run.sh gives them (--exp exp).
    result = run_step(os.path.join(ROOT, "steps", "rescore_lm.sh"), "--sets", "dev:test", "graph", "test.arpa",
                      "fourgram.arpa", "data", "exp/lstm_smbr", cwd=tmp_path, env=env)
    assert result.returncode == 0, result.stderr
    for split in ("dev", "test"):
        out = tmp_path / "exp" / "lstm_smbr" / f"decode_{split}_rescored"
        assert (out / "best_wer").read_text() == f"%WER 12.50 [ 1 / 8, 0 ins, 0 del, 1 sub ] {out}/score/wer\n"
        log = (tmp_path / "exp" / "lstm_smbr" / "log" / f"rescore_lstm_smbr_{split}.log").read_text()
        assert "--lm-weight 1.5 " in log


# A decoding stub: dev's WER is lowest at prior scale 0.5, its LM weight 4 chosen; any other set scores 30.
DECODE_STUB = """
echo "decode.sh $*" >> "$DECODE_CALLS"
out="${@: -1}"; mkdir -p "$out"
case "$*" in
  *--prior-scale\\ 0.5*) wer=10 ;;
  *) wer=20 ;;
esac
case "$out" in *decode_dev*|*decode_dev_noisy*) echo 4 > "$out/best_lmwt" ;; *) wer=30 ;; esac
echo "%WER $wer [ 1 / 10 ] $out/wer_4" > "$out/best_wer"
"""


def test_decode_tuned_chooses_the_prior_scale_and_lm_weight_on_dev_and_decodes_test_at_them(tmp_path):
    steps = tmp_path / "steps"
    shutil.copytree(os.path.join(ROOT, "steps"), steps)
    stub(steps, "decode.sh", DECODE_STUB)
    data, model = tmp_path / "data", tmp_path / "exp" / "lstm_ce"
    for split in ("dev", "test", "dev_noisy", "test_noisy"):
        (data / split).mkdir(parents=True)
        (data / split / "wav.scp").write_text("u1 a.wav\n")
    (model / "final").mkdir(parents=True)
    (tmp_path / "graph").mkdir()
    (tmp_path / "graph" / "HCLG.fst").write_bytes(b"")
    env = {**os.environ, "DECODE_CALLS": str(tmp_path / "calls"), "PATH": RECIPE_PATH}
    result = run_step(steps / "decode_tuned.sh", "--prior-scales", "1 0.5", "--decode-opts", "--cmvn-online",
                      "--tuned-sets", "dev:test dev_noisy:test_noisy", tmp_path / "graph", data, model, env=env)
    assert result.returncode == 0, result.stderr
    assert (model / "decode_dev" / "prior_scale").read_text() == "0.5\n"
    assert f"{model}/decode_dev/wer_4" in (model / "decode_dev" / "best_wer").read_text()
    assert not list(model.glob("decode_dev_prior*"))
    calls = (tmp_path / "calls").read_text().splitlines()
    test_call = next(call for call in calls if call.endswith(f"{model}/decode_test"))
    assert "--decode-opts --cmvn-online --acoustic-scale 0.25 --prior-scale 0.5 " in test_call
    noisy_dev = next(call for call in calls if call.endswith(f"{model}/decode_dev_noisy"))
    assert "--lmwt-sweep" in noisy_dev and "--prior-scale 0.5" in noisy_dev  # dev's prior scale, its own weight
    assert len(calls) == 5  # dev at two prior scales, test, dev_noisy, test_noisy
    assert "test: %WER 30 " in result.stderr and "(LM weight 4 chosen on dev, prior scale 0.5 on dev)" in result.stderr
    assert "--tuned-sets dev:test\\ dev_noisy:test_noisy" in (model / "log" / "decode_tuned.options").read_text()
    first = run_step(steps / "decode_tuned.sh", "--first-only", "true", "--tuned-sets", "dev:test:train_fit dev_noisy:x",
                     tmp_path / "graph", data, model, env=env)
    assert first.returncode == 0, first.stderr
    assert len((tmp_path / "calls").read_text().splitlines()) == 5 + 2  # dev at prior scale 1, then test only


# A decoding stub for decode_combined.sh: dev's WER is lowest at combination weight 0.5, its LM weight 0.9.
COMBINED_DECODE_STUB = """
echo "decode.sh $*" >> "$DECODE_CALLS"
out="${@: -1}"; mkdir -p "$out"
case "$*" in *--combine-weight\\ 0.5*) wer=10 ;; *) wer=20 ;; esac
case "$out" in *decode_dev*) echo 0.9 > "$out/best_lmwt" ;; *) wer=30 ;; esac
echo "%WER $wer [ 1 / 10 ] $out/wer_0.9" > "$out/best_wer"
case "$*" in *--write-lattices*) echo "u1 $out/lat.1.h5:/u1" > "$out/lat.scp" ;; esac
"""


def test_decode_combined_chooses_the_weights_on_dev_and_decodes_test_at_them(tmp_path):
    steps = tmp_path / "steps"
    shutil.copytree(os.path.join(ROOT, "steps"), steps)
    stub(steps, "decode.sh", COMBINED_DECODE_STUB)
    data, exp = tmp_path / "data", tmp_path / "exp"
    for split in ("dev", "test"):
        (data / split).mkdir(parents=True)
        (data / split / "wav.scp").write_text("u1 a.wav\n")
    for model, lmwt in (("lstm_smbr", "3.5"), ("lstm_lfmmi", "0.75")):
        (exp / model / "final").mkdir(parents=True)
        (exp / model / "decode_dev").mkdir()
        (exp / model / "decode_dev" / "best_lmwt").write_text(lmwt + "\n")
    (exp / "lstm_smbr" / "decode_dev" / "prior_scale").write_text("0.5\n")
    (tmp_path / "graph").mkdir()
    (tmp_path / "graph" / "HCLG.fst").write_bytes(b"")
    env = {**os.environ, "DECODE_CALLS": str(tmp_path / "calls"), "PATH": RECIPE_PATH}
    combined = exp / "combined"
    result = run_step(steps / "decode_combined.sh", "--combine-weights", "0.3 0.5 0.7", "--decode-opts",
                      "--cmvn-online --write-lattices", tmp_path / "graph", data, exp / "lstm_smbr", exp / "lstm_lfmmi",
                      combined, env=env)
    assert result.returncode == 0, result.stderr
    assert (combined / "decode_dev" / "combine_weight").read_text() == "0.5\n"
    assert (combined / "decode_dev" / "combination_opts").read_text() == \
        f"--model-acoustic-scale {1 / 3.5!r} --prior-scale 0.5 --combine-model {exp}/lstm_lfmmi/final " \
        f"--combine-acoustic-scale {1 / 0.75!r} --combine-prior-scale 1 --combine-weight 0.5\n"
    assert (combined / "decode_dev" / "combine_weight_wers").read_text() == "0.3 20\n0.5 10\n0.7 20\n"
    assert f"{combined}/decode_dev/wer_0.9" in (combined / "decode_dev" / "best_wer").read_text()
    # The lattices' table names the dir the chosen weight's decode was moved to (what steps/adapt_combined.sh reads).
    assert (combined / "decode_dev" / "lat.scp").read_text() == f"u1 {combined}/decode_dev/lat.1.h5:/u1\n"
    assert not list(combined.glob("decode_dev_w*"))
    calls = (tmp_path / "calls").read_text().splitlines()
    assert len(calls) == 4  # dev at three weights, then test
    own = (f"--model-acoustic-scale {1 / 3.5!r} --prior-scale 0.5 --combine-model {exp}/lstm_lfmmi/final "
           f"--combine-acoustic-scale {1 / 0.75!r} --combine-prior-scale 1")
    assert all(f"--decode-opts --cmvn-online --write-lattices {own} " in " ".join(call.split()) for call in calls)
    assert "--lmwt-sweep" in calls[0] and "--combine-weight 0.3" in calls[0]
    assert calls[3].endswith(f"{exp}/lstm_smbr/final {data}/test {combined}/decode_test")
    assert f"--combine-weight 0.5 --acoustic-scale {1 / 0.9!r} " in calls[3] and "--lmwt-sweep" not in calls[3]
    assert "(combination weight 0.5 and LM weight 0.9 chosen on dev)" in result.stderr
    assert "--combine-weights 0.3\\ 0.5\\ 0.7" in (combined / "log" / "decode_combined.options").read_text()
    bad = run_step(steps / "decode_combined.sh", "--combine-weights", "0.5 1.5", tmp_path / "graph", data,
                   exp / "lstm_smbr", exp / "lstm_lfmmi", tmp_path / "bad", env=env)
    assert bad.returncode != 0 and "--combine-weights: 1.5 is not a number in [0, 1]" in bad.stderr


ADAPT_LAUNCHER = """
log="$1"; shift
echo "launch $*" >> "$DECODE_CALLS"
mkdir -p "$(dirname "$log")" "${@: -1}"
echo "asrkit-adapt summary: status=ok" > "$log"
"""


def test_adapt_combined_adapts_the_first_model_or_both_to_each_set_and_decodes_test_at_dev_s_weight(tmp_path):
    steps = tmp_path / "steps"
    shutil.copytree(os.path.join(ROOT, "steps"), steps)
    stub(steps, "decode.sh", COMBINED_DECODE_STUB)
    stub(tmp_path, "launcher", ADAPT_LAUNCHER)
    data, exp = tmp_path / "data", tmp_path / "exp"
    combined = exp / "combined"
    for split in ("dev", "test"):
        (data / split).mkdir(parents=True)
        (data / split / "wav.scp").write_text("u1 a.wav\n")
        (combined / f"decode_{split}").mkdir(parents=True)
        (combined / f"decode_{split}" / "best_wer").write_text(f"%WER 40 [ 4 / 10 ] {split}\n")
    (combined / "decode_dev" / "combination_opts").write_text("--combine-model x/final --combine-weight 0.5\n")
    for model in ("lstm_smbr", "lstm_lfmmi"):
        (exp / model / "final").mkdir(parents=True)
    (tmp_path / "graph").mkdir()
    (tmp_path / "graph" / "HCLG.fst").write_bytes(b"")
    env = {**os.environ, "DECODE_CALLS": str(tmp_path / "calls"), "PATH": RECIPE_PATH}
    args = [tmp_path / "graph", data, exp / "lstm_smbr", exp / "lstm_lfmmi", combined, exp / "adapted"]
    no_lattices = run_step(steps / "adapt_combined.sh", "--cmd", tmp_path / "launcher", *args, env=env)
    assert no_lattices.returncode == 1 and "decode_dev has no lattices" in no_lattices.stderr
    for split in ("dev", "test"):
        (combined / f"decode_{split}" / "lat.scp").write_text("")
    first = run_step(steps / "adapt_combined.sh", "--cmd", tmp_path / "launcher", *args, env=env)
    assert first.returncode == 0, first.stderr
    calls = (tmp_path / "calls").read_text().splitlines()
    adapted = exp / "adapted"
    assert [call.split()[-1] for call in calls if call.startswith("launch")] == [
        f"{adapted}/adapt_lstm_smbr_dev", f"{adapted}/adapt_lstm_smbr_test"]
    decodes = [" ".join(call.split()) for call in calls if call.startswith("decode.sh")]
    assert f"--combine-weight 0.5 --speaker-models {adapted}/adapt_lstm_smbr_test --acoustic-scale" in decodes[1]
    assert "--combine-speaker-models" not in " ".join(decodes)
    (tmp_path / "calls").unlink()
    args[-1] = adapted = exp / "adapted_all"
    result = run_step(steps / "adapt_combined.sh", "--cmd", tmp_path / "launcher", "--adapt-opts", "--iterations 4",
                      "--networks", "all", *args, env=env)
    assert result.returncode == 0, result.stderr
    calls = (tmp_path / "calls").read_text().splitlines()
    assert [call.split()[-1] for call in calls if call.startswith("launch")] == [
        f"{adapted}/adapt_lstm_smbr_dev", f"{adapted}/adapt_lstm_lfmmi_dev", f"{adapted}/adapt_lstm_smbr_test",
        f"{adapted}/adapt_lstm_lfmmi_test"]
    assert f"asrkit-adapt --graph {tmp_path}/graph --iterations 4 {exp}/lstm_lfmmi/final {data}/test " \
        f"{combined}/decode_test" in \
        " ".join(calls[4].replace("\\", "").split())
    decodes = [" ".join(call.split()) for call in calls if call.startswith("decode.sh")]
    assert len(decodes) == 2 and "--lmwt-sweep" in decodes[0] and f"--acoustic-scale {1 / 0.9!r} " in decodes[1] + " "
    assert f"--combine-model x/final --combine-weight 0.5 --speaker-models {adapted}/adapt_lstm_smbr_test " \
        f"--combine-speaker-models {adapted}/adapt_lstm_lfmmi_test" in decodes[1]
    assert "test: %WER 30" in result.stderr and "the first pass: %WER 40" in result.stderr
    wrong = run_step(steps / "adapt_combined.sh", "--networks", "second", *args, env=env)
    assert wrong.returncode != 0 and "--networks must be first or all" in wrong.stderr


def test_make_lang_and_lms_mixes_a_general_lm_over_a_larger_decoding_vocabulary(tmp_path):
    """--mix-lm and --decoding-dict with the real commands: the decoding LM is the transcripts' trigram mixed with
    the general LM over the decoding dictionary's words (lang_decode), pruned into lang_test; the bigram of
    sequence training keeps the training dictionary."""
    train_words = {"BAT": ["B", "AA", "T"], "CAT": ["K", "AA", "T"], "TEA": ["T", "IY"]}
    write_dict_dir(str(tmp_path / "dict"), train_words)
    write_dict_dir(str(tmp_path / "dict_test"), {**train_words, "BEAT": ["B", "IY", "T"], "BE": ["B", "IY"]})
    for split, lines in (("train", ["BAT CAT TEA", "CAT TEA", "TEA BAT"]), ("dev", ["BE BAT", "CAT BEAT TEA"])):
        (tmp_path / "data" / split).mkdir(parents=True)
        (tmp_path / "data" / split / "text").write_text(
            "".join(f"{split}-{n} {line}\n" for n, line in enumerate(lines)))
    general = tmp_path / "general.txt"
    general.write_text("be a bat\nbeat the cat\nbe tea\ncat tea\n")
    made = subprocess.run([os.path.join(BIN, "make_lm"), "--order", "2", str(general), str(tmp_path / "general.arpa")],
                          capture_output=True, text=True)
    assert made.returncode == 0, made.stderr
    env = {**os.environ, "PATH": f"{BIN}:{ROOT}/bin:{os.environ['PATH']}"}
    data = tmp_path / "data"
    result = run_step(os.path.join(ROOT, "steps", "make_lang_and_lms.sh"), "--decoding-dict", tmp_path / "dict_test",
                      "--mix-lm", tmp_path / "general.arpa", "--mix-lm-opts", "--case upper", "--lm-prune", "1e-9",
                      "--fourgram", "false", tmp_path / "dict", data / "train", data / "dev", data, env=env)
    assert result.returncode == 0, result.stderr
    lm_dir = data / "local" / "lm"
    mix_log = (lm_dir / "log" / "mix_lm.log").read_text()
    assert "mix_lm summary: status=ok" in mix_log and "general.arpa" in mix_log
    decode_words = (data / "lang_decode" / "words.txt").read_text().split()
    assert "BEAT" in decode_words and "BEAT" not in (data / "lang" / "words.txt").read_text().split()
    assert (data / "lang_test" / "words.txt").read_text() == (data / "lang_decode" / "words.txt").read_text()
    assert (data / "lang_bigram" / "words.txt").read_text() == (data / "lang" / "words.txt").read_text()
    assert (lm_dir / "test.arpa").read_text() == (data / "lang_test" / "G.arpa").read_text()
    assert " BEAT" in (lm_dir / "test.arpa").read_text()  # the general LM's word, now in the decoding LM
    record = (lm_dir / "log" / "make_lang_and_lms.options").read_text()
    assert f"--mix-lm {tmp_path}/general.arpa" in record and "--mix-lm-opts --case\\ upper" in record
    both = run_step(os.path.join(ROOT, "steps", "make_lang_and_lms.sh"), "--decoding-lm", tmp_path / "general.arpa",
                    "--mix-lm", tmp_path / "general.arpa", tmp_path / "dict", data / "train", data / "dev", data,
                    env=env)
    assert both.returncode == 1 and "give --decoding-lm or --mix-lm, not both" in both.stderr


def test_make_lang_and_lms_learns_sequence_training_s_bigram_from_the_acoustic_training_set(tmp_path):
    """--bigram-train-dir: lang_bigram's LM learns the acoustic training set's word pairs (another corpus's
    lines among them), the decoding trigram only <train-dir>'s; without the option both learn <train-dir>'s."""
    write_dict_dir(str(tmp_path / "dict"), {"BAT": ["B", "AA", "T"], "CAT": ["K", "AA", "T"], "TEA": ["T", "IY"]})
    for split, lines in (("train", ["BAT CAT", "CAT BAT"]), ("dev", ["BAT CAT"]),
                         ("train_combined", ["BAT CAT", "CAT BAT", "TEA TEA TEA"])):
        (tmp_path / "data" / split).mkdir(parents=True)
        (tmp_path / "data" / split / "text").write_text(
            "".join(f"{split}-{n} {line}\n" for n, line in enumerate(lines)))
    env = {**os.environ, "PATH": f"{BIN}:{ROOT}/bin:{os.environ['PATH']}"}
    data = tmp_path / "data"
    lm_dir = data / "local" / "lm"

    def bigrams(arpa):
        text = arpa.read_text()
        return text[text.index("\\2-grams:"):]

    for option, teas_in_bigram in (([], False), (["--bigram-train-dir", data / "train_combined"], True)):
        result = run_step(os.path.join(ROOT, "steps", "make_lang_and_lms.sh"), *option, "--fourgram", "false",
                          tmp_path / "dict", data / "train", data / "dev", data, env=env)
        assert result.returncode == 0, result.stderr
        assert ("TEA TEA" in bigrams(lm_dir / "bigram.arpa")) == teas_in_bigram
        assert "TEA TEA" not in bigrams(lm_dir / "test.arpa")
    assert f"--bigram-train-dir {data}/train_combined" in (lm_dir / "log" / "make_lang_and_lms.options").read_text()
    missing = run_step(os.path.join(ROOT, "steps", "make_lang_and_lms.sh"), "--bigram-train-dir", data / "nowhere",
                       tmp_path / "dict", data / "train", data / "dev", data, env=env)
    assert missing.returncode != 0 and "nowhere/text" in missing.stderr


def test_make_dict_passes_frequent_apostrophes_and_records_it(tmp_path):
    (tmp_path / "cmudict.txt").write_text("THE  DH AH0\nDON'T  D OW1 N T\nIT'S  IH1 T S\n")
    (tmp_path / "text").write_text("utt1 THE\n")
    env = {**os.environ, "PATH": f"{BIN}:{ROOT}/bin:{os.environ['PATH']}"}
    result = run_step(os.path.join(ROOT, "steps", "make_dict.sh"), "--frequent-words", 3, "--frequent-apostrophes",
                      "true", "--pronunciations", tmp_path / "cmudict.txt", tmp_path / "text", tmp_path / "dict",
                      env=env)
    assert result.returncode == 0, result.stderr
    words = {line.split()[0] for line in (tmp_path / "dict" / "lexicon.txt").read_text().splitlines()}
    assert {"THE", "DON'T", "IT'S"} <= words
    assert "--frequent-apostrophes true" in (tmp_path / "dict" / "log" / "make_dict.options").read_text()


# A featurization stub, and a decoding stub whose cost per frame is lowest for speaker a at 1.1 and b at 0.95.
FEATURIZE_STUB = 'echo "featurize.sh $*" >> "$CALLS"; echo "asrkit-featurize summary: status=ok"\n'
WARP_DECODE_STUB = """
echo "decode $*" >> "$CALLS"
out="${@: -1}"; data="${@: -2:1}"; mkdir -p "$out"
awk 'NR == FNR { warp[$1] = $2; next }
     { speaker = $2; sub(/^w[0-9.]+-/, "", speaker); target = (speaker == "a") ? 1.1 : 0.95
       d = warp[$2] - target; if (d < 0) d = -d
       printf "%s ok 10 0 0 %.4f 13\\n", $1, -10 + 100 * d }' "$data/spk2warp" "$data/utt2spk" > "$out/costs.txt"
echo "asrkit-decode summary: status=ok"
"""


def warp_commands(tmp_path):
    """A directory of stub asrkit-featurize and asrkit-decode for select_warps.sh."""
    commands = tmp_path / "commands"
    commands.mkdir()
    stub(commands, "asrkit-featurize", FEATURIZE_STUB)
    stub(commands, "asrkit-decode", WARP_DECODE_STUB)
    return commands


def test_select_warps_decodes_the_first_utterances_of_each_speaker_under_each_factor(make_data_dir, tmp_path):
    commands = warp_commands(tmp_path)
    dev = make_data_dir({"a-1": 0.2, "a-2": 0.2, "a-3": 0.2}, name="dev")
    test = make_data_dir({"b-1": 0.2}, name="test")
    (tmp_path / "graph").mkdir()
    (tmp_path / "graph" / "HCLG.fst").write_text("")
    (tmp_path / "final").mkdir()
    env = {**os.environ, "PATH": f"{commands}:{ROOT}/bin:{BIN}:{os.environ['PATH']}", "CALLS": str(tmp_path / "calls")}
    result = run_step(os.path.join(ROOT, "steps", "select_warps.sh"), "--warps", "0.95 1 1.1", "--utts-per-speaker", 2,
                      "--feature-opts", "--cmvn-mean speaker", "--decode-opts", "--acoustic-scale 0.25",
                      tmp_path / "graph", tmp_path / "final", dev, test, tmp_path / "work", env=env)
    assert result.returncode == 0, result.stderr
    assert open(os.path.join(dev, "spk2warp")).read() == "a 1.1\n"
    assert open(os.path.join(test, "spk2warp")).read() == "b 0.95\n"
    assert "dev: 1.1 x 1 speakers" in result.stderr and "test: 0.95 x 1 speakers" in result.stderr
    # The first 2 of each speaker, both sets and every factor decoded together (ids prefixed by the factor): one
    # featurization and one decoding.
    warped = tmp_path / "work" / "warped"
    assert (warped / "utt2spk").read_text().splitlines() == [
        f"w{f}-{utt} w{f}-{utt[0]}" for f in ("0.95", "1", "1.1") for utt in ("a-1", "a-2", "b-1")]
    assert (warped / "spk2warp").read_text().splitlines() == [f"w{f}-{spk} {f}" for f in ("0.95", "1", "1.1")
                                                              for spk in "ab"]
    calls = (tmp_path / "calls").read_text().splitlines()
    assert calls == [f"featurize.sh --cmvn-mean speaker --nj 2 {warped} {warped}/feats",
                     f"decode --acoustic-scale 0.25 --no-lmwt-sweep --nj 2 {tmp_path}/graph {tmp_path}/final "
                     f"{warped} {warped}/decode"]
    # Each factor's costs are read back under the utterances' own ids.
    costs = (tmp_path / "work" / "w1.1" / "decode" / "costs.txt").read_text().splitlines()
    assert [line.split()[0] for line in costs] == ["a-1", "a-2", "b-1"] and costs[0].split()[5] == "-10.0000"
    assert "-1.0000*" in (tmp_path / "work" / "log" / "choose_warps_dev.log").read_text()
    assert (tmp_path / "work" / "log" / "select_warps.options").exists()


def test_select_warps_works_on_a_single_data_dir(make_data_dir, tmp_path):
    """One set of one's own to warp: its subset is combined alone (utils/combine_data takes one dir, as Kaldi's)."""
    commands = warp_commands(tmp_path)
    dev = make_data_dir({"a-1": 0.2, "a-2": 0.2, "b-1": 0.2}, name="dev")
    (tmp_path / "graph").mkdir()
    (tmp_path / "graph" / "HCLG.fst").write_text("")
    (tmp_path / "final").mkdir()
    env = {**os.environ, "PATH": f"{commands}:{ROOT}/bin:{BIN}:{os.environ['PATH']}", "CALLS": str(tmp_path / "calls")}
    result = run_step(os.path.join(ROOT, "steps", "select_warps.sh"), "--warps", "0.95 1 1.1", tmp_path / "graph",
                      tmp_path / "final", dev, tmp_path / "work", env=env)
    assert result.returncode == 0, result.stderr
    assert open(os.path.join(dev, "spk2warp")).read() == "a 1.1\nb 0.95\n"
    assert (tmp_path / "work" / "subset" / "utt2spk").read_text() == "a-1 a\na-2 a\nb-1 b\n"


def test_export_package_tunes_the_package_s_lm_weight_on_the_dev_data_it_is_given(model_dirs, toy_task,  # noqa: F811
                                                                                  tmp_path):
    from tests.recognizer.test_tuning import write_data_dir

    dev = write_data_dir(str(tmp_path / "data" / "dev"), count=2)
    (tmp_path / "data" / "dev" / "text").write_text("rec0 ECHO\nrec1 ECHO DELTA\n")
    decode_dir = tmp_path / "exp" / "decode_dev"
    decode_dir.mkdir(parents=True)
    (decode_dir / "best_lmwt").write_text("2\n")
    package = tmp_path / "exp" / "package"
    env = {**os.environ, "PATH": f"{ROOT}/bin:{RECIPE_PATH}"}  # bin/run-local, the launcher
    args = [model_dirs["wblstm"], toy_task["graph"], decode_dir, package]
    missing = run_step(os.path.join(ROOT, "steps", "export_package.sh"), "--tune-data", tmp_path / "none", *args,
                       env=env)
    assert missing.returncode == 1 and f"missing input: {tmp_path}/none/wav.scp" in missing.stderr
    result = run_step(os.path.join(ROOT, "steps", "export_package.sh"), "--tune-data", dev, "--tune-opts",
                      "--min-lmwt 1 --max-lmwt 3 --lmwt-step 1", *args, env=env)
    assert result.returncode == 0, result.stderr
    tuned = tmp_path / "exp" / "package_tuning_dev"
    assert sorted(path.name for path in tuned.glob("wer_*")) == ["wer_1", "wer_2", "wer_3"]
    decode = json.loads((package / "decode.json").read_text())
    assert decode["lm_weight"] == float((tuned / "best_lmwt").read_text()) and decode["chosen_on"] == str(tuned)
    log_dir = tmp_path / "exp" / "log"  # beside the package, which asrkit-export replaces whole
    assert "asrkit-tune-package summary: status=ok utterances=2" in (log_dir / "tune_dev.log").read_text()
    assert "package tuned on dev as it hears it: %WER " in result.stderr and "the dev decode's 2)" in result.stderr
    assert "--tune-data" in (package / "log" / "export_package.options").read_text()
