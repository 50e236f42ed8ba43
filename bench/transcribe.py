"""asrkit-transcribe against pocketsphinx on the same audio, in the same run: cold start, real-time factor
on one core, WER, and the package's graph load against parsing HCLG.fst.

    .venv/bin/python bench/transcribe.py --package P --data D --arpa LM --ps-dict DICT \
        [--ps-lm-weight W] [--reference-hyp HYP] [--utterances 100] [--core 0]

- cold start: wall time of a fresh `python -m asrkit.cli.transcribe P file.wav` (model, graph and
  imports included; numba's compiled decoder comes from its on-disk cache, as it does after the first
  run on a machine) against a fresh pocketsphinx process decoding the same file, on a ~5-s file made of
  --data's first utterances (16 kHz WAV, so asrkit resamples it to the model's rate as a user's file
  would be), each --repeats times, interleaved; the median and the range are printed;
- RTF: the first --utterances utterances of --data, in this process pinned to --core with one BLAS
  thread, transcribed by asrkit.Recognizer (batch: whole utterances) and by pocketsphinx (full-utterance
  CMN), CPU seconds over audio seconds (robust to the machine's load, where wall time is not), and
  asrkit's split into acoustic model, decoding and result;
- WER of both against --data's text, and asrkit's hypotheses against --reference-hyp (asrkit-decode's
  hyp.txt at the same parameters): they should agree closely;
- word times: each correctly recognised word's start and end (a word the hypothesis shares with the
  reference in their edit alignment) against forced alignment of the reference transcript on the same
  log-likelihoods: the share within 2 frames, for the recogniser's times (forced alignment of its
  hypothesis) and for the lattice's label frames (the fallback of a package without align/);
- graph load: load_package's graph.npz against kaldifst's read of HCLG.fst and DecodingGraph.from_fst
  (--graph-dir, optional).

pocketsphinx gets the recipe's lexicon (--ps-dict: the pocketsphinx.dict steps/pocketsphinx_decode.py
writes) and ARPA LM, at --ps-lm-weight (the recipe's dev choice; its default otherwise).
"""

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import numpy as np  # noqa: E402

POCKETSPHINX_RATE = 16000

POCKETSPHINX_SCRIPT = """
import sys, numpy as np, soundfile, pocketsphinx
from scipy.signal import resample_poly
samples, rate = soundfile.read(sys.argv[1], dtype="float32")
if rate != 16000:
    samples = resample_poly(samples, 16000, rate).astype(np.float32)
options = {"hmm": pocketsphinx.get_model_path("en-us/en-us"), "lm": sys.argv[2], "dict": sys.argv[3],
           "samprate": 16000, "loglevel": "FATAL"}
if sys.argv[4] != "none":
    options["lw"] = float(sys.argv[4])
decoder = pocketsphinx.Decoder(**options)
decoder.start_utt()
decoder.process_raw((np.clip(np.round(samples * 32767), -32768, 32767).astype(np.int16)).tobytes(), False, True)
decoder.end_utt()
print(decoder.hyp().hypstr if decoder.hyp() is not None else "")
"""


def parse_arguments():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--package", required=True, help="an asrkit-export package")
    parser.add_argument("--data", required=True, help="a data dir with wav.scp and text")
    parser.add_argument("--arpa", required=True, help="the recipe's ARPA LM, for pocketsphinx")
    parser.add_argument("--ps-dict", required=True, help="pocketsphinx dictionary of the recipe's lexicon")
    parser.add_argument("--ps-lm-weight", default=None, help="pocketsphinx's language weight (dev's choice)")
    parser.add_argument("--reference-hyp", default=None, help="asrkit-decode's hyp.txt for the same utterances")
    parser.add_argument("--graph-dir", default=None, help="the graph dir the package was made from (load time)")
    parser.add_argument("--utterances", type=int, default=100)
    parser.add_argument("--seconds", type=float, default=5.0, help="length of the cold-start file")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--core", type=int, default=0, help="the CPU the RTF measurement runs on")
    return parser.parse_args()


def read_utterances(data_dir, count):
    from asrkit.data.data_dir import DataDir

    data = DataDir.load(data_dir)
    return list(data.utterance_ids)[:count]


def load_audio(data_dir, utterance_ids, sample_rate):
    from asrkit.data.audio import AudioOptions, load_utterance_audio
    from asrkit.data.data_dir import DataDir

    data = DataDir.load(data_dir)
    options = AudioOptions(sample_rate=sample_rate, on_rate_mismatch="resample")
    return {utt: load_utterance_audio(data, utt, options) for utt in utterance_ids}


def cold_start_file(data_dir, utterance_ids, seconds, directory):
    """A 16-kHz WAV of the first utterances joined up to `seconds` (cut there); returns its path."""
    import soundfile

    audio = load_audio(data_dir, utterance_ids[:20], POCKETSPHINX_RATE)
    joined = np.concatenate(list(audio.values()))[: int(seconds * POCKETSPHINX_RATE)]
    path = os.path.join(directory, "cold.wav")
    soundfile.write(path, joined, POCKETSPHINX_RATE, subtype="PCM_16")
    return path, len(joined) / POCKETSPHINX_RATE


def cold_starts(args, wav):
    """({name: [wall seconds]}, {name: [CPU seconds]}, outputs) of fresh processes, asrkit and pocketsphinx
    interleaved.  On a shared machine the wall time follows the load; the CPU time (user + system) much less."""
    import resource

    env = {**os.environ, "PYTHONPATH": ROOT}
    commands = {
        "asrkit-transcribe": [sys.executable, "-m", "asrkit.cli.transcribe", args.package, wav],
        "pocketsphinx": [sys.executable, "-c", POCKETSPHINX_SCRIPT, wav, args.arpa, args.ps_dict,
                         args.ps_lm_weight or "none"],
    }
    times = {name: [] for name in commands}
    cpu = {name: [] for name in commands}
    outputs = {}
    for _ in range(args.repeats):
        for name, command in commands.items():
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            start = time.monotonic()
            run = subprocess.run(command, capture_output=True, text=True, env=env)
            times[name].append(time.monotonic() - start)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu[name].append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
            if run.returncode:
                raise SystemExit(f"{name} failed: {run.stderr[-2000:]}")
            outputs[name] = run.stdout.strip()
    return times, cpu, outputs


def asrkit_pass(args, audio):
    """({utt: words}, cpu seconds, {stage: cpu seconds}, Recognizer) of asrkit.Recognizer over the utterances (one
    core, one BLAS thread).  The stages are those of Recognizer.transcribe: the acoustic model (front end and
    network), decoding (lattice_faster), and the result (confidences from the lattice, forced alignment)."""
    from asrkit.recognizer.recognizer import Recognizer, decode_loglikes

    recognizer = Recognizer(args.package)
    first = next(iter(audio.values()))
    recognizer.transcribe(first)  # the aligner's lexicon and numba's code loaded before timing
    hyps = {}
    start = time.process_time()
    for utt, samples in audio.items():
        hyps[utt] = recognizer.transcribe(samples).text.split()
    cpu = time.process_time() - start
    stages = dict.fromkeys(("acoustic model", "decoding", "result"), 0.0)
    for samples in audio.values():
        began = time.process_time()
        loglikes = recognizer.acoustic.log_likelihoods(samples)
        decoded_at = time.process_time()
        decoded = decode_loglikes(recognizer.package, loglikes)
        result_at = time.process_time()
        recognizer.result(loglikes, decoded=decoded)
        stages["acoustic model"] += decoded_at - began
        stages["decoding"] += result_at - decoded_at
        stages["result"] += time.process_time() - result_at
    return hyps, cpu, stages, recognizer


def word_time_agreement(recognizer, audio, refs, tolerance=2):
    """{"alignment": share, "lattice": share, "words": n}: correctly recognised words whose start and end
    frames are within `tolerance` frames of the reference transcript's forced alignment."""
    import difflib

    from asrkit.recognizer.recognizer import decode_loglikes
    from asrkit.recognizer.word_times import lattice_word_frames

    aligner = recognizer.aligner
    within = {"alignment": 0, "lattice": 0}
    total = 0
    for utt, samples in audio.items():
        loglikes = recognizer.acoustic.log_likelihoods(samples)
        decoded = decode_loglikes(recognizer.package, loglikes)
        words = [recognizer.package.words[word] for word in decoded.word_ids]
        reference = aligner.word_frames(refs[utt], loglikes, recognizer.package.acoustic_scale)
        hypothesis = aligner.word_frames(words, loglikes, recognizer.package.acoustic_scale)
        if reference is None or hypothesis is None:
            continue
        candidates = {"alignment": hypothesis,
                      "lattice": lattice_word_frames(decoded.lattice, decoded.path_rows, len(loglikes))}
        matcher = difflib.SequenceMatcher(a=refs[utt], b=words, autojunk=False)
        for block in matcher.get_matching_blocks():
            for offset in range(block.size):
                ref_frames = reference[block.a + offset]
                total += 1
                for name, frames in candidates.items():
                    ours = frames[block.b + offset]
                    within[name] += abs(ours[0] - ref_frames[0]) <= tolerance and abs(ours[1] - ref_frames[1]) <= tolerance
    return {name: count / max(total, 1) for name, count in within.items()} | {"words": total}


def pocketsphinx_pass(args, audio):
    import pocketsphinx

    from asrkit.data.audio import to_pcm16

    options = {"hmm": pocketsphinx.get_model_path("en-us/en-us"), "lm": args.arpa, "dict": args.ps_dict,
               "samprate": POCKETSPHINX_RATE, "loglevel": "FATAL"}
    if args.ps_lm_weight:
        options["lw"] = float(args.ps_lm_weight)
    decoder = pocketsphinx.Decoder(**options)
    hyps = {}
    start = time.process_time()
    for utt, samples in audio.items():
        decoder.start_utt()
        decoder.process_raw(to_pcm16(samples).tobytes(), no_search=False, full_utt=True)
        decoder.end_utt()
        hypothesis = decoder.hyp()
        words = hypothesis.hypstr.split() if hypothesis is not None else []
        hyps[utt] = [word for word in words if not word.startswith(("<", "[", "+"))]
    return hyps, time.process_time() - start


def graph_load_times(args):
    """(package load seconds, HCLG.fst parse + DecodingGraph.from_fst seconds)."""
    import kaldifst

    from asrkit.decode.lattice_faster import DecodingGraph
    from asrkit.recognizer.package import load_package

    start = time.monotonic()
    load_package(args.package)
    package_seconds = time.monotonic() - start
    if not args.graph_dir:
        return package_seconds, None
    start = time.monotonic()
    DecodingGraph.from_fst(kaldifst.StdVectorFst.read(os.path.join(args.graph_dir, "HCLG.fst")))
    return package_seconds, time.monotonic() - start


def wer_line(refs, hyps):
    from asrkit.scoring import score_texts
    from asrkit.scoring.report import format_wer_line

    scored = score_texts({utt: refs[utt] for utt in hyps}, hyps)
    return format_wer_line(scored.counts, scored.partial)


def spread(values):
    return f"median {statistics.median(values):.2f} s (range {min(values):.2f}-{max(values):.2f})"


def main():
    from threadpoolctl import threadpool_limits

    from asrkit.recognizer.package import load_package
    from asrkit.scoring import read_kaldi_text

    args = parse_arguments()
    utterance_ids = read_utterances(args.data, args.utterances)
    with tempfile.TemporaryDirectory() as directory:
        wav, seconds = cold_start_file(args.data, utterance_ids, args.seconds, directory)
        times, cpu, outputs = cold_starts(args, wav)
    print(f"cold start, {seconds:.2f}-s file, {args.repeats} runs each:")
    for name, values in times.items():
        print(f"  {name:18s} wall {spread(values)}, CPU {spread(cpu[name])}: {outputs[name]!r}")
    for what, values in (("wall", times), ("CPU", cpu)):
        ratio = statistics.median(values["asrkit-transcribe"]) / statistics.median(values["pocketsphinx"])
        print(f"  asrkit / pocketsphinx, {what}: {ratio:.2f}x")

    os.sched_setaffinity(0, {args.core})
    threadpool_limits(1)
    package = load_package(args.package)
    audio = load_audio(args.data, utterance_ids, package.sample_rate)
    audio_seconds = sum(len(samples) for samples in audio.values()) / package.sample_rate
    ours, our_cpu, stages, recognizer = asrkit_pass(args, audio)
    ps_audio = load_audio(args.data, utterance_ids, POCKETSPHINX_RATE)
    theirs, their_cpu = pocketsphinx_pass(args, ps_audio)
    refs = read_kaldi_text(os.path.join(args.data, "text"))
    print(f"{len(audio)} utterances, {audio_seconds:.1f} s of audio, one core (CPU {args.core}), one BLAS thread:")
    print(f"  asrkit       RTF {our_cpu / audio_seconds:.4f} (CPU s / audio s)  {wer_line(refs, ours)}")
    print(f"  pocketsphinx RTF {their_cpu / audio_seconds:.4f}                    {wer_line(refs, theirs)}")
    print(f"  asrkit / pocketsphinx CPU time: {our_cpu / their_cpu:.2f}x")
    print("  asrkit's CPU per audio second by stage (a second pass): "
          + ", ".join(f"{stage} {cpu / audio_seconds:.4f}" for stage, cpu in stages.items()))
    if args.reference_hyp:
        reference = read_kaldi_text(args.reference_hyp)
        print(f"  asrkit against asrkit-decode's hypotheses: {wer_line(reference, ours)}")
    if recognizer.aligner is not None:
        agreement = word_time_agreement(recognizer, audio, refs)
        print(f"  word times within 2 frames of the reference's forced alignment, {agreement['words']} correctly "
              f"recognised words: {100 * agreement['alignment']:.1f}% (forced alignment of the hypothesis), "
              f"{100 * agreement['lattice']:.1f}% (lattice label frames)")
    package_seconds, fst_seconds = graph_load_times(args)
    line = f"package load (graph.npz and the rest) {package_seconds:.2f} s"
    if fst_seconds is not None:
        line += f"; HCLG.fst read + DecodingGraph.from_fst {fst_seconds:.2f} s ({fst_seconds / package_seconds:.1f}x)"
    print(line)


if __name__ == "__main__":
    main()
