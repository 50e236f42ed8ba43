#!/usr/bin/env python3
"""The recipe's results table (Kaldi's RESULTS): WER per model and test set, and how each model trained.

    steps/make_results.py [--command "run.sh ..."] [--recipe NAME] <exp-dir>  > RESULTS

Reads every <exp-dir>/<model>/decode_<set>/best_wer (asrkit-decode's) and
<exp-dir>/<model>/result.json and config.json (asrkit-train-ce's and
asrkit-train-seq's), and prints the WER lines as Kaldi's RESULTS files do, a
model x test-set table with sMBR's relative change over CE and multi-style's
over clean-only CE, the training speed of each model, and the unrolling
comparison of egs/voicesearch's stage 14 (exp/unroll_b<B>_u<U>, exp/unroll_full; [Variani2017-15k]'s
Tables 1 and 2) with each run's time to convergence: the wall time of the first
validation whose held-out frame accuracy is within CONVERGED_WITHIN of the
run's best.  The pocketsphinx baseline (exp/pocketsphinx/decode_*, written by
steps/pocketsphinx_decode.py with the same lexicon and trigram LM) gets its rows
when its stage ran, and so does Kaldi's (exp/kaldi_<system>/decode_*, written by
steps/kaldi_baseline.sh).  Then the WER per test voice (the test set's speakers are
synthesised voices) of every model that decoded test, from each decode's
score/per_spk.  Last, the LM weight each model's dev sweep chose
(decode_dev/best_lmwt, decode_dev_noisy/best_lmwt) and the seconds each stage
took (<exp-dir>/log/stage_times, run.sh's; a stage run more than once counts its
last run), and the LMs' perplexity on dev from make_lm's logs.
"""

import argparse
import datetime
import glob
import importlib.metadata
import json
import os
import re
import shlex
import sys

from asrkit.nn.model_dir import weights_digest

WER = re.compile(r"%WER\s+([0-9.]+)")
LM_SUMMARY = re.compile(r"make_lm summary: status=ok .*heldout_ppl=([0-9.]+) heldout_oovs=(\d+)")
MIX_SUMMARY = re.compile(r"mix_lm summary: status=ok .*weights=([0-9.,]+) .*mixture_ppl=([0-9.]+)")
UNROLL_MODEL = re.compile(r"^unroll_(b\d+_u\d+|full)$")
CONVERGED_WITHIN = 0.01  # held-out frame accuracy, absolute
# The recipes' models are <network>_<role> (run.sh --am): the acoustic networks, and what each role is.
NETWORKS = {"lstm": "LSTM", "wblstm": "windowed BLSTM", "tdnnf": "TDNN-F"}
ROLES = {
    "ce": "multi-style CE (example server noisifying on the fly)",
    "ce_clean": "clean-only CE ({network}_ce's network and schedule, clean features in-process)",
    "smbr": "sMBR from {network}_ce (seq-mode example servers, lattices on the fly)",
    "ce_clean_nojitter": "{network}_ce_clean without [Mohamed2015]'s jitter (utterances start on group boundaries)",
    "sup": "clean-only CE on the transcribed half of the training set ([McDermott2014]'s demonstration)",
    "semisup": "{network}_sup's training on its half and the most confident hypotheses of the untranscribed half",
    "g1": "clean-only CE at [Mohamed2015]'s 20+1+20 (the recipe's cells and layers, the unrolling comparison's subset)",
    "g8": "clean-only CE at [Mohamed2015]'s 20+8+20 (the recipe's cells and layers, the unrolling comparison's subset)",
    "ctc": "CTC over phones and a blank ({network}_ce_clean's network, features and epochs; whole utterances; "
           "graph with the CTC topology)",
    "lfmmi": "lattice-free MMI from scratch ([Povey2016]; 50-frame chunks, the tree alignments' numerators, a phone "
             "4-gram's denominator graph; uniform priors, {graph}'s graph)",
}
# The frame-level combinations of LF-MMI with the model run.sh --combine-with names, and their adapted second passes.
COMBINED_WITH = {"smbr": "sMBR", "ce": "CE"}


def combination_roles(first):
    """The roles of LF-MMI's combination with the {network}_<first> model and of its adapted second pass."""
    return {
        f"{first}_lfmmi": f"{{network}}_{first} and {{lfmmi}} combined frame by frame (steps/decode_combined.sh: each "
                          "at its own dev LM weight, the combination weight and LM weight chosen on dev)",
        f"{first}_lfmmi_adapted": f"{{network}}_{first}_lfmmi with {{network}}_{first} (with --networks all both "
                                  "models) adapted to each speaker from its first pass (steps/adapt_combined.sh: "
                                  "asrkit-adapt on the first pass's lattices; LM weight chosen on dev)",
    }


ROLES.update(role for first in COMBINED_WITH for role in combination_roles(first).items())
COMBINATIONS = tuple(f"{first}_lfmmi" for first in COMBINED_WITH)
MODEL_NAME = re.compile(r"^(" + "|".join(NETWORKS) + r")_(" + "|".join(ROLES) + r")$")
KALDI_BASELINE = ("Kaldi's mini_librispeech GMM recipe on this recipe's data, lexicon and trigram LM "
                  "(steps/kaldi_baseline.sh; LM weight and insertion penalty chosen on dev)")
DESCRIPTIONS = {
    "pocketsphinx": "pocketsphinx 5 en-us acoustic model, this recipe's lexicon and trigram LM",
    "kaldi_mono": "monophone GMM on MFCC + deltas, " + KALDI_BASELINE,
    "kaldi_tri1": "triphone GMM on MFCC + deltas, " + KALDI_BASELINE,
    "kaldi_tri2b": "triphone GMM on LDA+MLLT features, " + KALDI_BASELINE,
    "kaldi_tri3b": "SAT triphone GMM (LDA+MLLT, per-speaker fMLLR in training and decoding), " + KALDI_BASELINE,
}
VOICE_TABLE_SET = "test"
# wer_per_spk_details.pl's percent row: SPEAKER sys #SENT #WORD Corr Sub Ins Del Err S.Err
PER_SPK_PERCENT_ROW = "sys"
PER_SPK_ERR_COLUMN = 8


def describe(model, lfmmi=None, graph=None):
    """A model dir's description from its name; lfmmi, the LF-MMI model a combination holds (None: the network's
    own, <network>_lfmmi); graph, the model dir whose graph an LF-MMI model decoded with (None: <network>_ce)."""
    if model in DESCRIPTIONS:
        return DESCRIPTIONS[model]
    match = MODEL_NAME.match(model)
    if match:
        network, role = match.groups()
        return f"{NETWORKS[network]}, " + ROLES[role].format(network=network, lfmmi=lfmmi or f"{network}_lfmmi",
                                                             graph=graph or f"{network}_ce")
    match = UNROLL_MODEL.match(model)
    if match:
        kind = match.group(1)
        if kind == "full":
            return "clean CE, full unrolling with length buckets"
        streams, unroll = kind[1:].split("_u")
        return f"clean CE, truncated unrolling b={streams} u={unroll}"
    return model


def describe_trained(exp_dir, model):
    """`describe`, plus the model it continued when its training started from another's weights."""
    description = describe(model, combined_lfmmi_model(exp_dir, model), decoding_graph_model(exp_dir, model))
    config = read_json(exp_dir, model, "config.json") or {}
    if config.get("init_model"):
        description += f", continuing {model_dir_name(config['init_model'])}"
    if model.endswith("_lfmmi") and config:
        command = config.get("command_line") or ""
        command = " ".join(command) if isinstance(command, list) else command
        description += (", multi-style (example server noisifying on the fly)" if "--server-styles" in command
                        else ", clean features in-process")
        if config.get("train", {}).get("xent_regularize"):
            description += f", xent-regularize {config['train']['xent_regularize']:g}"
    return description


def comparisons(wers):
    """(before model, after model, what, the papers' figure) of every comparison whose two models are in
    `wers`: sMBR against CE and multi-style against clean-only CE of each network, and each role of the
    windowed BLSTM against the LSTM's."""
    present = {match.group(1) for match in map(MODEL_NAME.match, wers) if match}
    pairs = []
    for network, name in NETWORKS.items():
        suffix = f" ({name})" if len(present) > 1 else ""
        pairs.append((f"{network}_ce", f"{network}_smbr", f"sMBR relative to CE{suffix}", " (the papers: -10 to -20%)"))
        pairs.append((f"{network}_ce_clean", f"{network}_ce", f"multi-style relative to clean-only CE{suffix}", ""))
        pairs.append((f"{network}_ce_clean", f"{network}_ce_clean_nojitter",
                      f"clean-only CE without jitter relative to with{suffix}", ""))
        pairs.append((f"{network}_sup", f"{network}_semisup",
                      f"untranscribed data: with the selected hypotheses relative to without{suffix}", ""))
        pairs.append((f"{network}_g1", f"{network}_g8", f"20+8+20 relative to 20+1+20{suffix}",
                      " ([Mohamed2015] Table 5: +13% on Hub5'00 without jitter, -1% with it)"))
        pairs.append((f"{network}_ce_clean", f"{network}_ctc", f"CTC relative to the clean-only CE hybrid{suffix}",
                      ""))
        pairs.append((f"{network}_smbr", f"{network}_lfmmi", f"LF-MMI relative to CE + sMBR{suffix}", ""))
        pairs.append((f"{network}_ce_clean", f"{network}_lfmmi", f"LF-MMI relative to clean-only CE{suffix}", ""))
        for first, first_name in COMBINED_WITH.items():
            pairs.append((f"{network}_{first}", f"{network}_{first}_lfmmi",
                          f"{first_name} + LF-MMI combined relative to {first_name}{suffix}", ""))
            pairs.append((f"{network}_{first}_lfmmi", f"{network}_{first}_lfmmi_adapted", "speaker adaptation "
                          f"relative to the {first_name} + LF-MMI combination's first pass{suffix}", ""))
        pairs.append((f"{network}_smbr_lfmmi", f"{network}_ce_lfmmi",
                      f"LF-MMI combined with CE relative to with sMBR{suffix}", ""))
        pairs.append((f"{network}_smbr_lfmmi_adapted", f"{network}_ce_lfmmi_adapted",
                      f"adapted, LF-MMI combined with CE relative to with sMBR{suffix}", ""))
    for role in ROLES:
        pairs.append((f"lstm_{role}", f"wblstm_{role}", f"windowed BLSTM relative to the LSTM, {role}", ""))
    return [pair for pair in pairs if pair[0] in wers and pair[1] in wers]


RESCORED = "_rescored"  # decode_<set>_rescored: steps/rescore_lm.sh's lattices of decode_<set>, rescored


def read_wers(exp_dir):
    """{model: {test set: (wer, best_wer line)}}."""
    table = {}
    for path in sorted(glob.glob(os.path.join(exp_dir, "*", "decode_*", "best_wer"))):
        decode_dir = os.path.dirname(path)
        model = os.path.basename(os.path.dirname(decode_dir))
        test_set = os.path.basename(decode_dir)[len("decode_"):]
        with open(path, encoding="utf-8") as handle:
            line = handle.read().strip()
        match = WER.search(line)
        if match:
            table.setdefault(model, {})[test_set] = (float(match.group(1)), line)
    return table


def portable(line, exp_dir):
    """A %WER line with the exp dir's absolute path written EXP, so RESULTS names no machine's paths."""
    return line.replace(os.path.abspath(exp_dir).rstrip("/") + "/", "EXP/")


def portable_command(command, exp_dir):
    """The recipe's command line with the exp dir written EXP and every other absolute path by its last part
    (/home/me/corpora/data -> data, /x/egs/voiceover/run.sh -> run.sh)."""
    exp = os.path.abspath(exp_dir).rstrip("/")
    words = []
    for word in command.split(" "):
        if word.rstrip("/") == exp:
            word = "EXP"
        elif word.startswith("/"):
            word = os.path.basename(word.rstrip("/")) or word
        words.append(word)
    return " ".join(words)


def read_json(exp_dir, model, name):
    path = os.path.join(exp_dir, model, name)
    if not os.path.exists(path):
        return None
    with open(path, encoding="utf-8") as handle:
        return json.load(handle)


def read_training(exp_dir, model):
    return read_json(exp_dir, model, "result.json")


def model_dir_name(init_model):
    """The model dir's name of a model path (exp/wblstm_ce/final -> wblstm_ce)."""
    return os.path.basename(os.path.dirname(init_model.rstrip("/")))


def combined_lfmmi_model(exp_dir, model):
    """The model dir a combination's dev decode combined with its first model (--combine-model of its
    decode_dev/combination_opts: run.sh --lfmmi-am's), or None for another model or without the file."""
    match = MODEL_NAME.match(model)
    if not match or match.group(2) not in COMBINATIONS:
        return None
    path = os.path.join(exp_dir, model, "decode_dev", "combination_opts")
    if not os.path.exists(path):
        return None
    with open(path, encoding="utf-8") as handle:
        words = handle.read().split()
    return model_dir_name(words[words.index("--combine-model") + 1]) if "--combine-model" in words else None


def decoding_graph_model(exp_dir, model):
    """The model dir whose graph steps/decode_tuned.sh decoded `model` with (its log/decode_tuned.options, the
    command line steps/common.sh records: <graph-dir> <data-root> <model-dir> last), or None without the file.
    run.sh --lfmmi-am decodes one network's LF-MMI model with the other's graph."""
    path = os.path.join(exp_dir, model, "log", "decode_tuned.options")
    if not os.path.exists(path):
        return None
    with open(path, encoding="utf-8") as handle:
        command = handle.readline()
    words = shlex.split(command.lstrip("# "))
    if len(words) < 4 or not words[-3].rstrip("/").endswith("/graph"):
        return None
    return model_dir_name(words[-3])


def continued_model(exp_dir, model):
    """The model whose weights `model`'s training started from (its config's init_model), or None."""
    init_model = (read_json(exp_dir, model, "config.json") or {}).get("init_model")
    return model_dir_name(init_model) if init_model else None


def ce_smbr_training(exp_dir, network):
    """[(model, seconds)] of the trainings behind {network}_smbr: the CE model it started from (the recipes pass
    it as a positional argument), and the clean-only CE model that one continued, if it did; None without them."""
    chain = [f"{network}_smbr", f"{network}_ce"]
    if continued_model(exp_dir, chain[-1]) == f"{network}_ce_clean":
        chain.append(f"{network}_ce_clean")
    results = [(model, read_training(exp_dir, model)) for model in reversed(chain)]
    if any(result is None for _, result in results):
        return None
    return [(model, result["seconds"]) for model, result in results]


# How many hex digits of each model's weights digest RESULTS records: enough to tell two trainings apart.
DIGEST_DIGITS = 16
WEIGHTS_LINE = "# weights sha256"


def trained_model_dirs(exp_dir):
    """The model dirs directly under exp_dir holding an exported model (final/weights), sorted."""
    return sorted(os.path.basename(os.path.dirname(os.path.dirname(path)))
                  for path in glob.glob(os.path.join(exp_dir, "*", "final", "weights")))


def write_weight_digests(out, exp_dir):
    """One line naming each trained model's weights (asrkit.nn.model_dir.weights_digest of its final/): two runs
    whose lines agree trained every model to the bit (bench/recipe_repeatability.py --reference reads it)."""
    models = trained_model_dirs(exp_dir)
    if models:
        out.write(f"{WEIGHTS_LINE} (final/weights, the first {DIGEST_DIGITS} hex digits; the same digest, the same "
                  "network to the bit): " + "; ".join(
                      f"{model} {weights_digest(os.path.join(exp_dir, model, 'final'))[:DIGEST_DIGITS]}"
                      for model in models) + "\n")


# What a run's bits depend on beyond its inputs (docs/training.md: runs repeat on one machine kind): the
# packages that compute, and the CPU's instruction sets that oneDNN and asrkit's kernels choose among.
PACKAGES = ("tensorflow", "tensorflow-cpu", "numpy", "numba", "kaldifst", "kaldi-decoder", "pocketsphinx")
ISA_FLAGS = ("avx2", "avx512f", "avx512_bf16", "amx_bf16")


def machine_description(cpuinfo="/proc/cpuinfo"):
    """'<CPU model> (family F, model M), <n> cores, <the ISA_FLAGS it has>' from cpuinfo ('unknown CPU' where
    unreadable): the model name alone does not tell AMD's generations apart."""
    fields = {}
    try:
        with open(cpuinfo, encoding="utf-8") as handle:
            for line in handle:
                key, _, value = line.partition(":")
                fields.setdefault(key.strip(), value.strip())
    except OSError:
        pass
    flags = set(fields.get("flags", "").split())
    family = f" (family {fields['cpu family']}, model {fields['model']})" if "cpu family" in fields else ""
    return (f"{fields.get('model name', 'unknown CPU')}{family}, {os.cpu_count()} cores, "
            + (" ".join(flag for flag in ISA_FLAGS if flag in flags) or "none of " + " ".join(ISA_FLAGS)))


def write_environment(out, cpuinfo="/proc/cpuinfo"):
    """The machine and package versions the results were made with (the results stage's: the run's own)."""
    versions = []
    for package in PACKAGES:
        try:
            versions.append(f"{package} {importlib.metadata.version(package)}")
        except importlib.metadata.PackageNotFoundError:
            continue
    out.write(f"# machine: {machine_description(cpuinfo)}; packages: {', '.join(versions)}\n")


def write_training_time_comparison(out, exp_dir):
    """Issue #38's comparison: each network's LF-MMI training time against its CE + sMBR models' together."""
    for network in NETWORKS:
        lfmmi = read_training(exp_dir, f"{network}_lfmmi")
        chain = ce_smbr_training(exp_dir, network)
        if lfmmi is None or chain is None:
            continue
        total = sum(seconds for _, seconds in chain)
        out.write(f"# training time, LF-MMI against CE + sMBR: {network}_lfmmi {lfmmi['seconds']:.0f} s against "
                  f"{total:.0f} s (" + " + ".join(f"{model} {seconds:.0f}" for model, seconds in chain)
                  + f"), {lfmmi['seconds'] / max(total, 1e-9):.2f}x\n")


def convergence(valid_history, within=CONVERGED_WITHIN):
    """(step, seconds) of the first validation within `within` of the best held-out accuracy, or None."""
    if not valid_history:
        return None
    best = max(accuracy for _, _, accuracy in valid_history)
    for step, seconds, accuracy in valid_history:
        if accuracy >= best - within:
            return step, seconds
    return None


def relative(before, after):
    return 100.0 * (after - before) / max(before, 1e-9)


def read_per_speaker_wers(decode_dir):
    """{speaker: WER} from a decode's score/per_spk (SUM left out), or None when there is none."""
    path = os.path.join(decode_dir, "score", "per_spk")
    if not os.path.exists(path):
        return None
    wers = {}
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            fields = line.split()
            if len(fields) > PER_SPK_ERR_COLUMN and fields[1] == PER_SPK_PERCENT_ROW and fields[0] != "SUM":
                wers[fields[0]] = float(fields[PER_SPK_ERR_COLUMN])
    return wers


def write_voice_table(out, exp_dir, wers, test_set=VOICE_TABLE_SET):
    """WER per voice (row) and model (column): which voices each model finds hard."""
    columns = {}
    for model in sorted(wers):
        if test_set in wers[model]:
            per_speaker = read_per_speaker_wers(os.path.join(exp_dir, model, f"decode_{test_set}"))
            if per_speaker:
                columns[model] = per_speaker
    if not columns:
        return
    voices = sorted({voice for per_speaker in columns.values() for voice in per_speaker})
    width = max([14] + [len(model) + 2 for model in columns])
    out.write(f"\n# WER (%) per {test_set} voice\n")
    out.write("# " + "voice".ljust(20) + "".join(model.rjust(width) for model in columns) + "\n")
    for voice in voices:
        cells = "".join((f"{columns[m][voice]:.2f}" if voice in columns[m] else "-").rjust(width) for m in columns)
        out.write("# " + voice.ljust(20) + cells + "\n")
    out.write("# " + "all".ljust(20) + "".join(f"{wers[m][test_set][0]:.2f}".rjust(width) for m in columns) + "\n")


def read_lm_weights(exp_dir, model):
    """{dev set: LM weight} from the model's dev sweeps (decode_<dev set>/best_lmwt)."""
    weights = {}
    for path in sorted(glob.glob(os.path.join(exp_dir, model, "decode_*", "best_lmwt"))):
        dev_set = os.path.basename(os.path.dirname(path))[len("decode_"):]
        with open(path, encoding="utf-8") as handle:
            weights[dev_set] = handle.read().strip()
    return weights


def read_prior_scales(exp_dir):
    """{model: prior scale} chosen on dev (exp/MODEL/decode_*/prior_scale, written by decode_tuned)."""
    scales = {}
    for path in sorted(glob.glob(os.path.join(exp_dir, "*", "decode_*", "prior_scale"))):
        with open(path, encoding="utf-8") as handle:
            scales[os.path.basename(os.path.dirname(os.path.dirname(path)))] = handle.read().strip()
    return scales


def read_stage_times(exp_dir):
    """{stage: seconds} from run.sh's log/stage_times ("STAGE SECONDS DATE" lines; the last run counts)."""
    path = os.path.join(exp_dir, "log", "stage_times")
    times = {}
    if os.path.exists(path):
        with open(path, encoding="utf-8") as handle:
            for line in handle:
                fields = line.split()
                if len(fields) >= 2 and fields[0].isdigit() and fields[1].isdigit():
                    times[int(fields[0])] = int(fields[1])
    return times


def read_lm_perplexities(exp_dir):
    """{LM name: (held-out perplexity, held-out OOVs)} from make_lm's summary lines in the stage logs."""
    perplexities = {}
    for path in sorted(glob.glob(os.path.join(exp_dir, "log", "stage*", "make_lm_*.log"))):
        name = os.path.basename(path)[len("make_lm_"):-len(".log")]
        with open(path, encoding="utf-8") as handle:
            for line in handle:
                match = LM_SUMMARY.search(line)
                if match:
                    perplexities[name] = (float(match.group(1)), int(match.group(2)))
    return perplexities


def read_mixed_lm(exp_dir):
    """(weights, perplexity on dev) of the decoding LM that mix_lm interpolated (egs/voiceover), or None."""
    for path in sorted(glob.glob(os.path.join(exp_dir, "log", "stage*", "mix_lm.log"))):
        with open(path, encoding="utf-8") as handle:
            for line in handle:
                match = MIX_SUMMARY.search(line)
                if match:
                    return match.group(1), float(match.group(2))
    return None


def read_warps(exp_dir):
    """set -> [(speaker, warp factor)] that steps/select_warps.sh chose into exp_dir/warps (egs/voiceover)."""
    warps = {}
    for path in sorted(glob.glob(os.path.join(exp_dir, "warps", "spk2warp_*"))):
        with open(path, encoding="utf-8") as handle:
            warps[os.path.basename(path)[len("spk2warp_"):]] = [tuple(line.split()[:2]) for line in handle
                                                                 if line.strip()]
    return warps


def read_kaldi_times(exp_dir):
    """system -> [(phase, seconds)] from each exp_dir/kaldi_<system>/times (steps/kaldi_baseline.sh's "PHASE SECONDS"
    lines: train, align, graph, decode_<set>; a phase run again counts its last run)."""
    times = {}
    for path in sorted(glob.glob(os.path.join(exp_dir, "kaldi_*", "times"))):
        phases = {}
        with open(path, encoding="utf-8") as handle:
            for line in handle:
                fields = line.split()
                if len(fields) == 2 and fields[1].isdigit():
                    phases[fields[0]] = int(fields[1])
        if phases:
            times[os.path.basename(os.path.dirname(path))] = list(phases.items())
    return times


def write_kaldi_times(out, exp_dir):
    """Kaldi's time for each phase of each system, beside asrkit's training lines and stage times."""
    times = read_kaldi_times(exp_dir)
    if times:
        out.write("# Kaldi's seconds here (steps/kaldi_baseline.sh, --nj jobs; features and lang dirs not counted): "
                  + "; ".join(f"{system} " + ", ".join(f"{phase} {seconds}" for phase, seconds in phases)
                              for system, phases in times.items()) + "\n")


def write_unrolling(out, exp_dir, wers):
    """The unrolling comparison's truncated (b, u) runs and the full-unrolling run, one row each."""
    rows, first_config = [], None
    for model in sorted(wers):
        if not UNROLL_MODEL.match(model):
            continue
        result, config = read_training(exp_dir, model), read_json(exp_dir, model, "config.json")
        if result is None or config is None:
            continue
        train = config["train"]
        if train["mode"] == "full":
            batching, frames_per_step = "full, buckets", train["frames_per_batch"]
        else:
            batching, frames_per_step = f"b={train['num_streams']} u={train['unroll']}", \
                train["num_streams"] * train["unroll"]
        converged = convergence(result.get("valid_history"))
        wer = wers[model].get("test", (None,))[0]
        rows.append((model, batching, frames_per_step, wer, result, converged))
        first_config = first_config or config
    if not rows:
        return
    data = first_config["data"]
    out.write(f"\n# Truncated vs full unrolling ([Variani2017-15k] Tables 1 and 2): clean features, "
              f"{data['train_utterances']} training utterances ({data['train_frames']} frames), "
              f"the same network, optimiser and epochs;\n# converged = first validation (every "
              f"{first_config['train']['valid_every']} steps) within {CONVERGED_WITHIN} of the run's best "
              f"held-out frame accuracy\n")
    out.write("# " + "model".ljust(20) + "batching".ljust(16) + "frames/step".rjust(12) + "test WER".rjust(10)
              + "APR".rjust(7) + "frames/s".rjust(10) + "converged".rjust(18) + "total".rjust(8)
              + "held-out acc".rjust(14) + "\n")
    for model, batching, frames_per_step, wer, result, converged in rows:
        converged_text = "-" if converged is None else f"{converged[1]:.0f} s (step {converged[0]})"
        valid = result.get("valid_accuracy")
        out.write("# " + model.ljust(20) + batching.ljust(16) + str(frames_per_step).rjust(12)
                  + ("-" if wer is None else f"{wer:.2f}").rjust(10) + f"{result['apr']:.3f}".rjust(7)
                  + f"{result['frames_per_second']:.0f}".rjust(10) + converged_text.rjust(18)
                  + f"{result['seconds']:.0f} s".rjust(8)
                  + ("-" if valid is None else f"{valid:.4f}").rjust(14) + "\n")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("exp_dir")
    parser.add_argument("--command", default="", help="The recipe command line, recorded at the top.")
    parser.add_argument("--recipe", default="voicesearch", help="The recipe's name (egs/NAME), for the header.")
    args = parser.parse_args()
    wers = read_wers(args.exp_dir)
    if not wers:
        sys.exit(f"{args.exp_dir}: no */decode_*/best_wer files (run the decoding stages first)")
    out = sys.stdout
    out.write(f"# egs/{args.recipe} results, {datetime.date.today().isoformat()}: "
              f"{portable_command(args.command, args.exp_dir)}\n")
    noisy = any("test_noisy" in sets for sets in wers.values())
    out.write("# WER of best paths with lang_test's trigram LM; each asrkit model decodes test at the LM weight its\n"
              "# sweep on dev chose" + (", test_noisy at dev_noisy's" if noisy else "")
              + " (dev's WER is at its own best weight)\n\n")
    for model in sorted(wers):
        for test_set in sorted(wers[model]):
            out.write(f"{portable(wers[model][test_set][1], args.exp_dir)}   # {model}: "
                      f"{describe_trained(args.exp_dir, model)}\n")
    test_sets = sorted({test_set for model in wers.values() for test_set in model})
    out.write("\n# WER (%)\n")
    widths = {test_set: max(14, len(test_set) + 2) for test_set in test_sets}
    # The names' column is as wide as the longest name (an adapted combination's is 25 characters).
    name_width = max(20, max(len(model) for model in wers) + 2)
    out.write("# " + "model".ljust(name_width) + "".join(test_set.rjust(widths[test_set]) for test_set in test_sets)
              + "\n")
    for model in sorted(wers):
        cells = "".join((f"{wers[model][t][0]:.2f}" if t in wers[model] else "-").rjust(widths[t]) for t in test_sets)
        out.write("# " + model.ljust(name_width) + cells + "\n")
    for before_model, after_model, what, papers in comparisons(wers):
        if before_model in wers and after_model in wers:
            changes = [f"{test_set} {relative(wers[before_model][test_set][0], wers[after_model][test_set][0]):+.1f}%"
                       for test_set in test_sets
                       if test_set in wers[before_model] and test_set in wers[after_model]]
            out.write(f"# {what}: " + ", ".join(changes) + papers + "\n")
    for model in sorted(wers):
        rescored = [(test_set[:-len(RESCORED)], test_set) for test_set in sorted(wers[model])
                    if test_set.endswith(RESCORED) and test_set[:-len(RESCORED)] in wers[model]]
        if rescored:
            out.write(f"# lattice rescoring with the 4-gram ({model}, the LM weight chosen on dev): " + ", ".join(
                f"{base} {wers[model][base][0]:.2f} -> {wers[model][after][0]:.2f} "
                f"({relative(wers[model][base][0], wers[model][after][0]):+.1f}%)" for base, after in rescored)
                + " ([Mohamed2015]: -3% with a larger LM)\n")
    for model in sorted(wers):
        selection = os.path.join(args.exp_dir, model, "selection", "score", "wer")
        if os.path.exists(selection):
            with open(selection, encoding="utf-8") as handle:
                line = next((line.strip() for line in handle if line.startswith("%WER")), "")
            out.write(f"# {model}'s untranscribed utterances, their hypotheses against the hidden transcripts: "
                      f"{line}\n")
    weights = {model: read_lm_weights(args.exp_dir, model) for model in sorted(wers)}
    weights = {model: chosen for model, chosen in weights.items() if chosen}
    if weights:
        out.write("# LM weight chosen on dev: " + "; ".join(
            f"{model} " + ", ".join(f"{dev_set} {weight}" for dev_set, weight in chosen.items())
            for model, chosen in weights.items()) + "\n")
    priors = {model: scale for model, scale in read_prior_scales(args.exp_dir).items() if model in wers}
    if priors:
        out.write("# prior scale chosen on dev: " + "; ".join(f"{model} {scale}" for model, scale in priors.items())
                  + "\n")
    perplexities = read_lm_perplexities(args.exp_dir)
    if perplexities:
        out.write("# LM perplexity on dev (its transcripts held out from the LM): " + ", ".join(
            f"{name} {value:.1f} ({oovs} OOV tokens)" for name, (value, oovs) in perplexities.items()) + "\n")
    mixed = read_mixed_lm(args.exp_dir)
    if mixed:
        out.write(f"# decoding LM: test interpolated with the external LM (mix_lm, weights {mixed[0]} fitted on dev): "
                  f"perplexity on dev {mixed[1]:.1f}\n")
    warps = read_warps(args.exp_dir)
    if warps:
        out.write("# warp factors chosen per speaker (VTLN, steps/select_warps.sh; the decodes after it hear dev and "
                  "test warped): " + "; ".join(f"{name} " + ", ".join(f"{speaker} {factor}" for speaker, factor in
                                                                       chosen) for name, chosen in warps.items())
                  + "\n")
    write_voice_table(out, args.exp_dir, wers)
    write_unrolling(out, args.exp_dir, wers)
    out.write("\n# training (this run's last invocation of each trainer)\n")
    for model in sorted(wers):
        result = read_training(args.exp_dir, model)
        if result is None:
            continue
        extra = ""
        if result.get("valid_metrics"):
            extra = " " + " ".join(f"held-out {name} {value:.4f}" for name, value in result["valid_metrics"].items())
        valid = result.get("valid_accuracy")
        out.write(f"# {model}: {result['criterion']} {result['steps']} steps, {result['frames']} frames, "
                  f"{result['frames_per_second']:.0f} frames/s, t_session {result['t_session']:.3f}, "
                  f"APR {result['apr']:.3f}, example servers {result.get('example_server_count', 0)}, "
                  f"{result['seconds']:.0f} s; held-out frame accuracy "
                  f"{'-' if valid is None else f'{valid:.4f}'}{extra}\n")
    write_training_time_comparison(out, args.exp_dir)
    write_kaldi_times(out, args.exp_dir)
    write_weight_digests(out, args.exp_dir)
    write_environment(out)

    times = read_stage_times(args.exp_dir)
    if times:
        out.write(f"\n# stage times (s), {sum(times.values())} in all: "
                  + ", ".join(f"{stage}: {seconds}" for stage, seconds in sorted(times.items())) + "\n")


if __name__ == "__main__":
    main()
