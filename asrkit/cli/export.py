"""asrkit-export: a trained model and its graph as one self-contained recognizer package."""

import contextlib
import logging
import os
import shutil
import tempfile
import time

import click

from asrkit.cli.common import CONTEXT_SETTINGS, asrkit_command, combination_options, option_group, search_options
from asrkit.decode import defaults
from asrkit.logs import summary_line

COMMAND = "asrkit-export"

logger = logging.getLogger(COMMAND)


@click.command(context_settings=CONTEXT_SETTINGS)
@click.argument("model_dir", type=click.Path(exists=True, file_okay=False))
@click.argument("graph_dir", type=click.Path(exists=True, file_okay=False))
@click.argument("package_dir", type=click.Path(file_okay=False))
@click.option("--decode-dir", type=click.Path(exists=True, file_okay=False), default=None,
              help="A dev decode dir of this model (asrkit-decode with an LM-weight sweep): its best_lmwt and "
                   "prior_scale become the package's; the options below override them.")
@click.option("--lm-weight", type=click.FloatRange(min=0, min_open=True), default=None,
              help="LM weight (the acoustic scale is its inverse).  [default: the decode dir's, else 10]")
@click.option("--prior-scale", type=click.FloatRange(min=0), default=None,
              help="Scale of the log priors divided out of the posteriors.  [default: the decode dir's, else 1]")
@option_group("search", [search_options("Lattice beam (confidences and n-best lists come from the lattice).")])
@click.option("--cmvn-online", is_flag=True,
              help="Normalise with online CMN in batch transcription too (a model decoded with asrkit-decode "
                   "--cmvn-online); streaming always does, for models trained with the utterance or speaker mean.")
@click.option("--add-words", type=click.Path(exists=True, dir_okay=False), default=None,
              help="Words the package should know beyond GRAPH_DIR's: one per line, optionally followed by its "
                   "phones (else festival's letter-to-sound rules pronounce it) and ' :BOOST' (nats added to its "
                   "log probability; the --hotwords file's syntax).  GRAPH_DIR's lang dir, dictionary and LM "
                   "(found through its graph_info.json) get them, at the LM's unknown-word probability times "
                   "e^BOOST, and the graph is made again (as long as utils/mkgraph took).")
@click.option("--onnx", is_flag=True,
              help="Also write the acoustic model (the network, or the combination, with its priors) as one ONNX "
                   "graph, model.onnx: the network's input (normalised features) in, log-likelihoods out, for "
                   "onnxruntime (asrkit-transcribe --runtime onnx) and other ONNX runtimes.")
@combination_options
@asrkit_command(COMMAND)
def main(model_dir, graph_dir, package_dir, decode_dir, lm_weight, prior_scale, search, cmvn_online, add_words, onnx,
         combination):
    """Export MODEL_DIR (asrkit-train-ce's final/) with GRAPH_DIR (utils/mkgraph for it) into PACKAGE_DIR.

    The package holds the network as NumPy arrays, the front end and CMVN, priors, the graph as arrays, the
    word table, what forced alignment needs for word times, and the decoding parameters (decode.json);
    asrkit-transcribe and asrkit.Recognizer read it without TensorFlow.  With --combine-model, the package
    holds both networks and recognises with their frame-by-frame combination, as asrkit-decode
    --combine-model decodes (--decode-dir or --lm-weight then give the combination's LM weight).
    """
    # deferred: the package writer brings numpy and the model loader; --help imports neither
    from asrkit.recognizer.package import decode_params_from_dir, write_package

    start = time.monotonic()
    params = {**search.as_dict(), "cmvn_online": cmvn_online}
    if decode_dir:
        params.update(decode_params_from_dir(decode_dir))
        logger.info("from %s: LM weight %g, prior scale %g", decode_dir, params["lm_weight"], params["prior_scale"])
    elif lm_weight is None:
        logger.warning(f"no --decode-dir and no --lm-weight: LM weight {defaults.LM_WEIGHT:g} (asrkit-decode's "
                       "default), which is rarely the best; pass the dev decode dir")
    params.update({key: value for key, value in (("lm_weight", lm_weight), ("prior_scale", prior_scale))
                   if value is not None})
    combine_model = combination.combine_model
    if combine_model is not None:
        params["combination"] = {"weight": combination.combine_weight, "model_scale": combination.model_acoustic_scale,
                                 "combine_scale": combination.combine_acoustic_scale,
                                 "combine_prior_scale": combination.combine_prior_scale}
        logger.info("combined with %s: weight %g, acoustic scales %g and %g, its prior scale %g", combine_model,
                    combination.combine_weight, combination.model_acoustic_scale, combination.combine_acoustic_scale,
                    combination.combine_prior_scale)
    with words_added(graph_dir, model_dir, add_words, package_dir) as (graph_dir, added):
        written = write_package(model_dir, graph_dir, package_dir, params, combine_model, onnx=onnx)
    if written["align"] is not None:
        logger.warning("no forced alignment in the package (%s): word times will come from the lattice",
                       written["align"])
    final = written["params"]
    logger.info(summary_line(COMMAND, "ok", package=written["package_dir"], pdfs=written["num_pdfs"],
                             graph_states=written["graph_states"], lm_weight=f"{final['lm_weight']:g}",
                             prior_scale=f"{final['prior_scale']:g}", word_times="lattice" if written["align"]
                             else "alignment", ivectors=str(written["ivectors"]).lower(),
                             combined=str(combine_model is not None).lower(), onnx=str(onnx).lower(),
                             added_words=len(added),
                             seconds=f"{time.monotonic() - start:.1f}"))


@contextlib.contextmanager
def words_added(graph_dir, model_dir, words_file, package_dir):
    """(graph dir, words added): graph_dir as it is without a words file, else a graph with its words made in a
    scratch directory beside the package, removed on leaving."""
    if words_file is None:
        yield graph_dir, []
        return
    # deferred: the graph builders bring kaldifst; --help imports none of them
    from asrkit.graph.add_words import graph_with_words

    parent = os.path.dirname(os.path.abspath(package_dir))
    os.makedirs(parent, exist_ok=True)
    work = tempfile.mkdtemp(prefix=".asrkit-add-words-", dir=parent)
    try:
        graph, added, had = graph_with_words(graph_dir, model_dir, words_file, work)
        if had:
            logger.info("%d words of %s are in the lexicon already: %s", len(had), words_file, " ".join(had[:20]))
        yield graph, added
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
