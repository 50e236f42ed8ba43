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
import logging
import os
import shutil
import time

import kaldifst

from asrkit.graph.ctc_topology import make_ctc_graph
from asrkit.graph.fst_arrays import fst_to_arrays
# GraphInfo, check_phones_compatible, model_outputs, read_num_pdfs and CTC_OUTPUTS are imported from here by
# the aligner and the decoders too.
from asrkit.graph.graph_dir import (CTC_OUTPUTS, TREE_FILE, GraphInfo, check_phones_compatible,  # noqa: F401
                                    compose_lg, fst_size, model_outputs, read_num_pdfs, write_graph_dir)
from asrkit.graph.self_loops import add_self_loops, remove_input_symbols
from asrkit.graph.symbols import SymbolTable, read_int_list
from asrkit.graph.h_fst import make_h_transducer
from asrkit.hmm.topology import Topology
from asrkit.hmm.tree import ContextDependency, monophone_tree
from asrkit.io.atomic import atomic_output

logger = logging.getLogger("asrkit.mkgraph")


@dataclasses.dataclass
class GraphOptions:
    self_loop_scale: float = 0.1
    transition_scale: float = 1.0


def make_graph(lang_dir, model_dir, graph_dir, options=None):
    """Build graph_dir/HCLG.fst and its companions; returns GraphInfo.  A CTC model's graph is T o L o G
    (asrkit.graph.ctc_topology)."""
    options = options or GraphOptions()
    start = time.monotonic()
    lang_dir, model_dir, graph_dir = map(os.fspath, (lang_dir, model_dir, graph_dir))
    if model_outputs(model_dir) == CTC_OUTPUTS:
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
    sizes["LG"] = fst_size(lg)
    logger.info("LG: %d states, %d arcs (%.1f s)", *sizes["LG"], time.monotonic() - start)

    clg, ilabels = kaldifst.compose_context(disambig_phones, tree.context_width, tree.central_position, lg)
    del lg
    kaldifst.arcsort(clg, sort_type="ilabel")
    sizes["CLG"] = fst_size(clg)
    logger.info("CLG: %d states, %d arcs, %d phone windows", *sizes["CLG"], len(ilabels))

    h = make_h_transducer(ilabels, tree, topology, options.transition_scale)
    kaldifst.arcsort(h.fst, sort_type="olabel")
    hclg = kaldifst.StdVectorFst(kaldifst.compose(h.fst, clg))
    del clg
    kaldifst.determinize_star(hclg, use_log=True)
    kaldifst.minimize_encoded(hclg)
    sizes["HCLGa"] = fst_size(hclg)
    logger.info("HCLGa (no self-loops): %d states, %d arcs (%.1f s)", *sizes["HCLGa"], time.monotonic() - start)

    arrays = remove_input_symbols(fst_to_arrays(hclg), h.disambig_input_labels)
    del hclg
    arrays = add_self_loops(arrays, h.self_loop_probs, options.self_loop_scale)
    return write_graph_dir(graph_dir, arrays, tree.num_pdfs, lang_dir, model_dir, dataclasses.asdict(options),
                           sizes, start)


def write_monophone_model_dir(lang_dir, model_dir):
    """A model dir with the monophone tree (tree.json), topo, phones.txt and num_pdfs: what mkgraph needs
    before an aligner has written a real one."""
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
