"""What every decoding-graph build shares: the model dir's outputs and pdfs, the phone check, L o G, the graph dir.

asrkit.graph.hclg (HCLG for a tree's pdfs) and asrkit.graph.ctc_topology (T o L o G
for a CTC model's phones) both build on these; hclg's make_graph picks between them.
"""

import dataclasses
import json
import logging
import os
import resource
import shutil
import time

import kaldifst

from asrkit.errors import AsrkitError
from asrkit.graph.fst_arrays import arrays_to_fst
from asrkit.hmm.num_pdfs import read_num_pdfs_file
from asrkit.hmm.tree import ContextDependency
from asrkit.io.atomic import atomic_output, atomic_path, temporary_name
from asrkit.io.output_dir import check_output_dir, replace_output_dir

logger = logging.getLogger("asrkit.mkgraph")

TREE_FILE = "tree.json"
PHONES_SIGNATURE = ("silence.txt",)  # a lang dir's phones/, copied into the graph dir

CTC_OUTPUTS = "ctc-phones"  # model.json's "outputs" of a CTC model (asrkit.train.criteria.ctc)


@dataclasses.dataclass
class GraphInfo:
    num_pdfs: int
    num_states: int
    num_arcs: int
    seconds: float
    peak_memory_mib: float
    sizes: dict  # intermediate FST name -> (states, arcs)


def model_outputs(model_dir):
    """What a model dir's outputs are: "pdfs" (the tree's), or model.json's "outputs" ("ctc-phones")."""
    path = os.path.join(model_dir, "model.json")
    if not os.path.exists(path):
        return "pdfs"  # an alignment or tree dir: its tree's pdfs
    with open(path, encoding="utf-8") as handle:
        return json.load(handle).get("outputs", "pdfs")


def read_num_pdfs(model_dir):
    """num_pdfs of a model dir: from tree.json, checked against the `num_pdfs` file when that exists (a CTC
    model's outputs, which have no tree: its `num_pdfs` file)."""
    if model_outputs(model_dir) == CTC_OUTPUTS:
        return read_num_pdfs_file(os.path.join(model_dir, "num_pdfs"))
    tree = ContextDependency.read(os.path.join(model_dir, TREE_FILE))
    path = os.path.join(model_dir, "num_pdfs")
    if os.path.exists(path):
        stated = read_num_pdfs_file(path)
        if stated != tree.num_pdfs:
            raise AsrkitError(f"{path} says {stated} pdfs but {model_dir}/{TREE_FILE} has {tree.num_pdfs}")
    return tree.num_pdfs


def check_phones_compatible(model_phones, phone_table, lang_dir, model_file):
    """Kaldi's check_phones_compatible.sh: the model's phones ({name: id}, from model_file: its tree.json, or a
    CTC model's phones.txt) must be the lang dir's (names and ids)."""
    lang_phones = phone_table.phones()
    if lang_phones != model_phones:
        differ = sorted(set(lang_phones.items()) ^ set(model_phones.items()))[:5]
        raise AsrkitError(
            f"the phones of {lang_dir}/phones.txt and of {model_file} differ (e.g. {differ}); "
            "the model was built with another lang dir"
        )


def fst_size(fst):
    arcs = sum(fst.num_arcs(state) for state in range(fst.num_states))
    return fst.num_states, arcs


def _peak_memory_mib():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def compose_lg(lang_dir):
    """L_disambig o G of a lang dir, determinized and minimized (log semiring)."""
    g_path = os.path.join(lang_dir, "G.fst")
    if not os.path.exists(g_path):
        raise AsrkitError(f"{g_path} does not exist (fix: run utils/make_lm --lang-dir {lang_dir} ...)")
    lexicon = kaldifst.StdVectorFst.read(os.path.join(lang_dir, "L_disambig.fst"))
    grammar = kaldifst.StdVectorFst.read(g_path)
    kaldifst.arcsort(lexicon, sort_type="olabel")
    kaldifst.arcsort(grammar, sort_type="ilabel")
    lg = kaldifst.StdVectorFst(kaldifst.compose(lexicon, grammar))
    if lg.num_states == 0:
        raise AsrkitError(f"L o G is empty: no word sequence of {g_path} is in the lexicon of {lang_dir}")
    kaldifst.determinize_star(lg, use_log=True)
    kaldifst.minimize_encoded(lg)
    return lg


def write_graph_dir(graph_dir, arrays, num_pdfs, lang_dir, model_dir, options, sizes, start):
    """graph_dir/HCLG.fst from the graph's arrays, with the lang dir's symbol tables, num_pdfs and
    graph_info.json; returns GraphInfo."""
    if arrays.num_arcs and arrays.ilabel.max() > num_pdfs:
        raise AsrkitError(f"internal error: HCLG has input label {arrays.ilabel.max()} > num_pdfs {num_pdfs}")
    hclg = arrays_to_fst(arrays)
    # graph_dir/phones is replaced below: it must not be the lang dir's own (graph_dir = lang_dir).
    check_output_dir(os.path.join(graph_dir, "phones"), PHONES_SIGNATURE, (os.path.join(lang_dir, "phones"),),
                     "graph's phones dir")
    os.makedirs(graph_dir, exist_ok=True)
    with atomic_path(os.path.join(graph_dir, "HCLG.fst")) as tmp:
        if not hclg.write(tmp):
            raise AsrkitError(f"could not write {graph_dir}/HCLG.fst")
    shutil.copyfile(os.path.join(lang_dir, "words.txt"), os.path.join(graph_dir, "words.txt"))
    shutil.copyfile(os.path.join(lang_dir, "phones.txt"), os.path.join(graph_dir, "phones.txt"))
    phones_out = os.path.join(graph_dir, "phones")
    work = temporary_name(os.path.abspath(phones_out))
    try:
        shutil.copytree(os.path.join(lang_dir, "phones"), work)
        replace_output_dir(work, phones_out, PHONES_SIGNATURE, (os.path.join(lang_dir, "phones"),),
                           "graph's phones dir")
    finally:
        shutil.rmtree(work, ignore_errors=True)  # gone already when renamed into place
    with atomic_output(os.path.join(graph_dir, "num_pdfs")) as out:
        out.write(f"{num_pdfs}\n")

    info = GraphInfo(
        num_pdfs=num_pdfs, num_states=arrays.num_states, num_arcs=arrays.num_arcs,
        seconds=time.monotonic() - start, peak_memory_mib=_peak_memory_mib(), sizes=sizes,
    )
    with atomic_output(os.path.join(graph_dir, "graph_info.json")) as out:
        json.dump(dataclasses.asdict(info) | {"options": options,
                                               "lang_dir": os.path.abspath(lang_dir),
                                               "model_dir": os.path.abspath(model_dir)},
                  out, indent=2)
        out.write("\n")
    logger.info("HCLG: %d states, %d arcs, %d pdfs, %.1f s, peak memory %.0f MiB", info.num_states, info.num_arcs,
                info.num_pdfs, info.seconds, info.peak_memory_mib)
    return info
