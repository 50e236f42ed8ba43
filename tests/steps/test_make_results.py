"""steps/make_results.py: the RESULTS table from decode dirs and trainers' result.json."""

import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "steps", "make_results.py")


def _make_results(exp, *options):
    """make_results.py's run on exp, which must succeed."""
    result = subprocess.run([sys.executable, SCRIPT, *options, str(exp)], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    return result


def _decode(exp, model, test_set, wer):
    directory = exp / model / f"decode_{test_set}"
    directory.mkdir(parents=True)
    (directory / "best_wer").write_text(f"%WER {wer:.2f} [ 10 / 100, 1 ins, 2 del, 7 sub ] {directory}/score/wer\n")


def test_table_and_relative_change(tmp_path):
    exp = tmp_path / "exp"
    _decode(exp, "lstm_ce", "test", 50.0)
    _decode(exp, "lstm_ce", "test_noisy", 80.0)
    _decode(exp, "lstm_smbr", "test", 45.0)
    (exp / "lstm_smbr" / "result.json").write_text(json.dumps({
        "criterion": "seq", "steps": 20, "frames": 6400, "frames_per_second": 55.5, "t_session": 0.1, "apr": 0.0,
        "seconds": 120.0, "valid_accuracy": 0.5, "valid_metrics": {"seq_objective": 0.25},
        "example_server_count": 2}))
    result = _make_results(exp, "--command", f"/somewhere/egs/x/run.sh --size tiny --data /corpora/data --exp {exp}")
    lines = result.stdout.splitlines()
    assert lines[0].endswith(": run.sh --size tiny --data data --exp EXP")
    assert sum(line.startswith("%WER") for line in lines) == 3
    # the decode dirs as EXP/..., not this machine's absolute paths
    assert "] EXP/lstm_smbr/decode_test/score/wer   # lstm_smbr" in result.stdout and str(tmp_path) not in result.stdout
    table = [line for line in lines if line.startswith("# lstm_smbr ")]
    assert table and table[0].split()[2:] == ["45.00", "-"]
    assert "# sMBR relative to CE: test -10.0%" in result.stdout
    assert "lstm_smbr: seq 20 steps" in result.stdout and "held-out seq_objective 0.2500" in result.stdout


def test_lfmmi_rows_say_their_input_and_compare_with_smbr(tmp_path):
    exp = tmp_path / "exp"
    _decode(exp, "wblstm_smbr", "test", 50.0)
    _decode(exp, "wblstm_lfmmi", "test", 45.0)
    (exp / "wblstm_lfmmi" / "config.json").write_text(json.dumps({
        "train": {"criterion": "lfmmi", "xent_regularize": 0.1},
        "command_line": "asrkit-train-ce --criterion lfmmi --example-servers local:1 --server-styles s.json d a e"}))
    out = _make_results(exp).stdout
    assert "# LF-MMI relative to CE + sMBR: test -10.0%" in out
    assert ("wblstm_lfmmi: windowed BLSTM, lattice-free MMI from scratch ([Povey2016]; 50-frame chunks" in out
            and "multi-style (example server noisifying on the fly), xent-regularize 0.1" in out)


def test_the_frame_level_combination_is_described_and_compared_with_smbr(tmp_path):
    exp = tmp_path / "exp"
    _decode(exp, "wblstm_smbr", "test", 50.0)
    _decode(exp, "wblstm_smbr_lfmmi", "test", 40.0)
    out = _make_results(exp).stdout
    assert "# sMBR + LF-MMI combined relative to sMBR: test -20.0%" in out
    assert "wblstm_smbr_lfmmi: windowed BLSTM, wblstm_smbr and wblstm_lfmmi combined frame by frame" in out
    # With another network's LF-MMI model (run.sh --lfmmi-am), the one its dev decode combined is named.
    (exp / "wblstm_smbr_lfmmi" / "decode_dev").mkdir()
    (exp / "wblstm_smbr_lfmmi" / "decode_dev" / "combination_opts").write_text(
        f"--model-acoustic-scale 0.3 --combine-model {exp}/tdnnf_lfmmi/final --combine-weight 0.7\n")
    out = _make_results(exp).stdout
    assert "wblstm_smbr_lfmmi: windowed BLSTM, wblstm_smbr and tdnnf_lfmmi combined frame by frame" in out


def test_the_combination_with_ce_is_described_and_compared_with_ce_and_with_the_smbr_one(tmp_path):
    exp = tmp_path / "exp"
    _decode(exp, "wblstm_ce", "test", 50.0)
    _decode(exp, "wblstm_ce_lfmmi", "test", 40.0)
    _decode(exp, "wblstm_ce_lfmmi_adapted", "test", 36.0)
    (exp / "wblstm_ce_lfmmi" / "decode_dev").mkdir()
    (exp / "wblstm_ce_lfmmi" / "decode_dev" / "combination_opts").write_text(
        f"--model-acoustic-scale 0.3 --combine-model {exp}/tdnnf_lfmmi/final --combine-weight 0.7\n")
    out = _make_results(exp).stdout
    assert "wblstm_ce_lfmmi: windowed BLSTM, wblstm_ce and tdnnf_lfmmi combined frame by frame" in out
    assert "wblstm_ce_lfmmi_adapted: windowed BLSTM, wblstm_ce_lfmmi with wblstm_ce (with --networks all" in out
    assert "# CE + LF-MMI combined relative to CE: test -20.0%" in out
    assert "# speaker adaptation relative to the CE + LF-MMI combination's first pass: test -10.0%" in out
    assert "relative to with sMBR" not in out
    # Beside the sMBR combination (run.sh --combine-with smbr in the same exp dir), the two are compared.
    _decode(exp, "wblstm_smbr_lfmmi", "test", 50.0)
    _decode(exp, "wblstm_smbr_lfmmi_adapted", "test", 45.0)
    out = _make_results(exp).stdout
    assert "# LF-MMI combined with CE relative to with sMBR: test -20.0%" in out
    assert "# adapted, LF-MMI combined with CE relative to with sMBR: test -20.0%" in out
    assert "# speaker adaptation relative to the sMBR + LF-MMI combination's first pass: test -10.0%" in out


def test_the_wer_table_columns_line_up_past_twenty_character_names(tmp_path):
    exp = tmp_path / "exp"
    _decode(exp, "wblstm_smbr", "test", 50.0)
    _decode(exp, "wblstm_smbr_lfmmi_adapted", "test", 40.0)
    lines = _make_results(exp).stdout.splitlines()
    table = lines[lines.index("# WER (%)") + 1:][:3]
    assert [line.split()[1] for line in table] == ["model", "wblstm_smbr", "wblstm_smbr_lfmmi_adapted"]
    # every row's last cell ends in the same column as the header's
    assert len({len(line) for line in table}) == 1, table


def test_an_lfmmi_model_names_the_graph_it_was_decoded_with(tmp_path):
    exp = tmp_path / "exp"
    _decode(exp, "tdnnf_lfmmi", "test", 45.0)
    out = _make_results(exp).stdout
    assert "uniform priors, tdnnf_ce's graph)" in out  # without a record, the network's own CE graph
    # run.sh --lfmmi-am tdnnf decodes it with the windowed BLSTM's graph, as its decode_tuned.options records
    (exp / "tdnnf_lfmmi" / "log").mkdir()
    (exp / "tdnnf_lfmmi" / "log" / "decode_tuned.options").write_text(
        f"# ../../steps/decode_tuned.sh --cmd run-local\\ --num-threads\\ 2 --decode-opts '' {exp}/wblstm_ce/graph "
        f"data {exp}/tdnnf_lfmmi\n# 2026-12-01T06:09:04\n")
    out = _make_results(exp).stdout
    assert "uniform priors, wblstm_ce's graph)" in out


def _seconds(exp, model, seconds, init_model=None):
    (exp / model / "result.json").write_text(json.dumps({
        "criterion": "ce", "steps": 10, "frames": 5000, "frames_per_second": 5000 / seconds, "t_session": 0.99,
        "apr": 0.0, "seconds": seconds, "valid_accuracy": 0.5}))
    (exp / model / "config.json").write_text(json.dumps({"init_model": init_model, "train": {}}))


def test_lfmmi_training_time_against_ce_and_smbr_together(tmp_path):
    exp = tmp_path / "exp"
    for model in ("wblstm_ce_clean", "wblstm_ce", "wblstm_smbr", "wblstm_lfmmi"):
        _decode(exp, model, "test", 40.0)
    _seconds(exp, "wblstm_ce_clean", 900.0)
    _seconds(exp, "wblstm_ce", 1100.0, init_model=str(exp / "wblstm_ce_clean" / "final"))
    _seconds(exp, "wblstm_smbr", 300.0)
    _seconds(exp, "wblstm_lfmmi", 1150.0)
    out = _make_results(exp).stdout
    assert ("# training time, LF-MMI against CE + sMBR: wblstm_lfmmi 1150 s against 2300 s (wblstm_ce_clean 900 + "
            "wblstm_ce 1100 + wblstm_smbr 300), 0.50x") in out
    assert "wblstm_ce: windowed BLSTM, multi-style CE (example server noisifying on the fly), continuing " \
           "wblstm_ce_clean" in out
    # A CE model from scratch counts alone; without the sMBR model's training there is no comparison.
    _seconds(exp, "wblstm_ce", 1100.0)
    assert "against 1400 s (wblstm_ce 1100 + wblstm_smbr 300), 0.82x" in _make_results(exp).stdout
    (exp / "wblstm_smbr" / "result.json").unlink()
    assert "# training time, LF-MMI" not in _make_results(exp).stdout


def test_no_decodes_is_an_error(tmp_path):
    result = subprocess.run([sys.executable, SCRIPT, str(tmp_path)], capture_output=True, text=True)
    assert result.returncode != 0 and "no */decode_*/best_wer" in result.stderr


def _training(exp, model, mode, history, **train):
    (exp / model / "result.json").write_text(json.dumps({
        "criterion": "ce", "steps": history[-1][0], "frames": 5120 * history[-1][0], "frames_per_second": 1000.0,
        "t_session": 0.99, "apr": 0.25 if mode == "full" else 0.01, "seconds": history[-1][1] + 1.0,
        "valid_accuracy": history[-1][2], "valid_history": history, "example_server_count": 0}))
    (exp / model / "config.json").write_text(json.dumps({
        "train": {"mode": mode, "valid_every": 10, "frames_per_batch": 5120, **train},
        "data": {"train_utterances": 1500, "train_frames": 98000}}))


def test_clean_vs_multi_style_and_the_unrolling_table(tmp_path):
    exp = tmp_path / "exp"
    _decode(exp, "lstm_ce", "test", 50.0)
    _decode(exp, "lstm_ce", "test_noisy", 60.0)
    _decode(exp, "lstm_ce_clean", "test", 40.0)
    _decode(exp, "lstm_ce_clean", "test_noisy", 80.0)
    _decode(exp, "unroll_b256_u20", "test", 45.0)
    _decode(exp, "unroll_full", "test", 47.0)
    # Converges at step 20 (0.495 is within 0.01 of the best, 0.50), not at the first point.
    _training(exp, "unroll_b256_u20", "truncated", [[10, 30.0, 0.40], [20, 60.5, 0.495], [30, 90.0, 0.50]],
              num_streams=256, unroll=20)
    _training(exp, "unroll_full", "full", [[10, 20.0, 0.30], [20, 40.0, 0.45]])
    result = _make_results(exp)
    out = result.stdout
    assert "# multi-style relative to clean-only CE: test +25.0%, test_noisy -25.0%" in out
    assert "unroll_b256_u20: clean CE, truncated unrolling b=256 u=20" in out
    assert "1500 training utterances (98000 frames)" in out and "(every 10 steps) within 0.01" in out
    rows = {line.split()[1]: line for line in out.splitlines() if line.startswith("# unroll_")}
    assert rows["unroll_b256_u20"].split()[2:9] == ["b=256", "u=20", "5120", "45.00", "0.010", "1000", "60"]
    assert "(step 20)" in rows["unroll_b256_u20"] and rows["unroll_b256_u20"].endswith("0.5000")
    assert rows["unroll_full"].split()[2:9] == ["full,", "buckets", "5120", "47.00", "0.250", "1000", "40"]


def _per_spk(exp, model, test_set, rows):
    """A score/per_spk as asrkit's scorer writes it: rows are (speaker, words, errors)."""
    lines = ["SPEAKER         id  " + " ".join(f"{cell:>10}" for cell in
                                             ("#SENT", "#WORD", "Corr", "Sub", "Ins", "Del", "Err", "S.Err"))]
    for speaker, words, errors in rows:
        wer = 100.0 * errors / words
        lines.append(f"{speaker:<15} raw {2:>10} {words:>10} {words - errors:>10} {errors:>10} {0:>10} {0:>10} "
                     f"{errors:>10} {1:>10}")
        lines.append(f"{speaker:<15} sys {2:>10} {words:>10} {100 - wer:>10.2f} {wer:>10.2f} {0:>10.2f} {0:>10.2f} "
                     f"{wer:>10.2f} {50:>10.2f}")
    score = exp / model / f"decode_{test_set}" / "score"
    score.mkdir(parents=True, exist_ok=True)
    (score / "per_spk").write_text("\n".join(lines) + "\n")


def test_pocketsphinx_rows_and_the_wer_per_test_voice(tmp_path):
    exp = tmp_path / "exp"
    _decode(exp, "lstm_ce", "test", 50.0)
    _decode(exp, "lstm_ce", "test_noisy", 70.0)
    _decode(exp, "pocketsphinx", "test", 20.1)
    _decode(exp, "pocketsphinx", "test_noisy", 60.0)
    _per_spk(exp, "lstm_ce", "test", [("es-scotm7-01", 100, 40), ("fe-ked-01", 100, 60)])
    _per_spk(exp, "pocketsphinx", "test", [("es-scotm7-01", 100, 90)])
    _per_spk(exp, "lstm_ce", "test_noisy", [("es-scotm7-01", 100, 70)])  # test only in the voice table
    result = _make_results(exp)
    out = result.stdout
    assert "# pocketsphinx: pocketsphinx 5 en-us acoustic model" in out
    rows = {line.split()[1]: line.split()[2:] for line in out.splitlines() if line.startswith("# ")}
    assert rows["pocketsphinx"] == ["20.10", "60.00"]
    voice_table = out.split("# WER (%) per test voice\n")[1].split("\n\n")[0].splitlines()
    assert voice_table[0].split() == ["#", "voice", "lstm_ce", "pocketsphinx"]
    assert voice_table[1].split() == ["#", "es-scotm7-01", "40.00", "90.00"]
    assert voice_table[2].split() == ["#", "fe-ked-01", "60.00", "-"]
    assert voice_table[3].split() == ["#", "all", "50.00", "20.10"]


def test_a_baseline_or_voice_table_only_where_its_files_are(tmp_path):
    exp = tmp_path / "exp"
    _decode(exp, "lstm_ce", "test", 50.0)
    result = _make_results(exp)
    assert "# pocketsphinx" not in result.stdout and "per test voice" not in result.stdout


def test_the_lm_weights_chosen_on_dev_and_the_stage_times(tmp_path):
    exp = tmp_path / "exp"
    for test_set, wer in (("dev", 40.0), ("dev_noisy", 60.0), ("test", 42.0)):
        _decode(exp, "lstm_ce", test_set, wer)
    (exp / "lstm_ce" / "decode_dev" / "best_lmwt").write_text("3.5\n")
    (exp / "lstm_ce" / "decode_dev_noisy" / "best_lmwt").write_text("4\n")
    (exp / "log").mkdir()
    # Stage 7 ran twice: its last run counts.
    (exp / "log" / "stage_times").write_text(
        "5 30 2026-01-01T00:00:00\n7 100 2026-01-01T00:01:00\n7 120 2026-01-01T00:05:00\n")
    result = _make_results(exp)
    assert "# LM weight chosen on dev: lstm_ce dev 3.5, dev_noisy 4\n" in result.stdout
    assert "# stage times (s), 150 in all: 5: 30, 7: 120\n" in result.stdout


def test_recipe_name_and_lm_perplexities_from_the_make_lm_logs(tmp_path):
    exp = tmp_path / "exp"
    _decode(exp, "lstm_ce", "test", 42.0)
    (exp / "log" / "stage3").mkdir(parents=True)
    (exp / "log" / "stage3" / "make_lm_test.log").write_text(
        "# make_lm ...\n2026-01-01 INFO make_lm: make_lm summary: status=ok arpa=x order=3 method=kn "
        "sentences=9 ngrams=1,2,3 oov_tokens=0 train_ppl=7.7 heldout_ppl=816.99 heldout_oovs=3 G=y\n")
    (exp / "log" / "stage3" / "make_lm_bigram.log").write_text("make_lm failed before its summary\n")
    result = _make_results(exp, "--recipe", "voiceover")
    assert result.stdout.startswith("# egs/voiceover results")
    assert "test_noisy" not in result.stdout.splitlines()[2]
    assert "# LM perplexity on dev (its transcripts held out from the LM): test 817.0 (3 OOV tokens)\n" in result.stdout
    assert "decoding LM" not in result.stdout
    (exp / "log" / "stage3" / "mix_lm.log").write_text(
        "2026-01-01 INFO mix_lm: mix_lm summary: status=ok arpa=m weights=0.3500,0.6500 ngrams=1,2,3 "
        "heldout_ppl=172.27,900.10 mixture_ppl=97.27 heldout_tokens=9 skipped_tokens=0\n")
    result = _make_results(exp, "--recipe", "voiceover")
    assert ("# decoding LM: test interpolated with the external LM (mix_lm, weights 0.3500,0.6500 fitted on dev): "
            "perplexity on dev 97.3\n") in result.stdout
    assert "warp factors" not in result.stdout
    (exp / "warps").mkdir()
    (exp / "warps" / "spk2warp_dev").write_text("ian 1\nsec 1.1\n")
    (exp / "warps" / "spk2warp_test").write_text("lola 1.05\n")
    result = _make_results(exp, "--recipe", "voiceover")
    assert ("# warp factors chosen per speaker (VTLN, steps/select_warps.sh; the decodes after it hear dev and test "
            "warped): dev ian 1, sec 1.1; test lola 1.05\n") in result.stdout


def test_windowed_blstm_beside_the_lstm(tmp_path):
    """Models of both acoustic networks (run.sh --am): each network's own comparisons, named, and the windowed
    BLSTM's against the LSTM's role by role."""
    exp = tmp_path / "exp"
    for model, wer in (("lstm_ce", 40.0), ("lstm_smbr", 36.0), ("wblstm_ce", 30.0), ("wblstm_smbr", 27.0),
                       ("wblstm_ce_clean", 25.0)):
        _decode(exp, model, "test", wer)
    (exp / "wblstm_ce" / "config.json").write_text(json.dumps({"init_model": str(exp / "wblstm_ce_clean" / "final")}))
    out = _make_results(exp).stdout
    assert "# wblstm_ce: windowed BLSTM, multi-style CE (example server noisifying on the fly), continuing " \
           "wblstm_ce_clean" in out
    assert "# sMBR relative to CE (LSTM): test -10.0%" in out
    assert "# sMBR relative to CE (windowed BLSTM): test -10.0%" in out
    assert "# multi-style relative to clean-only CE (windowed BLSTM): test +20.0%" in out
    assert "# windowed BLSTM relative to the LSTM, ce: test -25.0%" in out
    assert "# windowed BLSTM relative to the LSTM, smbr: test -25.0%" in out
    assert "wblstm_ce_clean: windowed BLSTM, clean-only CE (wblstm_ce's network" in out


def test_the_untranscribed_data_demonstration(tmp_path):
    exp = tmp_path / "exp"
    _decode(exp, "wblstm_sup", "test", 20.0)
    _decode(exp, "wblstm_semisup", "test", 18.0)
    score = exp / "wblstm_semisup" / "selection" / "score"
    score.mkdir(parents=True)
    (score / "wer").write_text("%WER 4.00 [ 4 / 100, 1 ins, 1 del, 2 sub ]\n%SER 8.00 [ 2 / 25 ]\n")
    result = _make_results(exp)
    assert "# untranscribed data: with the selected hypotheses relative to without: test -10.0%" in result.stdout
    assert ("# wblstm_semisup's untranscribed utterances, their hypotheses against the hidden transcripts: "
            "%WER 4.00 [ 4 / 100, 1 ins, 1 del, 2 sub ]") in result.stdout
    assert "wblstm_semisup: windowed BLSTM, wblstm_sup's training on its half" in result.stdout


def test_each_trained_model_s_weights_are_named_by_their_digest(tmp_path):
    """The digest line: every model dir with final/weights, in order, by asrkit's weights_digest; a model dir
    without an exported model (an alignment dir) is not named."""
    from asrkit.nn.model_dir import weights_digest

    exp = tmp_path / "exp"
    _decode(exp, "wblstm_ce", "test", 30.0)
    for model, data in (("wblstm_ce", b"\x01\x02"), ("mono1", b"\x03")):
        weights = exp / model / "final" / "weights"
        weights.mkdir(parents=True)
        (weights / "model.data-00000-of-00001").write_bytes(data)
        (weights / "model.index").write_bytes(b"index")
    (exp / "wblstm_ce_ali").mkdir()
    lines = [line for line in _make_results(exp).stdout.splitlines() if line.startswith("# weights sha256")]
    assert len(lines) == 1
    named = dict(entry.split() for entry in lines[0].split("): ", 1)[1].split("; "))
    assert list(named) == ["mono1", "wblstm_ce"]
    assert named["wblstm_ce"] == weights_digest(exp / "wblstm_ce" / "final")[:16]
    assert named["mono1"] != named["wblstm_ce"]


def test_the_machine_and_packages_the_results_were_made_with(tmp_path):
    import importlib.metadata
    import importlib.util

    exp = tmp_path / "exp"
    _decode(exp, "wblstm_ce", "test", 30.0)
    lines = [line for line in _make_results(exp).stdout.splitlines() if line.startswith("# machine: ")]
    assert len(lines) == 1 and f"numpy {importlib.metadata.version('numpy')}" in lines[0]
    spec = importlib.util.spec_from_file_location("make_results", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("processor\t: 0\ncpu family\t: 26\nmodel\t\t: 2\nmodel name\t: AMD EPYC\n"
                       "flags\t\t: fpu avx2 avx512f avx512_bf16\n\nprocessor\t: 1\nmodel name\t: AMD EPYC\n")
    assert module.machine_description(str(cpuinfo)) == (
        f"AMD EPYC (family 26, model 2), {os.cpu_count()} cores, avx2 avx512f avx512_bf16")
    assert module.machine_description(str(tmp_path / "none")).startswith("unknown CPU, ")
    assert module.machine_description(str(tmp_path / "none")).endswith("none of avx2 avx512f avx512_bf16 amx_bf16")
