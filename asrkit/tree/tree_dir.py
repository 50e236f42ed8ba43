"""utils/build_tree as a library: a data dir (features), a lang dir and a monophone ali dir in, a tree dir out.

The tree dir is a model dir for utils/mkgraph and the input of utils/convert_ali:
    tree.json        the decision tree (asrkit.hmm.tree format, context width 3, central position 1)
    num_pdfs, topo, phones.txt
    questions.txt    the questions asked, one a line: `label phone ...`
    stats.npz        the triphone statistics (asrkit.tree.stats.TreeStats), to rebuild with other options
    tree_info.json   options, leaves, likelihood gain, frames, and the splits in the order made
"""

import dataclasses
import json
import logging
import os
import shutil

from asrkit.align.ali_dir import AliDir
from asrkit.errors import AsrkitError
from asrkit.graph.symbols import SymbolTable
from asrkit.hmm.topology import Topology
from asrkit.io.atomic import atomic_output
from asrkit.tree.build import TreeOptions, build_tree
from asrkit.tree.questions import build_questions
from asrkit.tree.stats import accumulate_tree_stats

logger = logging.getLogger("asrkit.tree")


def _phone_list(lang_dir, name, phones):
    with open(os.path.join(lang_dir, "phones", f"{name}.txt"), encoding="utf-8") as handle:
        return {phones[token] for token in handle.read().split()}


def _phone_sets(path, phones):
    if not os.path.exists(path):
        return []
    with open(path, encoding="utf-8") as handle:
        return [{phones[token] for token in line.split()} for line in handle if line.split()]


def build_tree_dir(data_dir, lang_dir, ali_dir, tree_dir, options=None, feature_dims=128):
    """Returns asrkit.tree.build.TreeResult; writes tree_dir (see the module docstring)."""
    options = options or TreeOptions()
    lang_dir, tree_dir = os.fspath(lang_dir), os.fspath(tree_dir)
    phones = SymbolTable.read(os.path.join(lang_dir, "phones.txt"))
    phone_names = phones.phones()
    alignments = AliDir(ali_dir)
    if alignments.tree.phones != phone_names:
        raise AsrkitError(f"the phones of {ali_dir}/tree.json and {lang_dir}/phones.txt differ; align with this "
                          "lang dir first")
    if alignments.phones is None:
        raise AsrkitError(f"{ali_dir} has no phone_ali.scp; the tree needs phone alignments")
    topo_path = os.path.join(ali_dir, "topo")
    if not os.path.exists(topo_path):
        topo_path = os.path.join(lang_dir, "topo")
    topology = Topology.read(topo_path)
    alignments.close()

    stats = accumulate_tree_stats(data_dir, ali_dir, feature_dims)
    silence = _phone_list(lang_dir, "silence", phones)
    nonsilence = _phone_list(lang_dir, "nonsilence", phones)
    extra = _phone_sets(os.path.join(lang_dir, "phones", "extra_questions.txt"), phones)
    questions = build_questions(stats, phone_names, nonsilence, silence, extra)
    logger.info("%d questions (phonetic classes, 2-means clusters, extra questions)", len(questions))
    result = build_tree(stats, questions, phone_names, silence, topology, options)

    os.makedirs(tree_dir, exist_ok=True)
    result.tree.write(os.path.join(tree_dir, "tree.json"))
    with atomic_output(os.path.join(tree_dir, "num_pdfs")) as out:
        out.write(f"{result.tree.num_pdfs}\n")
    shutil.copyfile(topo_path, os.path.join(tree_dir, "topo"))
    shutil.copyfile(os.path.join(lang_dir, "phones.txt"), os.path.join(tree_dir, "phones.txt"))
    names = {phone: name for name, phone in phone_names.items()}
    names[0] = "<eps>"
    with atomic_output(os.path.join(tree_dir, "questions.txt")) as out:
        for label, ids in questions:
            out.write(f"{label} {' '.join(names[phone] for phone in sorted(ids))}\n")
    stats.save(os.path.join(tree_dir, "stats.npz"))
    with atomic_output(os.path.join(tree_dir, "tree_info.json")) as out:
        json.dump({"options": dataclasses.asdict(options), "feature_dims": stats.dim,
                   "num_leaves": result.num_leaves, "num_pdfs": result.tree.num_pdfs,
                   "log_likelihood_gain": result.log_likelihood_gain, "frames": result.frames,
                   "num_contexts": len(stats.contexts), "num_questions": len(questions),
                   "data_dir": os.path.abspath(data_dir), "lang_dir": os.path.abspath(lang_dir),
                   "ali_dir": os.path.abspath(ali_dir),
                   "splits": [{"center": c, "pdf_class": k, "position": p, "question": q, "gain": round(g, 3)}
                              for c, k, p, q, g in result.splits]}, out, indent=1)
        out.write("\n")
    logger.info("tree: %d leaves (%d from splits of %d roots), log-likelihood gain %.1f (%.3f per frame) over "
                "%.0f frames", result.num_leaves, len(result.splits), result.num_leaves - len(result.splits),
                result.log_likelihood_gain, result.log_likelihood_gain / max(result.frames, 1), result.frames)
    return result
