"""utils/mkgraph as a library: HCLG.fst from a lang dir (L_disambig.fst, G.fst) and a model dir (tree).

The recipe of Kaldi's utils/mkgraph.sh, on kaldifst:
  LG   = minimize_encoded(determinize_star(L_disambig o G))       (log semiring)
  CLG  = compose_context(LG)                                       (context width from the tree)
  HCLG = minimize_encoded(determinize_star(H o CLG)), disambiguation symbols -> epsilon,
         then HMM self-loops added (asrkit.graph.self_loops).
HCLG's input labels are pdf id + 1 and its output labels are words.

What mkgraph reads from the model dir: `tree.json` (asrkit.hmm.tree; it gives the
context width, the pdf of every phone in context and num_pdfs), `topo` when
present (otherwise the lang dir's), and `num_pdfs` when present (a text file with
one integer, which must agree with the tree).  The tree's phones must be the
lang dir's phones.

The graph dir gets HCLG.fst, words.txt, phones.txt, phones/ (copied from the
lang dir), num_pdfs, and graph_info.json (options, sizes, build time, peak memory).
"""

import dataclasses
import json
import logging
import os
import resource
import shutil
import time

from asrkit.errors import AsrkitError
from asrkit.hmm.num_pdfs import read_num_pdfs_file
from asrkit.graph.fst_arrays import arrays_to_fst, fst_to_arrays
from asrkit.graph.self_loops import add_self_loops, remove_input_symbols
from asrkit.graph.symbols import SymbolTable, read_int_list
from asrkit.hmm.h_fst import make_h_transducer
from asrkit.hmm.topology import Topology
from asrkit.hmm.tree import ContextDependency
from asrkit.io.atomic import atomic_output, atomic_path

logger = logging.getLogger("asrkit.mkgraph")

TREE_FILE = "tree.json"


@dataclasses.dataclass
class GraphOptions:
    self_loop_scale: float = 0.1
    transition_scale: float = 1.0


@dataclasses.dataclass
class GraphInfo:
    num_pdfs: int
    num_states: int
    num_arcs: int
    seconds: float
    peak_memory_mib: float
    sizes: dict  # intermediate FST name -> (states, arcs)


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


def _size(fst):
    arcs = sum(fst.num_arcs(state) for state in range(fst.num_states))
    return fst.num_states, arcs


def _peak_memory_mib():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def compose_lg(lang_dir):
    import kaldifst

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


CTC_OUTPUTS = "ctc-phones"  # model.json's "outputs" of a CTC model (asrkit.train.ctc)


def model_outputs(model_dir):
    """What a model dir's outputs are: "pdfs" (the tree's), or model.json's "outputs" ("ctc-phones")."""
    path = os.path.join(model_dir, "model.json")
    if not os.path.exists(path):
        return "pdfs"  # an alignment or tree dir: its tree's pdfs
    with open(path, encoding="utf-8") as handle:
        return json.load(handle).get("outputs", "pdfs")


def make_graph(lang_dir, model_dir, graph_dir, options=None):
    """Build graph_dir/HCLG.fst and its companions; returns GraphInfo.  A CTC model's graph is T o L o G
    (asrkit.graph.ctc_topology)."""
    import kaldifst

    options = options or GraphOptions()
    start = time.monotonic()
    lang_dir, model_dir, graph_dir = map(os.fspath, (lang_dir, model_dir, graph_dir))
    if model_outputs(model_dir) == CTC_OUTPUTS:
        from asrkit.graph.ctc_topology import make_ctc_graph

        return make_ctc_graph(lang_dir, model_dir, graph_dir)
    phone_table = SymbolTable.read(os.path.join(lang_dir, "phones.txt"))
    tree = ContextDependency.read(os.path.join(model_dir, TREE_FILE))
    read_num_pdfs(model_dir)
    check_phones_compatible(tree.phones, phone_table, lang_dir, os.path.join(model_dir, TREE_FILE))
    topo_path = os.path.join(model_dir, "topo")
    topology = Topology.read(topo_path if os.path.exists(topo_path) else os.path.join(lang_dir, "topo"))
    disambig_phones = read_int_list(os.path.join(lang_dir, "phones", "disambig.int"))
    sizes = {}

    lg = compose_lg(lang_dir)
    sizes["LG"] = _size(lg)
    logger.info("LG: %d states, %d arcs (%.1f s)", *sizes["LG"], time.monotonic() - start)

    clg, ilabels = kaldifst.compose_context(disambig_phones, tree.context_width, tree.central_position, lg)
    del lg
    kaldifst.arcsort(clg, sort_type="ilabel")
    sizes["CLG"] = _size(clg)
    logger.info("CLG: %d states, %d arcs, %d phone windows", *sizes["CLG"], len(ilabels))

    h = make_h_transducer(ilabels, tree, topology, options.transition_scale)
    kaldifst.arcsort(h.fst, sort_type="olabel")
    hclg = kaldifst.StdVectorFst(kaldifst.compose(h.fst, clg))
    del clg
    kaldifst.determinize_star(hclg, use_log=True)
    kaldifst.minimize_encoded(hclg)
    sizes["HCLGa"] = _size(hclg)
    logger.info("HCLGa (no self-loops): %d states, %d arcs (%.1f s)", *sizes["HCLGa"], time.monotonic() - start)

    arrays = remove_input_symbols(fst_to_arrays(hclg), h.disambig_input_labels)
    del hclg
    arrays = add_self_loops(arrays, h.self_loop_probs, options.self_loop_scale)
    return write_graph_dir(graph_dir, arrays, tree.num_pdfs, lang_dir, model_dir, dataclasses.asdict(options),
                           sizes, start)


def write_graph_dir(graph_dir, arrays, num_pdfs, lang_dir, model_dir, options, sizes, start):
    """graph_dir/HCLG.fst from the graph's arrays, with the lang dir's symbol tables, num_pdfs and
    graph_info.json; returns GraphInfo."""
    if arrays.num_arcs and arrays.ilabel.max() > num_pdfs:
        raise AsrkitError(f"internal error: HCLG has input label {arrays.ilabel.max()} > num_pdfs {num_pdfs}")
    hclg = arrays_to_fst(arrays)
    os.makedirs(graph_dir, exist_ok=True)
    with atomic_path(os.path.join(graph_dir, "HCLG.fst")) as tmp:
        if not hclg.write(tmp):
            raise AsrkitError(f"could not write {graph_dir}/HCLG.fst")
    shutil.copyfile(os.path.join(lang_dir, "words.txt"), os.path.join(graph_dir, "words.txt"))
    shutil.copyfile(os.path.join(lang_dir, "phones.txt"), os.path.join(graph_dir, "phones.txt"))
    phones_out = os.path.join(graph_dir, "phones")
    shutil.rmtree(phones_out, ignore_errors=True)
    shutil.copytree(os.path.join(lang_dir, "phones"), phones_out)
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


def write_monophone_model_dir(lang_dir, model_dir):
    """A model dir with the monophone tree (tree.json), topo, phones.txt and num_pdfs: what mkgraph needs
    before an aligner has written a real one."""
    from asrkit.hmm.tree import monophone_tree

    phone_table = SymbolTable.read(os.path.join(lang_dir, "phones.txt"))
    topology = Topology.read(os.path.join(lang_dir, "topo"))
    tree = monophone_tree(phone_table, topology)
    os.makedirs(model_dir, exist_ok=True)
    tree.write(os.path.join(model_dir, TREE_FILE))
    shutil.copyfile(os.path.join(lang_dir, "topo"), os.path.join(model_dir, "topo"))
    shutil.copyfile(os.path.join(lang_dir, "phones.txt"), os.path.join(model_dir, "phones.txt"))
    with atomic_output(os.path.join(model_dir, "num_pdfs")) as out:
        out.write(f"{tree.num_pdfs}\n")
    return tree
