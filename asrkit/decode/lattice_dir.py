"""asrkit-lattice as a library: N-best lists, word confidences and LM rescoring of a decode dir's lattices.

The input is what `asrkit-decode --write-lattices` leaves: DECODE_DIR/lat.scp
over lat.JOB.h5 shards (asrkit.decode.lattice's format), whose config records
the acoustic scale they were decoded at.  The LM weight defaults to the inverse
of that scale, so the N-best list's first entry and the confidences' words are
the decode dir's own 1-best (hyp.txt); --lm-weight picks another (choose it on
dev, e.g. the dev decode dir's best_lmwt).  Outputs, in OUT_DIR:

  nbest.txt        Kaldi's lattice-to-nbest naming: 'utt-1 words', 'utt-2 words', ... best first
  nbest_costs.txt  'utt-N graph-cost acoustic-cost total' (acoustic unscaled; total = graph + acoustic / lmwt)
  hyp.txt          the best path, 'utt words'
  confidence.txt   'utt word confidence word confidence ...', the best path's words with their confidences
                   (asrkit.decode.word_lattice)
  lat.1.h5, lat.scp  (rescore) the lattices with another LM's costs in place of the decoding LM's
                   (asrkit.decode.lm_rescore), at the acoustic scale of the input; hyp.txt their best paths,
                   so that OUT_DIR is a decode dir for asrkit-score and for nbest and confidence in turn

`write_selection` (select) writes a Kaldi data dir instead: the decoded data dir's most confidently
recognised utterances with their best paths as text (asrkit.decode.unsupervised_selection), and
utt2confidence beside it.
"""

import dataclasses
import json
import logging
import os
import shutil

import numpy as np

from asrkit.data.data_dir import DataDir
from asrkit.data.kaldi_files import write_kaldi_map
from asrkit.data.split import subset_data_dir
from asrkit.data.validate import validate_data_dir
from asrkit.decode.defaults import acoustic_scale_of
from asrkit.decode.lattice import checked_acoustic_scale, checked_lattice
from asrkit.decode.lattice_faster import best_path
from asrkit.decode.lm_rescore import LmCosts, rescore
from asrkit.decode.unsupervised_selection import best_path_confidence, select
from asrkit.decode.word_lattice import nbest, prune, word_confidences
from asrkit.errors import AsrkitError
from asrkit.graph.hclg import CTC_OUTPUTS, model_outputs
from asrkit.graph.symbols import SymbolTable
from asrkit.hmm.tree import ContextDependency
from asrkit.io.atomic import atomic_output, temporary_name
from asrkit.io.output_dir import check_output_dir, replace_output_dir
from asrkit.io.table import ShardWriter, TableReader, parse_scp, shard_config, shard_path, write_scp
from asrkit.lm.arpa import read_arpa
from asrkit.logs import Progress

logger = logging.getLogger("asrkit.lattice")


@dataclasses.dataclass
class LatticeDirResult:
    utterances: int
    empty: int  # lattices without a complete path: no entry in the outputs
    lm_weight: float


def lattice_lm_weight(decode_dir):
    """1 / the acoustic scale the decode dir's lattices were made at."""
    scp = os.path.join(decode_dir, "lat.scp")
    if not os.path.isfile(scp):
        raise AsrkitError(f"{scp} does not exist: decode with asrkit-decode --write-lattices first")
    shards = sorted({path for path, _ in parse_scp(scp).values()})
    scales = {checked_acoustic_scale((shard_config(path) or {}).get("acoustic_scale", 0.0), path) for path in shards}
    if len(scales) != 1:
        raise AsrkitError(f"{decode_dir}: the lattice shards record no single positive acoustic scale "
                          f"({sorted(scales)}); give --lm-weight")
    return 1.0 / scales.pop()


def checked_lm_weight(lm_weight, decode_dir):
    """The given LM weight, checked (NaN or infinity would make every cost NaN), or the lattices' own."""
    if lm_weight is None:
        return lattice_lm_weight(decode_dir)
    if not 0 < lm_weight < float("inf"):
        raise AsrkitError(f"--lm-weight {lm_weight}: must be a finite positive number")
    return lm_weight


def read_lattices(decode_dir):
    """(utterance id, lattice array) of each lattice, checked (asrkit.decode.lattice.checked_lattice)."""
    scp = os.path.join(decode_dir, "lat.scp")
    with TableReader(scp) as table:
        keys = sorted(table.keys())
        progress = Progress(len(keys), "lattices", logger)
        for key in keys:
            yield key, checked_lattice(table[key], key, scp)
            progress.update(1)
        progress.close()


def _word_text(ids, words, utterance_id):
    try:
        return " ".join(words.symbol_of[word] for word in ids)
    except KeyError as error:
        raise AsrkitError(f"{utterance_id}: word id {error.args[0]} of its lattice is not in words.txt "
                          "(is it the graph dir the lattices were decoded with?)") from None


def _begin(decode_dir, words_txt, out_dir, lm_weight):
    """(words, an empty result at the LM weight: the given one or the lattices' own), out_dir made."""
    words = SymbolTable.read(words_txt)
    result = LatticeDirResult(0, 0, checked_lm_weight(lm_weight, decode_dir))
    os.makedirs(out_dir, exist_ok=True)
    return words, result


def write_nbest(decode_dir, words_txt, out_dir, n=10, lm_weight=None):
    """nbest.txt and nbest_costs.txt of every lattice in decode_dir; see the module docstring."""
    words, result = _begin(decode_dir, words_txt, out_dir, lm_weight)
    lm_weight = result.lm_weight
    text, costs = [], []
    for utterance_id, lattice in read_lattices(decode_dir):
        result.utterances += 1
        hypotheses = nbest(lattice, n, lm_weight)
        result.empty += not hypotheses
        for rank, hypothesis in enumerate(hypotheses, start=1):
            text.append(f"{utterance_id}-{rank} {_word_text(hypothesis.words, words, utterance_id)}".rstrip())
            costs.append(f"{utterance_id}-{rank} {hypothesis.graph_cost:.4f} {hypothesis.acoustic_cost:.4f} "
                         f"{hypothesis.cost(lm_weight):.4f}")
    with atomic_output(os.path.join(out_dir, "nbest.txt")) as out:
        out.writelines(line + "\n" for line in text)
    with atomic_output(os.path.join(out_dir, "nbest_costs.txt")) as out:
        out.writelines(line + "\n" for line in costs)
    return result


def write_confidences(decode_dir, words_txt, out_dir, lm_weight=None):
    """hyp.txt and confidence.txt of every lattice in decode_dir; see the module docstring."""
    words, result = _begin(decode_dir, words_txt, out_dir, lm_weight)
    lm_weight = result.lm_weight
    hyps, confidences = [], []
    for utterance_id, lattice in read_lattices(decode_dir):
        result.utterances += 1
        best = word_confidences(lattice, lm_weight)
        if best is None:
            result.empty += 1
            continue
        ids, values = best
        hyps.append(f"{utterance_id} {_word_text(ids, words, utterance_id)}".rstrip())
        pairs = " ".join(f"{words.symbol_of[word]} {value:.4f}" for word, value in zip(ids, values))
        confidences.append(f"{utterance_id} {pairs}".rstrip())
    with atomic_output(os.path.join(out_dir, "hyp.txt")) as out:
        out.writelines(line + "\n" for line in hyps)
    with atomic_output(os.path.join(out_dir, "confidence.txt")) as out:
        out.writelines(line + "\n" for line in confidences)
    return result


def write_rescored(decode_dir, words_txt, old_arpa, new_arpa, out_dir, lm_weight=None, lm_scale=1.0,
                   prune_beam=None):
    """The lattices of decode_dir rescored from the LM old_arpa (the one the graph was made with) to new_arpa,
    as a decode dir in out_dir; see the module docstring.  With prune_beam, each lattice is first pruned
    to the paths within that beam of its best at lm_weight (Kaldi's lattice-prune before lmrescore): the
    expansion by LM history grows with the lattice's depth."""
    acoustic_scale = acoustic_scale_of(lattice_lm_weight(decode_dir))  # of the input, kept by the output
    words, result = _begin(decode_dir, words_txt, out_dir, lm_weight or 1.0 / acoustic_scale)
    lm_weight = result.lm_weight
    costs = LmCosts(read_arpa(old_arpa), read_arpa(new_arpa), lm_scale)
    logger.info("rescoring from %s to %s (histories of %d words), 1-best at LM weight %g", old_arpa, new_arpa,
                costs.history_length, lm_weight)
    hyps = []
    shard = shard_path(out_dir, "lat", 1)
    arcs_in = arcs_out = 0
    with ShardWriter(shard, config={"acoustic_scale": acoustic_scale, "rescored_from": os.path.abspath(old_arpa),
                                    "rescored_with": os.path.abspath(new_arpa)}) as writer:
        for utterance_id, lattice in read_lattices(decode_dir):
            result.utterances += 1
            if prune_beam is not None and len(lattice):
                lattice = prune(lattice, lm_weight, prune_beam)
            try:
                rescored = rescore(lattice, costs, words.symbol_of)
            except AsrkitError as error:
                raise AsrkitError(f"{utterance_id}: {error}") from None
            if not np.isfinite(rescored[:, 4:]).all():  # never written as a lattice with status=ok
                raise AsrkitError(f"{utterance_id}: rescoring gave NaN or infinite costs (check {old_arpa} and "
                                  f"{new_arpa})")
            arcs_in, arcs_out = arcs_in + len(lattice), arcs_out + len(rescored)
            writer.write(utterance_id, rescored, attrs={"start": 0})
            best = best_path(rescored, acoustic_scale=acoustic_scale_of(lm_weight)) if len(rescored) else None
            if best is None:
                result.empty += 1
                continue
            hyps.append(f"{utterance_id} {_word_text(best[0], words, utterance_id)}".rstrip())
    write_scp(os.path.join(out_dir, "lat.scp"), [shard])
    with atomic_output(os.path.join(out_dir, "hyp.txt")) as out:
        out.writelines(line + "\n" for line in hyps)
    logger.info("rows: %d in, %d out (%.2fx, the expansion by LM history)", arcs_in, arcs_out,
                arcs_out / max(arcs_in, 1))
    return result


@dataclasses.dataclass
class SelectionResult:
    utterances: int  # lattices read
    no_path: int  # lattices without a complete path
    empty: int  # best paths without words
    over_text_limit: int
    below_floor: int
    selected: int
    seconds: float  # audio selected (from utt2dur; 0 without it)
    mean_confidence: float  # of the selected utterances
    lm_weight: float


SELECTION_SIGNATURE = ("utt2confidence", "text")  # what marks a data dir as select's own earlier output


def _write_selected(chosen, words, data_dir, out_dir, inputs):
    """The data dir out_dir of the `chosen` candidates, written aside and renamed into place (a killed run leaves
    no half-written data dir); an existing out_dir is replaced only when it is an earlier selection."""
    check_output_dir(out_dir, SELECTION_SIGNATURE, inputs, "selection")
    temporary = temporary_name(os.path.abspath(out_dir))
    try:
        subset_data_dir(data_dir, temporary, utt_list=[c.utterance_id for c in chosen])
        write_kaldi_map(os.path.join(temporary, "text"),
                        {c.utterance_id: _word_text(c.words, words, c.utterance_id) for c in chosen})
        write_kaldi_map(os.path.join(temporary, "utt2confidence"),
                        {c.utterance_id: f"{c.confidence:.4f}" for c in chosen})
        validate_data_dir(temporary, require_text=True, raise_on_error=True)
        replace_output_dir(temporary, out_dir, SELECTION_SIGNATURE, inputs, "selection")
    finally:
        shutil.rmtree(temporary, ignore_errors=True)  # gone already when renamed into place


def write_selection(decode_dir, graph_dir, data_dir, out_dir, tree_path=None, lm_weight=None, max_per_text=50,
                    hours=None, max_utts=None, min_confidence=0.0):
    """The data dir out_dir of the utterances of data_dir (decoded into decode_dir on graph_dir) to train on, with
    their hypotheses as text and OUT_DIR/utt2confidence; see asrkit.decode.unsupervised_selection.  The tree
    that numbers the lattices' pdfs is tree_path, by default the one of the model the graph was made for."""
    check_output_dir(out_dir, SELECTION_SIGNATURE, (decode_dir, graph_dir, data_dir), "selection")  # before the work
    lm_weight = checked_lm_weight(lm_weight, decode_dir)
    words = SymbolTable.read(os.path.join(graph_dir, "words.txt"))
    model_dir = None
    if tree_path is None:
        info_path = os.path.join(graph_dir, "graph_info.json")
        if os.path.exists(info_path):
            with open(info_path, encoding="utf-8") as handle:
                model_dir = json.load(handle).get("model_dir")
        if not model_dir:
            raise AsrkitError(f"{graph_dir} does not say which model it was made for (graph_info.json); give the "
                              "tree (--tree MODEL/tree.json)")
        tree_path = os.path.join(model_dir, "tree.json")
    with open(os.path.join(graph_dir, "phones", "silence.txt"), encoding="utf-8") as handle:
        silence_phones = handle.read().split()
    if model_dir and model_outputs(model_dir) == CTC_OUTPUTS:
        # A CTC model's outputs are phone ids (asrkit.train.criteria.ctc): the silence phones' own; the blank is no silence.
        phones = SymbolTable.read(os.path.join(graph_dir, "phones.txt"))
        silence = np.array([phones[name] for name in silence_phones], np.int64)
    else:
        silence = np.array(ContextDependency.read(tree_path).pdfs_of_phones_only(silence_phones), np.int64)
    data = DataDir.load(data_dir)
    known = set(data.utterance_ids)
    candidates, result = [], SelectionResult(0, 0, 0, 0, 0, 0, 0.0, 0.0, lm_weight)
    for utterance_id, lattice in read_lattices(decode_dir):
        if utterance_id not in known:
            raise AsrkitError(f"{utterance_id}: a lattice of {decode_dir} that is not an utterance of {data_dir} "
                              "(decode that data dir)")
        result.utterances += 1
        candidate = best_path_confidence(utterance_id, lattice, lm_weight, silence) if len(lattice) else None
        if candidate is None:
            result.no_path += 1
        else:
            candidates.append(candidate)
    durations = {utt: float(seconds) for utt, seconds in data.utt2dur.items()} if data.utt2dur else None
    if hours is not None and durations is None:
        raise AsrkitError(f"{data_dir} has no utt2dur: select by --max-utts, or write utt2dur first")
    selection = select(candidates, durations, max_per_text, hours, max_utts, min_confidence)
    result.empty, result.over_text_limit, result.below_floor = \
        selection.empty, selection.over_text_limit, selection.below_floor
    result.selected, result.seconds = len(selection.chosen), selection.seconds
    if not selection.chosen:
        raise AsrkitError(f"no utterance of {decode_dir} passed the selection ({result.utterances} lattices, "
                          f"{result.no_path} without a path, {result.empty} empty, {result.below_floor} below "
                          f"--min-confidence {min_confidence})")
    result.mean_confidence = float(np.mean([c.confidence for c in selection.chosen]))
    _write_selected(selection.chosen, words, data_dir, out_dir, (decode_dir, graph_dir, data_dir))
    return result
