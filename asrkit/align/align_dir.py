"""asrkit-align as a library: a data dir and a lang dir (and a log-likelihood source) in, an ali dir out.

Two ways to align (asrkit.align.ali_dir describes the output):
  flat_start_data_dir  equal alignment of each reference (asrkit.align.equal), no model;
  align_data_dir       Viterbi forced alignment through each utterance's phone graph
                       (asrkit.align.phone_graph, state_graph, viterbi) on log-likelihoods
                       from a LoglikeSource (a table now, the acoustic model later).
The flat start may place the end silences by the frame energies of the data
dir's features (AlignOptions.speech_span; asrkit.align.equal.speech_span).
Both run `nj` jobs with logs in <ali-dir>/log/align.JOB.log.  An utterance
that cannot be aligned (out-of-vocabulary words, fewer frames than HMM states,
no log-likelihoods, no path within the retry beam) is named in failed.txt
and the logs, and left out; the run fails when more than --max-fail-ratio
of the utterances have no alignment.  Log-likelihoods whose frame count
differs from utt2num_frames are refused outright: they come from other
features (another frame rate or another data dir).
"""

import dataclasses
import json
import logging
import os
import time

from asrkit.align.ali_dir import AliJobWriter, finish_ali_dir, remove_stale_job_outputs
from asrkit.align.equal import (
    SpeechSpanOptions,
    TooFewFramesError,
    equal_alignment,
    log_mel_energy,
    reference_phones,
    speech_span,
)
from asrkit.align.lang import TranscriptError, read_align_lang
from asrkit.align.phone_graph import make_phone_graph
from asrkit.align.state_graph import make_state_graph
from asrkit.align.viterbi import FAILED, RETRIED, ViterbiOptions, align
from asrkit.data.data_dir import DataDir
from asrkit.errors import AsrkitError, AudioError, FeatureError
from asrkit.frontend.finite import check_finite
from asrkit.graph.hclg import check_phones_compatible, model_outputs, read_num_pdfs
from asrkit.graph.symbols import SymbolTable
from asrkit.hmm.topology import Topology
from asrkit.hmm.tree import ContextDependency, monophone_tree
from asrkit.io.table import TableReader
from asrkit.parallel import run_jobs, split_evenly

logger = logging.getLogger("asrkit.align")

TREE_FILE = "tree.json"


@dataclasses.dataclass
class AlignOptions:
    viterbi: ViterbiOptions = dataclasses.field(default_factory=ViterbiOptions)
    self_loop_scale: float = 0.1
    transition_scale: float = 1.0
    nj: int = 1
    map_oov: bool = False  # align out-of-vocabulary words as the lang dir's OOV word instead of skipping
    max_fail_ratio: float = 0.05
    # Flat start only: end silences from the features' frame energies (None: plain equal alignment).
    speech_span: SpeechSpanOptions | None = None


@dataclasses.dataclass
class AlignJob:
    index: int
    ali_dir: str
    lang_dir: str
    tree_path: str
    topo_path: str
    utterances: list  # (utt, transcript, num_frames)
    source: object  # LoglikeSource, None for the flat start
    options: AlignOptions
    features: tuple | None = None  # flat start by energy: (feats.scp, compression)

    @property
    def log_file(self):
        return os.path.join(self.ali_dir, "log", f"align.{self.index}.log")


@dataclasses.dataclass
class AlignResult:
    utterances: int
    aligned: int
    retried: list
    failed: dict  # utt -> reason
    frames: int
    align_seconds: float  # time in the aligner itself, summed over jobs
    wall_seconds: float = 0.0


class LengthMismatchError(AsrkitError):
    """Log-likelihoods with another number of frames than the data dir's utt2num_frames."""


def length_mismatch_message(utterance_id, num_frames, source_frames, source):
    return (f"{utterance_id}: utt2num_frames says {num_frames} frames but {source.describe()} has "
            f"{source_frames}; they come from different features")


def _align_one(job, lang, tree, topology, utterance_id, transcript, num_frames, available, features=None):
    """(Alignment, number of phones) or a reason string for the failure."""
    if transcript is None:
        # Not the same as an empty line, which says the utterance has no words and aligns as silence.
        return "no line in the data dir's text (an empty line would align it as silence)"
    try:
        words = lang.words_of(transcript, job.options.map_oov)
    except TranscriptError as error:
        return str(error)
    if job.source is None:
        phones = reference_phones(words, lang)
        speech = None
        if features is not None:
            if utterance_id not in features:
                return f"no features in {job.features[0]} (needed by the flat start by energy)"
            try:
                energy = log_mel_energy(check_finite(features[utterance_id], utterance_id, job.features[0]),
                                        job.features[1])
            except FeatureError as error:
                return str(error)
            if len(energy) != num_frames:
                raise LengthMismatchError(f"{utterance_id}: utt2num_frames says {num_frames} frames but "
                                          f"{job.features[0]} has {len(energy)}")
            speech = speech_span(energy, job.options.speech_span)
        try:
            return equal_alignment(phones, num_frames, tree, topology, speech), len(phones)
        except TooFewFramesError as error:
            return str(error)
    if utterance_id not in available:
        return f"no log-likelihoods in {job.source.describe()}"
    try:
        loglikes = job.source.loglikes(utterance_id)
    except (AudioError, FeatureError) as error:  # the utterance fails (counted), not the job
        return str(error)
    if loglikes.shape[0] != num_frames:
        raise LengthMismatchError(length_mismatch_message(utterance_id, num_frames, loglikes.shape[0], job.source))
    graph = make_state_graph(make_phone_graph(words, lang), tree, topology, job.options.self_loop_scale,
                             job.options.transition_scale)
    alignment = align(graph, loglikes, job.options.viterbi)
    if alignment.status == FAILED:
        return (f"no path through the utterance graph ({num_frames} frames) at beam {job.options.viterbi.beam:g} "
                f"nor at retry beam {job.options.viterbi.retry_beam:g}")
    return alignment, len(alignment.phone_starts)


def run_align_job(job, context):
    log = context.logger
    lang = read_align_lang(job.lang_dir)
    tree = ContextDependency.read(job.tree_path)
    topology = Topology.read(job.topo_path)
    what = "equal alignment" if job.source is None else f"Viterbi on {job.source.describe()}"
    if job.features is not None:

        what += f", end silences by the frame energies of {job.features[0]}"
        features = TableReader(job.features[0])
    else:
        features = None
    log.info("job %d: %d utterances, %s, options %s", job.index, len(job.utterances), what, job.options)
    available = set(job.source.utterance_ids()) if job.source is not None else set()
    writer = AliJobWriter(job.ali_dir, job.index)
    statuses, frames, busy = {}, 0, 0.0
    try:
        for utterance_id, transcript, num_frames in job.utterances:
            context.advance(1)
            start = time.monotonic()
            outcome = _align_one(job, lang, tree, topology, utterance_id, transcript, num_frames, available,
                                 features)
            busy += time.monotonic() - start
            if isinstance(outcome, str):
                statuses[utterance_id] = outcome
                writer.fail(utterance_id, outcome)
                log.warning("%s: not aligned: %s", utterance_id, outcome)
                continue
            alignment, num_phones = outcome
            statuses[utterance_id] = alignment.status
            frames += num_frames
            writer.write(utterance_id, alignment, num_phones)
            if alignment.status == RETRIED:
                log.warning("%s: aligned only at the retry beam %g", utterance_id, alignment.beam)
            log.info("%s %s: %d frames, %d phones, log-likelihood per frame %.3f", utterance_id, alignment.status,
                     num_frames, num_phones, alignment.acoustic_loglike / num_frames)
    except BaseException:
        writer.abort()
        raise
    finally:
        if features is not None:
            features.close()
    writer.close()
    log.info("job %d done: %d frames aligned in %.2f s", job.index, frames, busy)
    return statuses, frames, busy


def _utterances(data_dir):
    data = DataDir.load(data_dir)
    if data.text is None:
        raise AsrkitError(f"{data_dir}/text does not exist; alignment needs transcripts")
    if data.utt2num_frames is None:
        raise AsrkitError(f"{data_dir}/utt2num_frames does not exist (fix: featurize the data dir with "
                          "asrkit-featurize, which writes it)")
    utterances = []
    for utterance_id in data.utterance_ids:
        if utterance_id not in data.utt2num_frames:
            raise AsrkitError(f"{data_dir}/utt2num_frames has no entry for {utterance_id} (fix: utils/fix_data_dir)")
        utterances.append((utterance_id, data.text.get(utterance_id), int(data.utt2num_frames[utterance_id])))
    if not utterances:
        raise AsrkitError(f"data directory {data_dir} has no utterances")
    return utterances


def _check_source_lengths(utterances, source):
    """Refuse before aligning when the source's frame counts (where it can tell them cheaply) disagree."""
    count = getattr(source, "num_frames", None)
    if count is None and hasattr(source, "table"):
        def count(utterance_id):
            return int(source.table.shape(utterance_id)[0])
    if count is None:
        return
    available = set(source.utterance_ids())
    mismatches = [(utt, frames, count(utt)) for utt, _, frames in utterances if utt in available]
    mismatches = [item for item in mismatches if item[1] != item[2]]
    if mismatches:
        examples = "; ".join(length_mismatch_message(utt, frames, other, source)
                             for utt, frames, other in mismatches[:3])
        raise LengthMismatchError(f"{len(mismatches)} of {len(utterances)} utterances have log-likelihoods of "
                                  f"another length than utt2num_frames: {examples}")


def _run(data_dir, lang_dir, ali_dir, tree, tree_path, topo_path, source, options, info, features=None):
    start = time.monotonic()
    utterances = _utterances(data_dir)
    if source is not None:
        _check_source_lengths(utterances, source)
    ali_dir = os.path.abspath(ali_dir)
    os.makedirs(os.path.join(ali_dir, "log"), exist_ok=True)
    jobs = [AlignJob(index, ali_dir, os.fspath(lang_dir), tree_path, topo_path, part, source, options, features)
            for index, part in enumerate(split_evenly(utterances, options.nj), 1)]
    remove_stale_job_outputs(ali_dir, len(jobs))
    logger.info("aligning %d utterances of %s (%s) in %d jobs (logs: %s/log/align.JOB.log)", len(utterances),
                data_dir, "equal alignment" if source is None else source.describe(), len(jobs), ali_dir)
    results = run_jobs(run_align_job, jobs, options.nj, "align", lambda job: len(job.utterances), logger)
    statuses = {}
    for job_statuses, _, _ in results:
        statuses.update(job_statuses)
    failed = {utt: status for utt, status in statuses.items() if status not in ("ok", RETRIED)}
    result = AlignResult(
        utterances=len(utterances), aligned=len(utterances) - len(failed),
        retried=[utt for utt, status in statuses.items() if status == RETRIED], failed=failed,
        frames=sum(frames for _, frames, _ in results), align_seconds=sum(busy for _, _, busy in results),
    )
    info = dict(info, data_dir=os.path.abspath(data_dir), lang_dir=os.path.abspath(lang_dir),
                utterances=result.utterances, aligned=result.aligned, retried=len(result.retried),
                failed=len(result.failed), frames=result.frames)
    finish_ali_dir(ali_dir, len(jobs), tree, os.path.join(lang_dir, "phones.txt"), topo_path, info)
    if result.retried:
        logger.warning("%d utterances aligned only at the retry beam: %s", len(result.retried),
                       " ".join(result.retried[:10]) + (" ..." if len(result.retried) > 10 else ""))
    if failed:
        logger.warning("%d utterances not aligned (reasons in %s/failed.txt): %s", len(failed), ali_dir,
                       "; ".join(f"{utt}: {reason}" for utt, reason in list(failed.items())[:5])
                       + (" ..." if len(failed) > 5 else ""))
    result.wall_seconds = time.monotonic() - start
    if len(failed) > options.max_fail_ratio * len(utterances):
        raise AsrkitError(f"{len(failed)} of {len(utterances)} utterances were not aligned, more than "
                          f"--max-fail-ratio {options.max_fail_ratio:g}; see {ali_dir}/failed.txt and "
                          f"{ali_dir}/log/align.*.log")
    return result


def flat_start_tree(lang_dir):
    """The lang dir's tree.json if it has one, else the monophone tree of its phones and topology."""
    lang_dir = os.fspath(lang_dir)
    path = os.path.join(lang_dir, TREE_FILE)
    if os.path.exists(path):
        return ContextDependency.read(path)
    return monophone_tree(SymbolTable.read(os.path.join(lang_dir, "phones.txt")),
                          Topology.read(os.path.join(lang_dir, "topo")))


def flat_start_data_dir(data_dir, lang_dir, ali_dir, options=None):
    """Equal alignments of every utterance of data_dir into ali_dir; returns AlignResult."""
    options = options or AlignOptions()
    ali_dir = os.path.abspath(ali_dir)
    os.makedirs(ali_dir, exist_ok=True)
    tree = flat_start_tree(lang_dir)
    # The jobs read the tree from the ali dir; finish_ali_dir writes the same tree there again.
    tree_path = os.path.join(ali_dir, TREE_FILE)
    tree.write(tree_path)
    info = {"method": "equal", "map_oov": options.map_oov}
    features = None
    if options.speech_span is not None:
        features = _energy_features(data_dir)
        info["silence_by_energy"] = dataclasses.asdict(options.speech_span)
    return _run(data_dir, lang_dir, ali_dir, tree, tree_path, os.path.join(lang_dir, "topo"), None, options, info,
                features)


def _energy_features(data_dir):
    """(feats.scp, compression) of a featurized data dir, for the flat start by energy."""
    scp = os.path.join(data_dir, "feats.scp")
    config_path = os.path.join(data_dir, "conf", "featurize.json")
    if not os.path.exists(scp) or not os.path.exists(config_path):
        raise AsrkitError(f"the flat start by energy reads the frame energies of {data_dir}/feats.scp and its "
                          "conf/featurize.json; featurize the data dir first (asrkit-featurize), or flat-start "
                          "without it")
    with open(config_path, encoding="utf-8") as handle:
        compression = json.load(handle).get("compression", "log")
    return os.path.abspath(scp), compression


def align_data_dir(data_dir, lang_dir, model_dir, ali_dir, source, options=None):
    """Viterbi alignments of every utterance of data_dir with the tree of model_dir on `source`'s
    log-likelihoods; returns AlignResult."""
    options = options or AlignOptions()
    model_dir, lang_dir = os.fspath(model_dir), os.fspath(lang_dir)
    if model_outputs(model_dir) != "pdfs":
        raise AsrkitError(f"{model_dir} is a CTC model (its outputs are phones and a blank, not HMM states): it "
                          "cannot align; align with an HMM model (asrkit-train-ce --criterion ce)")
    tree_path = os.path.join(model_dir, TREE_FILE)
    tree = ContextDependency.read(tree_path)
    read_num_pdfs(model_dir)
    check_phones_compatible(tree.phones, SymbolTable.read(os.path.join(lang_dir, "phones.txt")), lang_dir, tree_path)
    if source.num_pdfs() != tree.num_pdfs:
        raise AsrkitError(f"the log-likelihoods ({source.describe()}) have {source.num_pdfs()} columns but the tree "
                          f"of {model_dir} has {tree.num_pdfs} pdfs; they do not come from this model")
    topo_path = os.path.join(model_dir, "topo")
    if not os.path.exists(topo_path):
        topo_path = os.path.join(lang_dir, "topo")
    info = {"method": "viterbi", "model_dir": os.path.abspath(model_dir), "source": source.describe(),
            "options": dataclasses.asdict(options)}
    return _run(data_dir, lang_dir, ali_dir, tree, tree_path, topo_path, source, options, info)
