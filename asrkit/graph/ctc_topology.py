"""The decoding graph of a CTC model (asrkit.train.criteria.ctc): T o L o G, with T the CTC topology over phones.

T reads one CTC output per frame (input label = output index + 1, so the blank, output 0, is label 1, and
the decoder's `label - 1` column rule holds as it does for HCLG) and writes a phone each time a new label
starts.  Its states remember the last frame's output: state 0 after a blank (and at the start), state s_p
after phone p.  From s_p, p again continues the same label, a blank ends it, another phone q starts q at
once; from 0 any phone starts a label.  This is CTC's collapsing rule exactly: p p is one p, p blank p is
two.  Every state is final, and every state has a self-loop for each disambiguation symbol of L o G (a
fresh input label mapped to it), since a word can end after any label; they keep T o LG determinizable and
become epsilon after determinization, as Kaldi's H does for HCLG (and Eesen's token FST for TLG).

No context expansion and no HMM self-loops: the CTC outputs are context-independent phones, and T holds
its own loops.  Every arc costs 0; the acoustic scores carry all (posteriors over label priors).
"""

import logging
import os
import time

import kaldifst

from asrkit.errors import AsrkitError
from asrkit.graph.fst_arrays import build_fst, fst_to_arrays
from asrkit.graph.graph_dir import check_phones_compatible, compose_lg, fst_size, write_graph_dir
from asrkit.graph.self_loops import remove_input_symbols
from asrkit.graph.symbols import SymbolTable, read_int_list
from asrkit.hmm.num_pdfs import read_num_pdfs_file

logger = logging.getLogger("asrkit.mkgraph")

BLANK = 0  # the blank's output index (asrkit.train.criteria.ctc)


def make_ctc_token_fst(phones, disambig_phones, num_outputs):
    """T as a StdVectorFst and its disambiguation input labels: phones are the output indices that are
    phones (ids of phones.txt), disambig_phones the lang dir's disambiguation symbols."""
    phones = sorted(phones)
    state_of = {phone: index + 1 for index, phone in enumerate(phones)}
    arcs = [(0, 0, BLANK + 1, 0, 0.0)]
    for phone in phones:
        state = state_of[phone]
        arcs.append((0, state, phone + 1, phone, 0.0))
        arcs.append((state, state, phone + 1, 0, 0.0))
        arcs.append((state, 0, BLANK + 1, 0, 0.0))
        arcs.extend((state, state_of[other], other + 1, other, 0.0) for other in phones if other != phone)
    disambig_inputs = []
    states = [0] + [state_of[phone] for phone in phones]
    for offset, symbol in enumerate(disambig_phones):
        label = num_outputs + 1 + offset
        disambig_inputs.append(label)
        arcs.extend((state, state, label, symbol, 0.0) for state in states)
    return build_fst(0, arcs, {state: 0.0 for state in states}), disambig_inputs


def make_ctc_graph(lang_dir, model_dir, graph_dir):
    """graph_dir/HCLG.fst (T o L o G) for the CTC model in model_dir; returns asrkit.graph.graph_dir.GraphInfo."""
    start = time.monotonic()
    lang_phones = SymbolTable.read(os.path.join(lang_dir, "phones.txt"))
    model_phones_path = os.path.join(model_dir, "phones.txt")
    if not os.path.exists(model_phones_path):
        raise AsrkitError(f"{model_phones_path} does not exist: a CTC model dir holds the phone table of its outputs")
    phones = SymbolTable.read(model_phones_path).phones()
    check_phones_compatible(phones, lang_phones, lang_dir, model_phones_path)
    num_outputs = read_num_pdfs_file(os.path.join(model_dir, "num_pdfs"))
    if num_outputs != 1 + max(phones.values()):
        raise AsrkitError(f"{model_dir}/num_pdfs says {num_outputs} outputs; a CTC model over {model_phones_path} "
                          f"has {1 + max(phones.values())} (the blank and one per phone id)")
    disambig_phones = read_int_list(os.path.join(lang_dir, "phones", "disambig.int"))
    sizes = {}
    lg = compose_lg(lang_dir)
    sizes["LG"] = fst_size(lg)
    logger.info("LG: %d states, %d arcs (%.1f s)", *sizes["LG"], time.monotonic() - start)
    token_fst, disambig_inputs = make_ctc_token_fst(phones.values(), disambig_phones, num_outputs)
    sizes["T"] = fst_size(token_fst)
    kaldifst.arcsort(token_fst, sort_type="olabel")
    tlg = kaldifst.StdVectorFst(kaldifst.compose(token_fst, lg))
    del lg
    kaldifst.determinize_star(tlg, use_log=True)
    kaldifst.minimize_encoded(tlg)
    sizes["TLG"] = fst_size(tlg)
    arrays = remove_input_symbols(fst_to_arrays(tlg), disambig_inputs)
    del tlg
    return write_graph_dir(graph_dir, arrays, num_outputs, lang_dir, model_dir, {"topology": "ctc"}, sizes, start)
