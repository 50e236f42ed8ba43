"""asrkit-decode as a library: a graph dir, a model dir, a data dir and a log-likelihood source in, a decode dir out.

Decode dir layout (Kaldi's names where Kaldi has them):
  hyp.JOB.txt, hyp.txt      1-best word sequences at --acoustic-scale (Kaldi text format)
  costs.JOB.txt, costs.txt  utt, status, frames, graph cost, acoustic cost (unscaled),
                            total cost (graph + acoustic-scale x acoustic), beam used
  lat.JOB.h5, lat.scp       lattices (asrkit.decode.lattice format), with --write-lattices
  log/decode.JOB.log        job logs
  scoring/LMWT.txt          1-best at each LM weight of the sweep
  wer_LMWT, best_wer        Kaldi's %WER lines per LM weight and the best one
  best_lmwt                 the LM weight of best_wer (after a sweep)
  score/                    asrkit-score reports (wer, per_utt, ops, per_spk) of the best LM weight

The LM-weight sweep scores the 1-best at LMWT = --min-lmwt, + --lmwt-step, ..,
--max-lmwt.  An LM weight w corresponds to the acoustic scale 1/w (Kaldi's
convention), e.g. --acoustic-scale 0.5 ~ LMWT 2.  Two ways (sweep_method):
- "lattice", Kaldi's local/score.sh: the best path of one lattice per utterance
  under LMWT x graph + acoustic.  Decoding uses asrkit's lattice decoder
  (asrkit.decode.lattice_faster) and keeps the lattices in memory (they are
  written only with --write-lattices).  One decoding pass for every weight.
- "best-path": FasterDecoder again at each acoustic scale 1/LMWT over the same
  log-likelihoods (computed once).  Exact for each weight, where a lattice
  holds only the paths within its lattice beam, but a decoding pass per weight.
Without the sweep, FasterDecoder gives the 1-best at --acoustic-scale and the
score of that 1-best is reported.  A sweep chooses the weight, so it belongs
on a dev set; a test set is decoded at the weight chosen there.
"""

import dataclasses
import logging
import math
import os
import time

from asrkit.data.data_dir import DataDir
from asrkit.data.kaldi_files import c_sorted
from asrkit.decode import defaults
from asrkit.decode.decoder import DecoderOptions, EMPTY, FAILED, GraphDecoder, PARTIAL, RETRIED
from asrkit.decode.lattice import best_path_words
from asrkit.errors import AsrkitError, AudioError, FeatureError
from asrkit.graph.hclg import read_num_pdfs
from asrkit.graph.symbols import SymbolTable
from asrkit.hmm.num_pdfs import read_num_pdfs_file
from asrkit.io.atomic import atomic_output
from asrkit.io.table import ShardWriter, shard_path, write_scp
from asrkit.parallel import merge_job_text_files, remove_outputs_of_extra_jobs, run_jobs, split_evenly
from asrkit.scoring import read_kaldi_text, read_utt2spk, score_texts, wer_lines, write_score_dir
from asrkit.scoring.report import format_wer_line

logger = logging.getLogger("asrkit.decode")

MISSING = "missing"


@dataclasses.dataclass
class DecodeOptions:
    decoder: DecoderOptions = dataclasses.field(default_factory=DecoderOptions)
    nj: int = 1
    write_lattices: bool = False
    scoring: bool = True
    lmwt_sweep: bool = True
    sweep_method: str = "lattice"  # or "best-path" (module docstring)
    min_lmwt: float = defaults.MIN_LMWT
    max_lmwt: float = defaults.MAX_LMWT
    lmwt_step: float = defaults.LMWT_STEP
    max_fail_ratio: float = 0.05

    def lm_weights(self):
        """The sweep's LM weights (lm_weight_range)."""
        return lm_weight_range(self.min_lmwt, self.max_lmwt, self.lmwt_step)


def lm_weight_range(min_lmwt, max_lmwt, step):
    """min_lmwt, min_lmwt + step, .. up to max_lmwt, rounded so that file names (wer_3.5) come out clean."""
    if step <= 0:
        raise AsrkitError(f"--lmwt-step must be positive, not {step:g}")
    count = math.floor((max_lmwt - min_lmwt) / step + 1e-9) + 1
    return [round(min_lmwt + index * step, 6) for index in range(max(count, 0))]


@dataclasses.dataclass
class DecodeJob:
    index: int
    graph_dir: str
    decode_dir: str
    utterance_ids: list
    source: object  # a LoglikeSource
    options: DecodeOptions
    make_lattices: bool
    lm_weights: list

    @property
    def log_file(self):
        return os.path.join(self.decode_dir, "log", f"decode.{self.index}.log")


@dataclasses.dataclass
class DecodeJobResult:
    index: int
    statuses: dict  # utt -> status
    frames: int
    seconds: float
    sweep: dict  # lm weight -> {utt: [word ids]}


@dataclasses.dataclass
class DecodeResult:
    utterances: int
    decoded: int
    retried: list
    partial: list
    failed: list
    empty: list
    missing: list
    frames: int
    decode_seconds: float
    wall_seconds: float
    wer: float | None = None
    best_lmwt: float | None = None
    wer_line: str | None = None
    oov_reference_words: int = 0


def read_graph_num_pdfs(graph_dir):
    path = os.path.join(graph_dir, "num_pdfs")
    if not os.path.exists(path):
        raise AsrkitError(f"{path} does not exist; build the graph with utils/mkgraph")
    return read_num_pdfs_file(path)


def check_pdf_counts(graph_dir, model_dir, source):
    """Refuse, before any decoding, a graph, model and log-likelihoods that disagree on the number of pdfs."""
    graph_pdfs = read_graph_num_pdfs(graph_dir)
    model_pdfs = read_num_pdfs(model_dir)
    if model_pdfs != graph_pdfs:
        raise AsrkitError(
            f"the model in {model_dir} has {model_pdfs} pdfs but the graph in {graph_dir} was built for "
            f"{graph_pdfs} (fix: rebuild the graph with utils/mkgraph for this model)"
        )
    source_pdfs = source.num_pdfs()
    if source_pdfs != graph_pdfs:
        raise AsrkitError(
            f"the log-likelihoods ({source.describe()}) have {source_pdfs} columns but the graph in {graph_dir} "
            f"has {graph_pdfs} pdfs; they do not come from this model"
        )
    return graph_pdfs


def _words(word_ids, words):
    return " ".join(words.symbol_of[word] for word in word_ids)


def run_decode_job(job, context):
    log = context.logger
    words = SymbolTable.read(os.path.join(job.graph_dir, "words.txt"))
    decoder = GraphDecoder.from_file(os.path.join(job.graph_dir, "HCLG.fst"), job.options.decoder,
                                     lattices=job.make_lattices)
    log.info("job %d: %d utterances, %s decoder, options %s", job.index, len(job.utterance_ids),
             "asrkit's lattice" if job.make_lattices else "FasterDecoder", job.options.decoder)
    outputs = _JobOutputs(job)
    lattice_writer = None
    if job.options.write_lattices:
        lattice_writer = ShardWriter(shard_path(job.decode_dir, "lat", job.index),
                                     config={"acoustic_scale": job.options.decoder.acoustic_scale})
    try:
        available = set(job.source.utterance_ids())
        for utterance_id in job.utterance_ids:
            context.advance(1)
            loglikes = _utterance_loglikes(job, utterance_id, available, outputs.statuses, log)
            if loglikes is not None:
                _decode_utterance(job, decoder, words, utterance_id, loglikes, outputs, lattice_writer, log)
    except BaseException:
        if lattice_writer is not None:
            lattice_writer.abort()
        raise
    if lattice_writer is not None:
        lattice_writer.close()
    outputs.write()
    log.info("job %d done: %d frames decoded in %.2f s (%.0f frames/s)", job.index, outputs.frames, outputs.busy,
             outputs.frames / outputs.busy if outputs.busy > 0 else 0.0)
    sweep = {weight: {utt: _words(ids, words).split() for utt, ids in hyps.items()}
             for weight, hyps in outputs.sweep.items()}
    return DecodeJobResult(job.index, outputs.statuses, outputs.frames, outputs.busy, sweep)


class _JobOutputs:
    """What a decoding job has produced so far: statuses, frame and time counts, hypotheses, costs, and the
    LM-weight sweep's word ids per weight."""

    def __init__(self, job):
        self.job = job
        self.statuses, self.frames, self.busy = {}, 0, 0.0
        self.sweep = {weight: {} for weight in job.lm_weights}
        self.hyp_lines, self.cost_lines = [], []

    def write(self):
        """hyp.JOB.txt and costs.JOB.txt, each written whole or not at all."""
        for name, lines in (("hyp", self.hyp_lines), ("costs", self.cost_lines)):
            with atomic_output(os.path.join(self.job.decode_dir, f"{name}.{self.job.index}.txt")) as out:
                out.writelines(line + "\n" for line in lines)


def _utterance_loglikes(job, utterance_id, available, statuses, log):
    """The utterance's log-likelihoods, or None (its status MISSING, and why logged) when there are none."""
    if utterance_id not in available:
        statuses[utterance_id] = MISSING
        log.warning("%s: no log-likelihoods in %s", utterance_id, job.source.describe())
        return None
    try:
        return job.source.loglikes(utterance_id)
    except (AudioError, FeatureError) as error:
        # One unreadable recording, or features that hold NaN or inf, cost their utterance only (counted).
        statuses[utterance_id] = MISSING
        log.warning("%s: no log-likelihoods: %s", utterance_id, error)
        return None


def _decode_utterance(job, decoder, words, utterance_id, loglikes, outputs, lattice_writer, log):
    start = time.monotonic()
    result = decoder.decode(loglikes)
    outputs.busy += time.monotonic() - start
    outputs.statuses[utterance_id] = result.status
    outputs.frames += result.num_frames
    if not _has_path(result, utterance_id, job.options.decoder, log):
        return
    text = _words(result.words, words)
    outputs.hyp_lines.append(f"{utterance_id} {text}".rstrip())
    outputs.cost_lines.append(
        f"{utterance_id} {result.status} {result.num_frames} {result.graph_cost:.4f} "
        f"{result.acoustic_cost:.4f} {result.total_cost:.4f} {result.beam:g}"
    )
    log.info("%s %s (frames %d, cost per frame %.3f)", utterance_id, text, result.num_frames,
             result.total_cost / result.num_frames)
    if job.lm_weights and not job.make_lattices:
        # Best paths at each weight by decoding again (the lattice decoder's sweep reads its lattice below).
        for weight in job.lm_weights:
            start = time.monotonic()
            swept = decoder.decode(loglikes, acoustic_scale=1.0 / weight)
            outputs.busy += time.monotonic() - start
            outputs.sweep[weight][utterance_id] = swept.words if swept.status not in (FAILED, EMPTY) else []
    if result.lattice is not None:
        for weight in job.lm_weights:
            best = best_path_words(result.lattice, weight)
            outputs.sweep[weight][utterance_id] = best if best is not None else []
        if lattice_writer is not None:
            lattice_writer.write(utterance_id, result.lattice, attrs={"start": 0})


def _has_path(result, utterance_id, options, log):
    """Whether the decoder's result has words to keep; says in the log what was wrong or approximate."""
    if result.status == EMPTY:
        log.warning("%s: no frames; not decoded", utterance_id)
        return False
    if result.status == FAILED:
        log.warning("%s: no path reached a final state at beam %g nor at retry beam %g", utterance_id,
                    options.beam, options.effective_retry_beam)
        return False
    if result.status == RETRIED:
        log.warning("%s: decoded only at the retry beam %g", utterance_id, result.beam)
    if result.status == PARTIAL:
        log.warning("%s: no final state reached; keeping the best partial path", utterance_id)
    return True


def write_best_score(data_dir, decode_dir, best, weight=None):
    """A decode dir's score/ (per_spk too where data_dir has utt2spk), best_wer and best_lmwt for `best`,
    the scoring result of the hypotheses at LM weight `weight`; returns its %WER line.

    weight None: no weight was chosen (one decode, or another decoder), so best_wer points at score/wer
    and an earlier sweep's best_lmwt is removed: it would be misread as this decode's choice.
    """
    utt2spk_path = os.path.join(data_dir, "utt2spk")
    utt2spk = read_utt2spk(utt2spk_path) if os.path.exists(utt2spk_path) else None
    write_score_dir(os.path.join(decode_dir, "score"), best, utt2spk=utt2spk, utt2spk_path=utt2spk_path)
    line = format_wer_line(best.counts, best.partial)
    where = f"wer_{weight:g}" if weight is not None else "score/wer"
    with atomic_output(os.path.join(decode_dir, "best_wer")) as out:
        out.write(f"{line} {os.path.join(decode_dir, where)}\n")
    best_lmwt_path = os.path.join(decode_dir, "best_lmwt")
    if weight is not None:
        with atomic_output(best_lmwt_path) as out:
            out.write(f"{weight:g}\n")
    elif os.path.exists(best_lmwt_path):
        os.remove(best_lmwt_path)
    return line


def _score(data_dir, graph_dir, decode_dir, options, results, result):
    refs = read_kaldi_text(os.path.join(data_dir, "text"))
    words = SymbolTable.read(os.path.join(graph_dir, "words.txt"))
    oov = [word for ref_words in refs.values() for word in ref_words if word not in words]
    result.oov_reference_words = len(oov)
    if oov:
        logger.warning("%d reference words (%d distinct) are not in %s/words.txt and cannot be recognised, e.g. %s",
                       len(oov), len(set(oov)), graph_dir, " ".join(sorted(set(oov))[:10]))
    sweep = {}
    for job_result in results:
        for weight, hyps in job_result.sweep.items():
            sweep.setdefault(weight, {}).update(hyps)
    asked = 1.0 / options.decoder.acoustic_scale
    if sweep:
        best_weight, best, line = score_lm_sweep(data_dir, decode_dir, refs, sweep, asked)
    else:
        best_weight, best = None, score_texts(refs, read_kaldi_text(os.path.join(decode_dir, "hyp.txt")))
        line = write_best_score(data_dir, decode_dir, best)
    result.wer, result.best_lmwt, result.wer_line = best.wer, best_weight, line
    logger.info("best: %s%s", line, f" at LMWT {best_weight:g}" if best_weight is not None else "")


def score_lm_sweep(data_dir, decode_dir, refs, sweep, asked_weight):
    """Score an LM-weight sweep, sweep {weight: {utt: [words]}}, against refs (data_dir's text) into decode_dir:
    scoring/LMWT.txt and wer_LMWT for every weight, then the best weight's score/, best_wer and best_lmwt
    (write_best_score).  Ties go to the weight nearest asked_weight, the one the decode stood for.  Returns
    (best weight, its scoring result, its %WER line)."""
    candidates = {}
    os.makedirs(os.path.join(decode_dir, "scoring"), exist_ok=True)
    for weight in sorted(sweep):
        hyps = {utt: sweep[weight][utt] for utt in c_sorted(sweep[weight])}
        with atomic_output(os.path.join(decode_dir, "scoring", f"{weight:g}.txt")) as out:
            out.writelines(f"{utt} {' '.join(words_)}".rstrip() + "\n" for utt, words_ in hyps.items())
        scored = score_texts(refs, hyps)
        with atomic_output(os.path.join(decode_dir, f"wer_{weight:g}")) as out:
            out.write("\n".join(wer_lines(scored)) + "\n")
        candidates[weight] = scored
        logger.info("LMWT %g: %s", weight, format_wer_line(scored.counts, scored.partial))
    best_weight = min(candidates, key=lambda weight: (candidates[weight].counts.errors, abs(weight - asked_weight)))
    best = candidates[best_weight]
    return best_weight, best, write_best_score(data_dir, decode_dir, best, best_weight)


def decode_data_dir(graph_dir, model_dir, data_dir, decode_dir, source, options=None):
    """Decode every utterance of data_dir with log-likelihoods from `source`; returns DecodeResult."""
    options = options or DecodeOptions()
    start = time.monotonic()
    graph_dir, model_dir, data_dir = map(os.fspath, (graph_dir, model_dir, data_dir))
    decode_dir = os.path.abspath(decode_dir)
    for name in ("HCLG.fst", "words.txt"):
        if not os.path.exists(os.path.join(graph_dir, name)):
            raise AsrkitError(f"{graph_dir}/{name} does not exist; build the graph with utils/mkgraph")
    num_pdfs = check_pdf_counts(graph_dir, model_dir, source)
    data = DataDir.load(data_dir)
    utterance_ids = list(data.utterance_ids)
    if not utterance_ids:
        raise AsrkitError(f"data directory {data_dir} has no utterances")
    has_text = os.path.exists(os.path.join(data_dir, "text"))
    scoring = options.scoring and has_text
    if options.sweep_method not in ("lattice", "best-path"):
        raise AsrkitError(f"sweep method must be lattice or best-path, not {options.sweep_method!r}")
    lm_weights = options.lm_weights() if scoring and options.lmwt_sweep else []
    if scoring and options.lmwt_sweep and not lm_weights:
        raise AsrkitError(f"--min-lmwt {options.min_lmwt:g} is above --max-lmwt {options.max_lmwt:g}")
    make_lattices = options.write_lattices or (bool(lm_weights) and options.sweep_method == "lattice")
    os.makedirs(os.path.join(decode_dir, "log"), exist_ok=True)
    jobs = [
        DecodeJob(index, graph_dir, decode_dir, part, source, options, make_lattices, lm_weights)
        for index, part in enumerate(split_evenly(utterance_ids, options.nj), 1)
    ]
    remove_outputs_of_extra_jobs(decode_dir, len(jobs), ["hyp.{}.txt", "costs.{}.txt", "lat.{}.h5"])
    logger.info("decoding %d utterances of %s with %s (%d pdfs, %s) in %d jobs (logs: %s/log/decode.JOB.log)",
                len(utterance_ids), data_dir, graph_dir, num_pdfs, source.describe(), len(jobs), decode_dir)
    results = run_jobs(run_decode_job, jobs, options.nj, "decode", lambda job: len(job.utterance_ids), logger)

    merge_job_text_files([os.path.join(decode_dir, f"hyp.{job.index}.txt") for job in jobs],
                      os.path.join(decode_dir, "hyp.txt"))
    merge_job_text_files([os.path.join(decode_dir, f"costs.{job.index}.txt") for job in jobs],
                      os.path.join(decode_dir, "costs.txt"))
    if options.write_lattices:
        write_scp(os.path.join(decode_dir, "lat.scp"),
                  [shard_path(decode_dir, "lat", job.index) for job in jobs])
    statuses = {}
    for job_result in results:
        statuses.update(job_result.statuses)

    def having(status):
        return [utt for utt in utterance_ids if statuses.get(utt) == status]

    result = DecodeResult(
        utterances=len(utterance_ids),
        decoded=sum(1 for status in statuses.values() if status not in (FAILED, EMPTY, MISSING)),
        retried=having(RETRIED), partial=having(PARTIAL), failed=having(FAILED), empty=having(EMPTY),
        missing=having(MISSING), frames=sum(r.frames for r in results),
        decode_seconds=sum(r.seconds for r in results), wall_seconds=0.0,
    )
    for what, ids in (("retried at the larger beam", result.retried), ("failed", result.failed),
                      ("empty", result.empty), ("without log-likelihoods", result.missing),
                      ("partial", result.partial)):
        if ids:
            logger.warning("%d utterances %s: %s%s", len(ids), what, " ".join(ids[:10]),
                           " ..." if len(ids) > 10 else "")
    if scoring:
        _score(data_dir, graph_dir, decode_dir, options, results, result)
    result.wall_seconds = time.monotonic() - start
    not_decoded = len(result.failed) + len(result.empty) + len(result.missing)
    if not_decoded > options.max_fail_ratio * len(utterance_ids):
        raise AsrkitError(
            f"{not_decoded} of {len(utterance_ids)} utterances were not decoded ({len(result.failed)} failed, "
            f"{len(result.empty)} empty, {len(result.missing)} without log-likelihoods), more than "
            f"--max-fail-ratio {options.max_fail_ratio:g}; see {decode_dir}/log/decode.*.log"
        )
    return result
