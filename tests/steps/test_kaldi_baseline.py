"""The Kaldi baseline: steps/kaldi_baseline.sh's arguments and its calls of Kaldi's scripts (stubbed: no Kaldi is
built here), steps/kaldi_data.py's WAV copies of a data dir, steps/kaldi_results.py's reading of Kaldi's scoring
output (hand-written in Kaldi's formats), bin/build-kaldi's refusals, and the rows steps/make_results.py prints."""

import argparse
import os
import re
import subprocess
import sys

import numpy as np
import pytest
import soundfile

from asrkit.errors import AsrkitError

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
STEPS = os.path.join(ROOT, "steps")
STEP = os.path.join(STEPS, "kaldi_baseline.sh")
BUILD = os.path.join(ROOT, "bin", "build-kaldi")
if STEPS not in sys.path:
    sys.path.insert(0, STEPS)

import kaldi_data  # noqa: E402  (steps/)
import kaldi_results  # noqa: E402  (steps/)

# What kaldi_baseline.sh checks a Kaldi root for before it runs anything.
KALDI_FILES = ("src/featbin/compute-mfcc-feats", "src/gmmbin/gmm-latgen-faster", "src/latbin/lattice-best-path",
               "src/bin/compute-wer", "src/fstbin/fsttablecompose", "src/lmbin/arpa2fst", "tools/openfst/bin/fstcompile")
# Kaldi's scripts as stubs: each call is logged, and each leaves what the next one reads.  The decodings' scoring
# transcripts are the reference at one (LMWT, WIP) and short of a word at the others: dev is exact at LMWT 8 and
# penalty 0.5, test at LMWT 7 and penalty 0.0 (which test must not be read at).
KALDI_SCRIPT_STUB = r"""#!/bin/bash
echo "$(basename "$0") $*" >> "$KALDI_CALLS"
last="${@: -1}"
case "$(basename "$0")" in
  make_mfcc.sh)
    data="${@: -3:1}"
    awk '{ print $1, 1800 }' "$data/utt2spk" > "$data/utt2dur" ;;
  subset_data_dir.sh)
    mkdir -p "$last"
    head -n "${@: -2:1}" "${@: -3:1}/utt2spk" > "$last/utt2spk"
    awk '{ utts[$2] = utts[$2] " " $1 } END { for (s in utts) print s utts[s] }' "$last/utt2spk" | sort > "$last/spk2utt" ;;
  decode.sh|decode_fmllr.sh)
    data="${@: -2:1}"
    exact="8 0.5"
    [ "$(basename "$data")" != test ] || exact="7 0.0"
    for wip in 0.0 0.5; do
      mkdir -p "$last/scoring_kaldi/penalty_$wip"
      for lmwt in 7 8; do
        if [ "$lmwt $wip" = "$exact" ]; then cp "$data/text" "$last/scoring_kaldi/penalty_$wip/$lmwt.txt"
        else awk '{ NF--; print }' "$data/text" > "$last/scoring_kaldi/penalty_$wip/$lmwt.txt"; fi
      done
    done
    printf '%%WER 0.00 [ 0 / 9, 0 ins, 0 del, 0 sub ]\n%%SER 0.00 [ 0 / 2 ]\nScored 2 sentences, 0 not present in hyp.\n' \
      > "$last/wer_8_0.5" ;;
  *) mkdir -p "$last" ;;
esac
"""
KALDI_SCRIPTS = ("steps/make_mfcc.sh", "steps/compute_cmvn_stats.sh", "steps/train_mono.sh", "steps/train_deltas.sh",
                 "steps/train_lda_mllt.sh", "steps/train_sat.sh", "steps/align_si.sh", "steps/decode.sh",
                 "steps/decode_fmllr.sh", "utils/prepare_lang.sh", "utils/format_lm.sh", "utils/mkgraph.sh",
                 "utils/subset_data_dir.sh")
# A launcher (cmd.sh's interface): the command in bash, its output in the log.
LAUNCHER = """#!/bin/bash
mkdir -p "$(dirname "$1")"
bash -c "$2" > "$1" 2>&1 || { tail "$1" >&2; exit 1; }
"""
TEXT = {"a-1": "HELLO WORLD", "a-2": "GOOD MORNING", "b-1": "HELLO THERE", "c-1": "GOOD WORLD",
        "d-1": "HELLO GOOD WORLD", "d-2": "THERE MORNING", "e-1": "GOOD THERE", "f-1": "WORLD HELLO MORNING"}
DICT = {"lexicon.txt": "!SIL SIL\n<UNK> SPN\nGOOD G UH D\nHELLO HH AH L OW\n", "silence_phones.txt": "SIL\nSPN\n",
        "nonsilence_phones.txt": "AH\nD\nG\nHH\nL\nOW\nUH\n", "optional_silence.txt": "SIL\n",
        "extra_questions.txt": "SIL SPN\n"}


def executable(path, body):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as handle:
        handle.write(body)
    os.chmod(path, 0o755)


def fake_kaldi(root, leave_out=None):
    """A Kaldi root with KALDI_FILES (empty programs) and stubs of the scripts kaldi_baseline.sh calls."""
    for name in KALDI_FILES:
        if name != leave_out:
            executable(os.path.join(root, name), "#!/bin/sh\n")
    for name in KALDI_SCRIPTS:
        executable(os.path.join(root, "egs", "wsj", "s5", name), KALDI_SCRIPT_STUB)
    executable(os.path.join(root, "tools", "config", "common_path.sh"), "")
    return str(root)


def recipe_inputs(tmp_path, make_data_dir):
    """data/{train,dev,test} (a train utterance as MP3), data/local/dict, an ARPA file: the step's inputs."""
    (tmp_path / "data").mkdir()
    for split, utts in (("train", ("a-1", "a-2", "b-1", "c-1")), ("dev", ("d-1", "d-2")), ("test", ("e-1", "f-1"))):
        make_data_dir({utt: 0.4 for utt in utts}, name=f"data/{split}", text={utt: TEXT[utt] for utt in utts})
    mp3 = tmp_path / "a-2.mp3"
    soundfile.write(mp3, soundfile.read(tmp_path / "data" / "train_wav" / "a-2.wav")[0], 16000, format="MP3")
    wav_scp = tmp_path / "data" / "train" / "wav.scp"
    wav_scp.write_text(wav_scp.read_text().replace(str(tmp_path / "data" / "train_wav" / "a-2.wav"), str(mp3)))
    dict_dir = tmp_path / "data" / "local" / "dict"
    dict_dir.mkdir(parents=True)
    for name, content in DICT.items():
        (dict_dir / name).write_text(content)
    (tmp_path / "test.arpa").write_text("\\data\\\nngram 1=1\n\n\\1-grams:\n-1.0 HELLO\n\n\\end\\\n")
    return tmp_path / "data", dict_dir, tmp_path / "test.arpa"


def run_step(*args, cwd=None, env=None):
    environment = {key: value for key, value in os.environ.items() if key != "KALDI_ROOT"}
    environment["PATH"] = f"{os.path.dirname(sys.executable)}:{environment['PATH']}"  # python: this one
    environment.update(env or {})
    return subprocess.run([STEP, *map(str, args)], capture_output=True, text=True, timeout=300, cwd=cwd,
                          env=environment)


def test_a_kaldi_root_without_its_binaries_is_named_before_anything_runs(tmp_path, make_data_dir):
    data, dict_dir, arpa = recipe_inputs(tmp_path, make_data_dir)
    required = run_step(data, dict_dir, arpa, tmp_path / "exp")
    assert required.returncode == 2 and "--kaldi-root is required (or KALDI_ROOT" in required.stderr
    empty = run_step("--kaldi-root", tmp_path / "kaldi", data, dict_dir, arpa, tmp_path / "exp")
    assert empty.returncode == 1, empty.stderr
    assert (f"--kaldi-root {tmp_path}/kaldi is not a built Kaldi: egs/wsj/s5/steps/train_sat.sh is missing (build it "
            f"with bin/build-kaldi {tmp_path}/kaldi)") in empty.stderr
    unbuilt = fake_kaldi(tmp_path / "unbuilt", leave_out="src/lmbin/arpa2fst")
    partial = run_step(data, dict_dir, arpa, tmp_path / "exp", env={"KALDI_ROOT": unbuilt})
    assert partial.returncode == 1 and "is not a built Kaldi: src/lmbin/arpa2fst is missing" in partial.stderr
    assert not (tmp_path / "exp").exists()


@pytest.mark.parametrize("options, message", [
    (["--decode-systems", "mono tri4"], "--decode-systems: no system 'tri4' (one of: mono tri1 tri2b tri3b)"),
    (["--tri1-size", "2000"], "a system's size is 'LEAVES GAUSSIANS', not '2000'"),
    (["--size-hours", "five"], "--size-hours takes a number of hours, not 'five'"),
    (["--nj", "0"], "--nj must be at least 1, not 0"),
    (["--tuned-sets", " "], "--tuned-sets names no set"),
])
def test_a_wrong_option_value_is_named(tmp_path, options, message):
    result = run_step(*options, "data", "dict", "test.arpa", "exp", cwd=tmp_path)
    assert result.returncode == 2 and message in result.stderr, result.stderr


def test_the_pipeline_calls_kaldi_s_scripts_in_its_work_dir_and_scores_them_with_asrkit(tmp_path, make_data_dir):
    data, dict_dir, arpa = recipe_inputs(tmp_path, make_data_dir)
    kaldi = fake_kaldi(tmp_path / "kaldi")
    executable(tmp_path / "launcher", LAUNCHER)
    calls, exp = tmp_path / "calls", tmp_path / "exp"
    result = run_step("--cmd", tmp_path / "launcher", "--kaldi-root", kaldi, "--sample-rate", 8000, "--mono-utts", 2,
                      "--decode-systems", "mono tri3b", data, dict_dir, arpa, exp, env={"KALDI_CALLS": str(calls)})
    assert result.returncode == 0, result.stderr
    work = exp / "kaldi_work"
    assert os.readlink(work / "steps") == f"{kaldi}/egs/wsj/s5/steps"
    assert os.readlink(work / "local" / "score.sh") == f"{kaldi}/egs/wsj/s5/steps/score_kaldi.sh"
    assert (work / "conf" / "mfcc.conf").read_text() == "--use-energy=false\n--sample-frequency=8000\n"
    # Every set's audio, the MP3 too, as 16-bit WAV at the rate asked for, which Kaldi's data dir names.
    info = soundfile.info(work / "wav" / "train" / "a-2.wav")
    assert (info.samplerate, info.subtype) == (8000, "PCM_16")
    assert (work / "data" / "train" / "wav.scp").read_text().splitlines()[1] == f"a-2 {work}/wav/train/a-2.wav"
    assert (work / "data" / "dev" / "text").read_text() == "d-1 HELLO GOOD WORLD\nd-2 THERE MORNING\n"
    assert (work / "data" / "local" / "lm" / "lm.arpa.gz").exists()
    lines = [" ".join(line.split()) for line in calls.read_text().splitlines()]
    assert lines[:2] == ["prepare_lang.sh data/local/dict <UNK> data/local/lang_tmp data/lang",
                         "format_lm.sh data/lang data/local/lm/lm.arpa.gz data/local/dict/lexicon.txt data/lang_test"]
    assert "make_mfcc.sh --nj 2 --cmd run.pl data/train exp/make_mfcc/train mfcc" in lines
    assert "subset_data_dir.sh --shortest data/train 2 data/train_mono" in lines
    # 4 training utterances of 1800 s (the stub's utt2dur): 2 of --size-hours 5, so the sizes are scaled by 0.4.
    assert "train_mono.sh --boost-silence 1.25 --nj 1 --cmd run.pl --totgauss 400 data/train_mono data/lang " \
           "exp/mono" in lines
    assert "train_deltas.sh --boost-silence 1.25 --cmd run.pl 800 4000 data/train data/lang exp/mono_ali exp/tri1" \
           in lines
    assert "train_lda_mllt.sh --cmd run.pl --splice-opts --left-context=3 --right-context=3 1000 6000 data/train " \
           "data/lang exp/tri1_ali exp/tri2b" in lines
    assert "align_si.sh --nj 2 --cmd run.pl --use-graphs true data/train data/lang exp/tri2b exp/tri2b_ali" in lines
    # Jobs never outnumber a set's speakers: dev has one.
    assert "decode.sh --nj 1 --cmd run.pl --scoring-opts exp/mono/graph data/dev exp/mono/decode_dev" in lines
    assert "decode_fmllr.sh --nj 2 --cmd run.pl --scoring-opts exp/tri3b/graph data/test exp/tri3b/decode_test" \
           in lines
    assert not any("exp/tri1/graph" in line or "exp/tri2b/graph" in line for line in lines)
    for system in ("mono", "tri3b"):
        dev, test = exp / f"kaldi_{system}" / "decode_dev", exp / f"kaldi_{system}" / "decode_test"
        assert (dev / "best_lmwt").read_text() == "8\n" and (dev / "best_wip").read_text() == "0.5\n"
        assert (dev / "best_wer").read_text().startswith("%WER 0.00 [ 0 / 5, ")
        # test at dev's weight and penalty, where the stub's test transcripts lack a word each, not at its best.
        assert (test / "chosen_on").read_text() == f"8 0.5 {dev}\n" and not (test / "best_lmwt").exists()
        assert (test / "best_wer").read_text().startswith("%WER 40.00 [ 2 / 5, 0 ins, 2 del, 0 sub ]")
        assert (test / "score" / "per_spk").exists()
        phases = [line.split()[0] for line in (exp / f"kaldi_{system}" / "times").read_text().splitlines()]
        assert phases == {"mono": ["train", "align", "graph", "decode_dev", "decode_test"],
                          "tri3b": ["train", "graph", "decode_dev", "decode_test"]}[system]
    assert "kaldi_tri3b test: %WER 40.00" in result.stderr and "chosen on dev)" in result.stderr
    assert "--decode-systems mono\\ tri3b" in (work / "log" / "kaldi_baseline.options").read_text()
    table = subprocess.run([sys.executable, os.path.join(STEPS, "make_results.py"), str(exp)], capture_output=True,
                           text=True, check=True).stdout
    assert "# kaldi_tri3b: SAT triphone GMM (LDA+MLLT, per-speaker fMLLR in training and decoding), Kaldi's" in table
    rows = {line.split()[1]: line.split()[2:] for line in table.splitlines() if line.startswith("# kaldi_")}
    assert rows["kaldi_mono"] == ["0.00", "40.00"] and rows["kaldi_tri3b"] == ["0.00", "40.00"]
    assert "# LM weight chosen on dev: kaldi_mono dev 8; kaldi_tri3b dev 8\n" in table
    seconds = next(line for line in table.splitlines() if line.startswith("# Kaldi's seconds here"))
    assert re.fullmatch(r"# Kaldi's seconds here \(.*\): kaldi_mono train \d+, align \d+, graph \d+, decode_dev \d+, "
                        r"decode_test \d+; kaldi_tri1 train \d+, align \d+; kaldi_tri2b train \d+, align \d+; "
                        r"kaldi_tri3b train \d+, graph \d+, decode_dev \d+, decode_test \d+", seconds)
    # A rerun from stage 6 redoes tri3b only.
    calls.write_text("")
    again = run_step("--cmd", tmp_path / "launcher", "--kaldi-root", kaldi, "--stage", 6, data, dict_dir, arpa, exp,
                     env={"KALDI_CALLS": str(calls)})
    assert again.returncode == 0, again.stderr
    assert [line.split()[0] for line in calls.read_text().splitlines()] == [
        "train_sat.sh", "mkgraph.sh", "decode_fmllr.sh", "decode_fmllr.sh"]


def converter_arguments(data_dir, tmp_path, **options):
    values = {"sample_rate": 16000, "channel": -1, "nj": 1, "max_fail_ratio": 0.05, **options}
    return argparse.Namespace(data_dir=str(data_dir), wav_dir=str(tmp_path / "wav"),
                              out_data_dir=str(tmp_path / "kaldi_data"), verbose=False, **values)


def test_mp3_and_wav_become_16_bit_wav_at_one_rate_and_a_rerun_keeps_them(tmp_path, make_data_dir):
    data = make_data_dir({"a-1": 0.5, "b-1": 0.25}, text={"a-1": "HELLO", "b-1": "WORLD"})
    samples, _ = soundfile.read(tmp_path / "data_wav" / "b-1.wav")
    soundfile.write(tmp_path / "b-1.mp3", samples, 16000, format="MP3")
    (tmp_path / "data" / "wav.scp").write_text(f"a-1 {tmp_path}/data_wav/a-1.wav\nb-1 {tmp_path}/b-1.mp3\n")
    fields = kaldi_data.convert_data_dir(converter_arguments(data, tmp_path, sample_rate=8000))
    assert (fields["converted"], fields["kept"], fields["failed"]) == (2, 0, 0)
    for utt, seconds in (("a-1", 0.5), ("b-1", 0.25)):
        converted, rate = soundfile.read(tmp_path / "wav" / f"{utt}.wav", dtype="int16")
        assert rate == 8000 and soundfile.info(tmp_path / "wav" / f"{utt}.wav").subtype == "PCM_16"
        assert abs(len(converted) - seconds * 8000) <= 8 and np.abs(converted).max() > 1000
    out = tmp_path / "kaldi_data"
    assert (out / "wav.scp").read_text() == f"a-1 {tmp_path}/wav/a-1.wav\nb-1 {tmp_path}/wav/b-1.wav\n"
    assert (out / "text").read_text() == "a-1 HELLO\nb-1 WORLD\n"
    assert (out / "spk2utt").read_text() == "a a-1\nb b-1\n" and not (out / "segments").exists()
    again = kaldi_data.convert_data_dir(converter_arguments(data, tmp_path, sample_rate=8000))
    assert (again["converted"], again["kept"]) == (0, 2)


def test_segments_of_a_recording_become_files_of_their_own(tmp_path, speech_like):
    data = tmp_path / "data"
    data.mkdir()
    soundfile.write(tmp_path / "long.flac", speech_like(2.0), 16000)
    (data / "wav.scp").write_text(f"rec {tmp_path}/long.flac\n")
    (data / "segments").write_text("s-1 rec 0.0 0.75\ns-2 rec 0.75 2.0\n")
    (data / "utt2spk").write_text("s-1 s\ns-2 s\n")
    (data / "text").write_text("s-1 A\ns-2 B\n")
    kaldi_data.convert_data_dir(converter_arguments(data, tmp_path))
    assert [soundfile.info(tmp_path / "wav" / f"s-{n}.wav").frames for n in (1, 2)] == [12000, 20000]
    assert (tmp_path / "kaldi_data" / "wav.scp").read_text().splitlines()[1] == f"s-2 {tmp_path}/wav/s-2.wav"


def test_unreadable_audio_is_left_out_and_counted_and_too_much_of_it_fails(tmp_path, make_data_dir):
    data = make_data_dir({"a-1": 0.3, "b-1": 0.3}, text={"a-1": "HELLO", "b-1": "WORLD"})
    (tmp_path / "data" / "wav.scp").write_text(f"a-1 {tmp_path}/data_wav/a-1.wav\nb-1 {tmp_path}/gone.wav\n")
    fields = kaldi_data.convert_data_dir(converter_arguments(data, tmp_path, max_fail_ratio=0.5))
    assert fields["failed"] == 1
    assert (tmp_path / "kaldi_data" / "utt2spk").read_text() == "a-1 a\n"
    assert (tmp_path / "kaldi_data" / "text").read_text() == "a-1 HELLO\n"
    status = kaldi_data.main([str(data), str(tmp_path / "wav2"), str(tmp_path / "out2"), "--max-fail-ratio", "0.1"])
    assert status == 1


def test_speakers_that_sort_otherwise_than_their_utterances_are_refused(tmp_path, make_data_dir):
    data = make_data_dir({"a-1": 0.2, "b-1": 0.2})
    (tmp_path / "data" / "utt2spk").write_text("a-1 zed\nb-1 amy\n")
    (tmp_path / "data" / "spk2utt").write_text("amy b-1\nzed a-1\n")
    with pytest.raises(AsrkitError, match="utterance a-1 \\(speaker zed\\) and b-1 \\(speaker amy\\) come in another "
                                          "order .* make each speaker id the prefix of its utterance ids"):
        kaldi_data.convert_data_dir(converter_arguments(data, tmp_path))


# Kaldi's scoring output as steps/score_kaldi.sh writes it: the best paths at each LMWT and penalty, and
# compute-wer's lines.
REFERENCE = {"spk1-001": "THE CAT SAT", "spk1-002": "ON THE MAT", "spk2-001": "A DOG"}
HYPOTHESES = {
    ("7", "0.0"): {"spk1-001": "THE CAT SAT", "spk1-002": "ON A MAT", "spk2-001": "A DOG"},
    ("8", "0.0"): {"spk1-001": "THE CAT SAT", "spk1-002": "ON THE MAT", "spk2-001": "A"},
    ("8", "0.5"): {"spk1-001": "THE CAT SAT", "spk1-002": "ON THE MAT", "spk2-001": "A"},
    ("9", "0.5"): {"spk1-001": "THE CAT", "spk1-002": "ON THE", "spk2-001": ""},
}


def kaldi_decode_dir(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    (data / "text").write_text("".join(f"{utt} {words}\n" for utt, words in REFERENCE.items()))
    (data / "utt2spk").write_text("".join(f"{utt} {utt.split('-')[0]}\n" for utt in REFERENCE))
    decode = tmp_path / "decode_dev"
    for (lmwt, wip), hyps in HYPOTHESES.items():
        (decode / "scoring_kaldi" / f"penalty_{wip}").mkdir(parents=True, exist_ok=True)
        # int2sym.pl's lines: an empty best path leaves the utterance id and a space.
        (decode / "scoring_kaldi" / f"penalty_{wip}" / f"{lmwt}.txt").write_text(
            "".join(f"{utt} {words}\n" for utt, words in hyps.items()))
    (decode / "wer_8_0.0").write_text("%WER 12.50 [ 1 / 8, 0 ins, 1 del, 0 sub ]\n%SER 33.33 [ 1 / 3 ]\n"
                                      "Scored 3 sentences, 0 not present in hyp.\n")
    return data, decode


def test_the_dev_set_s_best_weight_and_penalty_are_chosen_by_asrkit_s_count(tmp_path):
    data, decode = kaldi_decode_dir(tmp_path)
    out = tmp_path / "kaldi_tri3b" / "decode_dev"
    out.mkdir(parents=True)
    (out / "wer_12_1.0").write_text("an earlier run's\n")
    assert kaldi_results.main([str(data), str(decode), str(out)]) == 0
    # 7/0.0 and 8/* make one error each, 9/0.5 four: the tie goes to the lower weight.
    assert (out / "best_lmwt").read_text() == "7\n" and (out / "best_wip").read_text() == "0.0\n"
    assert (out / "best_wer").read_text() == f"%WER 12.50 [ 1 / 8, 0 ins, 0 del, 1 sub ] {out}/score/wer\n"
    assert sorted(name for name in os.listdir(out) if name.startswith("wer_")) == [
        "wer_7_0.0", "wer_8_0.0", "wer_8_0.5", "wer_9_0.5"]
    assert (out / "wer_9_0.5").read_text().splitlines()[0] == "%WER 50.00 [ 4 / 8, 0 ins, 4 del, 0 sub ]"
    assert (out / "hyp.txt").read_text().startswith("spk1-001 THE CAT SAT\nspk1-002 ON A MAT\n")
    assert (out / "kaldi_best_wer").read_text() == "(Kaldi left no wer file for this pair)\n"
    per_spk = {line.split()[0]: line.split() for line in (out / "score" / "per_spk").read_text().splitlines()
               if " sys " in line}
    assert per_spk["spk1"][8] == "16.67" and per_spk["spk2"][8] == "0.00"


def test_a_test_set_is_read_at_the_dev_set_s_choice_alone(tmp_path):
    data, decode = kaldi_decode_dir(tmp_path)
    dev = tmp_path / "kaldi_tri3b" / "decode_dev"
    dev.mkdir(parents=True)
    (dev / "best_lmwt").write_text("8\n")
    (dev / "best_wip").write_text("0.0\n")
    test = tmp_path / "kaldi_tri3b" / "decode_test"
    assert kaldi_results.main(["--chosen-on", str(dev), str(data), str(decode), str(test)]) == 0
    assert (test / "chosen_on").read_text() == f"8 0.0 {dev}\n"
    assert not (test / "best_lmwt").exists() and not (test / "best_wip").exists()
    assert [name for name in os.listdir(test) if name.startswith("wer_")] == ["wer_8_0.0"]
    assert (test / "best_wer").read_text().startswith("%WER 12.50 [ 1 / 8, 0 ins, 1 del, 0 sub ]")
    assert (test / "kaldi_best_wer").read_text() == "%WER 12.50 [ 1 / 8, 0 ins, 1 del, 0 sub ]\n"


def test_kaldi_output_that_is_not_there_is_named(tmp_path, capsys):
    data, decode = kaldi_decode_dir(tmp_path)
    dev = tmp_path / "decode_dev_asrkit"
    dev.mkdir()
    (dev / "best_lmwt").write_text("17\n")
    (dev / "best_wip").write_text("1.0\n")
    assert kaldi_results.main(["--chosen-on", str(dev), str(data), str(decode), str(tmp_path / "out")]) == 1
    assert (f"{decode}/scoring_kaldi/penalty_1.0/17.txt (LM weight 17 and word insertion penalty 1.0, chosen on "
            f"{dev}) does not exist; Kaldi scored LM weights 7..9") in capsys.readouterr().err
    assert kaldi_results.main(["--chosen-on", str(tmp_path), str(data), str(decode), str(tmp_path / "out")]) == 1
    assert f"{tmp_path}/best_lmwt does not exist: score the dev set first" in capsys.readouterr().err
    assert kaldi_results.main([str(data), str(tmp_path / "nothing"), str(tmp_path / "out")]) == 1
    assert "holds no penalty_<WIP>/<LMWT>.txt transcripts: Kaldi's scoring did not run there" in \
        capsys.readouterr().err


def minimal_path(tmp_path, *stubs):
    """A PATH of the few programs build_kaldi needs before it builds, and the stubs (name, body) given."""
    directory = tmp_path / "bin"
    directory.mkdir()
    for program in ("realpath", "dirname", "tr", "id", "nproc", "date", "cat", "mkdir", "sed", "grep", "ls", "bash"):
        os.symlink(subprocess.run(["bash", "-c", f"command -v {program}"], capture_output=True, text=True,
                                  check=True).stdout.strip(), directory / program)
    for name, body in stubs:
        executable(directory / name, body)
    return str(directory)


def test_build_kaldi_refuses_without_a_source_a_usable_openfst_or_its_compilers(tmp_path):
    def build(*args, path=None):
        env = dict(os.environ, PATH=path) if path else None
        return subprocess.run([BUILD, "--install-deps", "false", *map(str, args)], capture_output=True, text=True,
                              env=env, timeout=60)

    helped = subprocess.run([BUILD, "--help"], capture_output=True, text=True)
    assert helped.returncode == 0 and helped.stdout.startswith("Usage: bin/build-kaldi [options] <kaldi-root>")
    assert build().returncode == 1
    nothing = build(tmp_path / "kaldi")
    assert nothing.returncode == 1
    assert f"{tmp_path}/kaldi holds no Kaldi checkout (no src/configure); give --source to clone one" in nothing.stderr
    checkout = tmp_path / "checkout"
    (checkout / "src").mkdir(parents=True)
    (checkout / "src" / "configure").write_text("")
    debian = build("--openfst-version", "1.7.9", checkout)
    assert debian.returncode == 1 and "OpenFst 1.7.9 does not compile with Kaldi's source" in debian.stderr
    assert "does not exist" in build("--openfst-tarball", tmp_path / "openfst-1.7.2.tar.gz", checkout).stderr
    not_installed = minimal_path(tmp_path, ("dpkg-query", "#!/bin/sh\necho 'unknown ok not-installed'\n"))
    packages = build(checkout, path=not_installed)
    assert packages.returncode == 1 and "missing Debian packages: g++ make automake" in packages.stderr
    (tmp_path / "bin").rename(tmp_path / "bin_not_installed")
    installed = minimal_path(tmp_path, ("dpkg-query", "#!/bin/sh\necho 'install ok installed'\n"))
    compilers = build(checkout, path=installed)
    assert compilers.returncode == 1 and "g++ is not installed" in compilers.stderr
