"""egs/voicesearch/run.sh --size tiny, end to end: corpus, dictionary, noisy sets, lang and LMs, features, flat
start and monophone training, tree, CE training of the LSTM, decoding at the LM weight chosen on dev, scoring,
sMBR training with seq-mode example servers, decoding and scoring again (all with the windowed BLSTM,
--am's default), clean-only CE, the unrolling, jitter, untranscribed-data, CTC, LF-MMI and frame-grouping
comparisons, the pocketsphinx baseline, the results table and the training plots; the acoustic networks at
--precision auto's choice for this CPU."""

import json
import os
import shutil
import subprocess

import pytest

from asrkit.data.validate import validate_data_dir
from asrkit.frontend.cmvn import CmvnStats
from asrkit.nn.precision import bf16_support

# The tiny voicesearch recipe end to end, with every comparison: left out by tests/run.sh --quick.
pytestmark = pytest.mark.slow

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SYNTHESISERS = ("flite", "festival", "espeak-ng")


@pytest.mark.skipif(any(shutil.which(tool) is None for tool in SYNTHESISERS),
                    reason="flite, festival and espeak-ng are needed (bin/setup-env installs them as root)")
def test_tiny_recipe_runs_end_to_end(tmp_path):
    data, exp = tmp_path / "data", tmp_path / "exp"
    command = [os.path.join(ROOT, "egs", "voicesearch", "run.sh"), "--size", "tiny", "--data", str(data),
               "--exp", str(exp), "--unroll-comparison", "true", "--unsupervised-demo", "true",
               "--jitter-comparison", "true", "--ctc-comparison", "true", "--group-comparison", "true",
               "--lfmmi", "true"]
    result = subprocess.run(command, capture_output=True, text=True, timeout=1800)
    assert result.returncode == 0, result.stderr[-3000:]
    for split in ("train", "dev", "test", "dev_noisy", "test_noisy"):
        assert validate_data_dir(str(data / split), require_text=True) == [], split
    assert (data / "local" / "dict" / "lexicon.txt").exists()
    clean = open(data / "test" / "text").read()
    assert open(data / "test_noisy" / "text").read() == clean
    styles = [line.split()[1] for line in open(data / "test_noisy" / "utt2style")]
    assert styles and not any("vtlp" in style for style in styles)
    for lang in ("lang_bigram", "lang_test"):
        assert (data / lang / "G.fst").stat().st_size > 0
        assert (data / lang / "L_disambig.fst").exists()
    assert "\n\\3-grams:" in open(data / "local" / "lm" / "test.arpa").read()
    for name in ("mono_ali0", "mono_ali2", "tree_ali"):
        assert (exp / name / "ali.scp").exists() and (exp / name / "num_pdfs").exists(), name
    assert "aligned=80 retried=0 failed=0" in result.stderr  # realignment with the monophone model
    # The accuracy report against the synthesisers' timings: after three frame-local monophone passes
    # the 68 tiny training utterances with truth have most word ends within 2 frames (91% here; the flat
    # start 60%).
    rows = {}  # ali dir -> its row of the first table (the bias table below it repeats the names)
    for line in result.stderr.splitlines():
        if line.startswith(str(exp)):
            rows.setdefault(line.split()[0], line.split())
    assert float(rows[str(exp / "tree_ali")][4].rstrip("%")) >= 80.0, rows
    assert float(rows[str(exp / "mono_ali0")][4].rstrip("%")) < 70.0, rows
    # Per-utterance voice perturbation of the training speakers; training sentences disjoint from test's.
    assert json.load(open(data / "local" / "corpus" / "config.json"))["voice_jitter"] > 0
    train_texts = {line.split(maxsplit=1)[1] for line in open(data / "train" / "text")}
    assert not train_texts & {line.split(maxsplit=1)[1] for line in open(data / "test" / "text")}
    # Each utterance's own mean is removed, and the models carry that with their statistics.
    assert CmvnStats.read(str(data / "train" / "cmvn.h5")).mean_norm == "utterance"
    assert CmvnStats.read(str(exp / "wblstm_ce" / "final" / "cmvn.h5")).mean_norm == "utterance"
    # The acoustic network is [Mohamed2015]'s windowed BLSTM (--am's default).
    assert json.load(open(exp / "wblstm_ce" / "final" / "model.json"))["model"]["name"] == "wblstm"
    # Multi-style CE continues the clean-only model (trained first, in stage 7).
    assert json.load(open(exp / "wblstm_ce" / "config.json"))["init_model"] == str(exp / "wblstm_ce_clean" / "final")
    assert (exp / "log" / "stage7" / "train_wblstm_ce_clean.log").exists()
    for model in ("wblstm_ce", "wblstm_smbr", "wblstm_ce_clean"):
        for dev, tests in (("dev", ("test", "train_fit")), ("dev_noisy", ("test_noisy",))):
            # The LM weight is chosen on dev by the sweep, and the test sets are decoded at it alone.
            weight = float(open(exp / model / f"decode_{dev}" / "best_lmwt").read())
            assert (exp / model / f"decode_{dev}" / "wer_0.5").exists() and 0.5 <= weight <= 5
            for split in tests:
                decode_dir = exp / model / f"decode_{split}"
                assert len(open(decode_dir / "hyp.txt").read().splitlines()) == 10
                assert not (decode_dir / "best_lmwt").exists()
                stage = {"wblstm_ce": 8, "wblstm_smbr": 10}.get(model, 13)
                log = open(exp / "log" / f"stage{stage}" / f"decode_{model}_{split}.log").read()
                assert f"--acoustic-scale {1 / weight!r} " in log
                # The prior scale is chosen on dev among the recipe's three, and the others' decodes are gone.
                prior = open(exp / model / "decode_dev" / "prior_scale").read().strip()
                assert prior in ("1", "0.75", "0.5") and f"--prior-scale {prior}" in log
            assert not list((exp / model).glob("decode_dev_prior*"))
            assert f"/{model}/decode_dev/wer_" in open(exp / model / "decode_dev" / "best_wer").read()
    # Stage 10 keeps the final model's lattices of the clean sets and stage 11 rescores them with the 4-gram.
    for split in ("dev", "test", "train_fit"):
        assert (exp / "wblstm_smbr" / f"decode_{split}" / "lat.scp").exists()
        rescored = exp / "wblstm_smbr" / f"decode_{split}_rescored"
        assert len(open(rescored / "hyp.txt").read().splitlines()) == 10
        assert open(rescored / "best_wer").read().startswith("%WER ")
    assert "4-gram" in open(exp / "RESULTS").read() and (data / "local" / "lm" / "fourgram.arpa").exists()
    smbr_log = open(exp / "log" / "stage9" / "train_wblstm_smbr.log").read()
    assert "asrkit-train-seq summary: status=ok steps=20" in smbr_log
    # Stage 12 exports the sMBR model as a recognizer package at the prior scale dev chose and the LM weight dev chose
    # as the package hears it (asrkit-tune-package).
    decode = json.load(open(exp / "wblstm_smbr" / "package" / "decode.json"))
    assert decode["lm_weight"] == float(open(exp / "wblstm_smbr" / "package_tuning_dev" / "best_lmwt").read())
    assert decode["chosen_on"] == str(exp / "wblstm_smbr" / "package_tuning_dev")
    assert decode["prior_scale"] == float(open(exp / "wblstm_smbr" / "decode_dev" / "prior_scale").read())
    assert "asrkit-export summary: status=ok" in open(exp / "log" / "stage12" / "export_wblstm_smbr.log").read()
    assert "server_objective" in smbr_log and "staleness histogram" in smbr_log
    # Stages 13 and 14: clean-only CE (decoded on both sets), and three truncated (b, u) runs of the LSTM at
    # b x u = 320 and a full-unrolling run with 320-frame batches (decoded on test).
    for name in ("unroll_b32_u10", "unroll_b16_u20", "unroll_b8_u40", "unroll_full"):
        config = json.load(open(exp / name / "config.json"))["train"]
        assert config["mode"] == "full" or config["num_streams"] * config["unroll"] == 320, name
        assert json.load(open(exp / name / "config.json"))["model"]["name"] == "lstm", name
        assert len(json.load(open(exp / name / "result.json"))["valid_history"]) >= 5, name
    assert json.load(open(exp / "unroll_full" / "config.json"))["train"]["frames_per_batch"] == 320
    assert (exp / "wblstm_ce_clean_ali" / "ali.scp").exists()
    # Stage 16, [McDermott2014]'s untranscribed data: train split in two halves, the second without its transcripts;
    # the most confident 70% of its hypotheses (at most) join the first half's training.
    sup = [line.split()[0] for line in open(data / "train_sup" / "utt2spk")]
    unsup = [line.split()[0] for line in open(data / "train_unsup" / "utt2spk")]
    assert len(sup) == len(unsup) == 40 and not set(sup) & set(unsup) and not (data / "train_unsup" / "text").exists()
    selected = dict(line.rstrip("\n").split(" ", 1) for line in open(data / "train_unsup_selected" / "text"))
    assert 0 < len(selected) <= 28 and set(selected) <= set(unsup)
    assert [line.split()[0] for line in open(data / "train_unsup_selected" / "utt2confidence")] == sorted(selected)
    with open(exp / "wblstm_semisup_ali" / "ali.scp") as handle:
        assert sorted(line.split()[0] for line in handle) == sorted(sup + list(selected))
    assert json.load(open(exp / "wblstm_semisup" / "config.json"))["data"]["train_utterances"] + 5 == \
        len(sup) + len(selected)  # --valid-utts 5 held out
    assert "graph_sup" in open(exp / "log" / "stage16" / "decode_wblstm_sup_train_unsup.log").read()
    # Stage 15, [Mohamed2015]'s jitter: the clean-only model again with utterances on group boundaries, and the plot.
    assert json.load(open(exp / "wblstm_ce_clean_nojitter" / "config.json"))["train"]["group_jitter"] is False
    assert (exp / "jitter.png").stat().st_size > 1000
    assert "no jitter: held-out frame accuracy at the end of epochs" in result.stderr
    # Stage 18, CTC: phone targets on whole utterances, a model without a tree and its own CTC-topology graph.
    ctc_config = json.load(open(exp / "wblstm_ctc" / "final" / "model.json"))
    assert ctc_config["outputs"] == "ctc-phones" and not (exp / "wblstm_ctc" / "final" / "tree.json").exists()
    assert json.load(open(exp / "wblstm_ctc" / "graph" / "graph_info.json"))["options"] == {"topology": "ctc"}
    assert (exp / "wblstm_ctc" / "decode_test" / "best_wer").exists()
    # Stage 19, LF-MMI: trained from scratch, multi-style, with its denominator graph kept, uniform priors, decoded
    # on the CE graph, test_noisy too.
    assert json.load(open(exp / "wblstm_lfmmi" / "config.json"))["train"]["criterion"] == "lfmmi"
    assert "noisifying on the fly" in open(exp / "wblstm_lfmmi" / "log" / "serve.1.log").read()
    assert (exp / "wblstm_lfmmi" / "decode_test_noisy" / "best_wer").exists()
    assert (exp / "wblstm_lfmmi_den.npz").exists()
    assert len(set(open(exp / "wblstm_lfmmi" / "final" / "priors").read().split())) == 1
    assert (exp / "wblstm_lfmmi" / "decode_test" / "best_wer").exists()
    # LF-MMI from scratch gets the CE model's epochs in all: tiny's 15 clean-only and 5 multi-style.
    assert " --num-epochs 20 " in open(exp / "log" / "stage19" / "train_wblstm_lfmmi.log").readline()
    # --precision auto: every acoustic network trained with bf16 GEMMs where the CPU multiplies bf16 natively, in
    # fp32 elsewhere; the monophone DNN, whose alignments they all learn from, in fp32 everywhere.
    precision = "bf16" if bf16_support()[0] else "fp32"
    for model in ("wblstm_ce_clean", "wblstm_ce", "wblstm_smbr", "wblstm_lfmmi"):
        assert json.load(open(exp / model / "config.json"))["train"]["precision"] == precision, model
    assert json.load(open(exp / "mono1" / "config.json"))["train"]["precision"] == "fp32"
    # Stage 20, its frame-level combination with the multi-style CE model (--combine, on by default, and
    # --combine-with's default): the weights chosen on each dev set, the test set decoded at its dev set's.
    for dev_set, test_set in (("dev", "test"), ("dev_noisy", "test_noisy")):
        weight = open(exp / "wblstm_ce_lfmmi" / f"decode_{dev_set}" / "combine_weight").read().strip()
        assert weight in ("0.5", "0.6", "0.7", "0.8", "0.9")
        log = open(exp / "log" / "stage20" / f"decode_wblstm_ce_{test_set}.log").read()
        assert f"--combine-weight {weight} " in log and "--combine-model" in log
    # Stage 21, the combination's package: its LM weight chosen on dev as it hears it, as stage 12's.
    decode = json.load(open(exp / "wblstm_ce_lfmmi" / "package" / "decode.json"))
    assert decode["chosen_on"] == str(exp / "wblstm_ce_lfmmi" / "package_tuning_dev")
    assert decode["lm_weight"] == float(open(exp / "wblstm_ce_lfmmi" / "package_tuning_dev" / "best_lmwt").read())
    # Stage 17, [Mohamed2015]'s frame grouping: 20+1+20 and 20+8+20, their test WER and decoding speed.
    for group in (1, 8):
        params = json.load(open(exp / f"wblstm_g{group}" / "config.json"))["model"]["params"]
        assert (params["context"], params["group"]) == (20, group)
        assert f"wblstm_g{group}: decoding frames_per_second=" in result.stderr
    # Every launcher job left its log; each stage's summary lines were shown.
    assert (exp / "log" / "stage6" / "train_mono1.log").exists() and (exp / "log" / "stage8" / "mkgraph.log").exists()
    assert "asrkit-decode summary: status=ok" in result.stderr
    assert "== run.sh done in " in result.stderr
    # Each stage does one job, and each ran, the adaptation too (stage 22: --adapt follows --combine).
    for stage in range(25):
        assert f"== stage {stage} done in " in result.stderr, stage
    # Stage 22, the combination adapted to each dev and test speaker: every set decoded again, the test sets at
    # their dev sets' LM weights.
    for split in ("dev", "dev_noisy", "test", "test_noisy"):
        assert (exp / "wblstm_ce_lfmmi_adapted" / f"decode_{split}" / "best_wer").exists(), split
    # Stage 23: pocketsphinx's stock model with the recipe's lexicon and LM, beside the models trained here.
    for split in ("test", "test_noisy"):
        assert len(open(exp / "pocketsphinx" / f"decode_{split}" / "hyp.txt").read().splitlines()) == 10
    results = open(exp / "RESULTS").read()
    # Five decoded sets for each of four models (CE, clean-only CE, sMBR, LF-MMI), three rescored ones for the sMBR
    # model, test for the four unrolling runs, dev and test for the two models of the untranscribed-data
    # demonstration and the selection's score, dev and test without jitter, of the CTC model and of the two
    # groupings, two for pocketsphinx.
    # And the CE and LF-MMI combination's four (dev, test and the noisy ones), and its adapted second pass's four.
    assert results.count("%WER") == 4 * 5 + 3 + 4 + 2 * 2 + 1 + 2 + 2 + 2 * 2 + 2 + 4 + 4
    assert "speaker adaptation relative to the CE + LF-MMI combination's first pass" in results
    assert "CE + LF-MMI combined relative to CE" in results
    assert "sMBR relative to CE" in results
    lfmmi_line = next(line for line in results.splitlines() if line.startswith("# LF-MMI relative to CE + sMBR: "))
    assert " test_noisy " in lfmmi_line and " dev_noisy " in lfmmi_line
    assert "CTC relative to the clean-only CE hybrid" in results and "20+8+20 relative to 20+1+20" in results
    assert "clean-only CE without jitter relative to with" in results
    assert "untranscribed data: with the selected hypotheses relative to without" in results
    assert "# LM weight chosen on dev: wblstm_ce dev " in results and "# WER (%) per test voice" in results
    assert "# stage times (s)" in results
    assert "multi-style relative to clean-only CE" in results and "Truncated vs full unrolling" in results
    assert "%WER" in result.stdout  # the table is printed at the end
    for model in ("wblstm_ce", "wblstm_smbr"):
        assert (exp / model / "training.png").stat().st_size > 1000
    # --lfmmi-am: the LF-MMI model another network (egs/voiceover's default, a TDNN-F), in its own exp dir, and the
    # combination made with it, here with the sMBR model (--combine-with smbr).
    tdnnf = subprocess.run(command + ["--stage", "19", "--stop-stage", "20", "--lfmmi-am", "tdnnf",
                                      "--combine-with", "smbr"],
                           capture_output=True, text=True, timeout=900)
    assert tdnnf.returncode == 0, tdnnf.stderr[-3000:]
    assert json.load(open(exp / "tdnnf_lfmmi" / "config.json"))["model"]["name"] == "tdnnf"
    assert (exp / "tdnnf_lfmmi" / "decode_test_noisy" / "best_wer").exists()
    log = open(exp / "log" / "stage20" / "decode_wblstm_smbr_test.log").read()
    assert f"--combine-model {exp / 'tdnnf_lfmmi' / 'final'}" in log
    assert (exp / "wblstm_smbr_lfmmi" / "decode_test" / "best_wer").exists()
    # Rerunning the data stages reuses every finished piece of work.
    rerun = subprocess.run(command + ["--stage", "1", "--stop-stage", "3"], capture_output=True, text=True,
                           timeout=900)
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    assert "reused 100 from an earlier run" in rerun.stderr
    assert "reused=10" in rerun.stderr
