"""Language-side commands with Kaldi's names and argument orders: prepare_lang, make_lm, format_lm, mkgraph
(run as utils/<name> or as the package's console scripts), and make_monophone_model (the model dir mkgraph
needs before alignment exists)."""

import logging

import click

from asrkit.cli.common import CONTEXT_SETTINGS, EXISTING_DIR, asrkit_command, existing_dirs
from asrkit.graph.grammar import make_lang_lm
from asrkit.lm.make_lm import make_lm
from asrkit.logs import summary_line


@click.command("prepare_lang", context_settings=CONTEXT_SETTINGS)
@click.argument("dict_dir", type=EXISTING_DIR)
@click.argument("oov_word")
@click.argument("lang_dir", type=click.Path(file_okay=False))
@click.option("--sil-prob", default=0.5, type=click.FloatRange(0, 1, max_open=True),
              help="Probability of the optional silence between words (0: no optional silence).")
@click.option("--num-sil-states", default=1, type=click.IntRange(min=1), help="Emitting HMM states per silence phone.")
@click.option("--num-nonsil-states", default=1, type=click.IntRange(min=1),
              help="Emitting HMM states per nonsilence phone (1 at 30 ms frames).")
@click.option("--self-loop-prob", default=0.5, type=click.FloatRange(0, 1, min_open=True, max_open=True),
              help="Self-loop probability of every HMM state in topo.")
@asrkit_command("prepare_lang")
def prepare_lang_command(dict_dir, oov_word, lang_dir, sil_prob, num_sil_states, num_nonsil_states, self_loop_prob):
    """Build LANG_DIR (phones.txt, words.txt, topo, L.fst, L_disambig.fst, phones/, oov.*) from the Kaldi
    dictionary dir DICT_DIR; OOV_WORD (e.g. '<UNK>') must be in its lexicon."""
    # deferred: graph building brings numpy and kaldifst (~0.5 s); --help imports none of it.
    from asrkit.graph.prepare_lang import LangOptions, prepare_lang

    options = LangOptions(sil_prob=sil_prob, num_sil_states=num_sil_states, num_nonsil_states=num_nonsil_states,
                          self_loop_prob=self_loop_prob)
    summary = prepare_lang(dict_dir, oov_word, lang_dir, options)
    logging.getLogger("prepare_lang").info(summary_line(
        "prepare_lang", "ok", lang_dir=lang_dir, phones=summary.num_phones, words=summary.num_words,
        pronunciations=summary.num_pronunciations, disambig_symbols=summary.num_disambig))


@click.command("make_lm", context_settings=CONTEXT_SETTINGS)
@click.argument("text", type=click.Path(exists=True, dir_okay=False))
@click.argument("arpa", type=click.Path(dir_okay=False))
@click.option("-o", "--order", default=3, type=click.IntRange(1, 5), help="n-gram order.")
@click.option("-m", "--method", default="kn", type=click.Choice(["kn", "wb"]),
              help="Smoothing: interpolated modified Kneser-Ney or Witten-Bell.")
@click.option("--heldout", type=click.Path(exists=True, dir_okay=False), help="Held-out text for perplexity.")
@click.option("--kaldi-text", is_flag=True, help="Lines start with an utterance id (a data dir's text file).")
@click.option("--vocab", "vocabulary", type=click.Path(exists=True, dir_okay=False),
              help="Word list or words.txt: other words become --oov-word; every listed word gets a probability.")
@click.option("--oov-word", default="<unk>", help="Word that stands for words outside --vocab.")
@click.option("--lang-dir", type=EXISTING_DIR,
              help="Take the vocabulary and OOV word from this lang dir and write its G.fst from the ARPA.")
@asrkit_command("make_lm")
def make_lm_command(text, arpa, order, method, heldout, kaldi_text, vocabulary, oov_word, lang_dir):
    """Estimate an n-gram LM on TEXT (one sentence a line) and write it to ARPA; report perplexities."""
    if lang_dir and vocabulary:
        raise click.UsageError("--lang-dir brings its own vocabulary; do not give --vocab too")
    if lang_dir:
        result = make_lang_lm(text, arpa, lang_dir, order, method, heldout, kaldi_text)
    else:
        result = make_lm(text, arpa, order, method, heldout, vocabulary, oov_word, kaldi_text)
    fields = {"arpa": arpa, "order": order, "method": method, "sentences": result.sentences,
              "ngrams": ",".join(map(str, result.ngram_counts)), "oov_tokens": result.oov_tokens,
              "train_ppl": f"{result.train_perplexity:.2f}"}
    if result.heldout_perplexity is not None:
        fields["heldout_ppl"] = f"{result.heldout_perplexity:.2f}"
        fields["heldout_oovs"] = result.heldout_oov_tokens
    if result.grammar_fst:
        fields["G"] = result.grammar_fst
    logging.getLogger("make_lm").info(summary_line("make_lm", "ok", **fields))


@click.command("format_lm", context_settings=CONTEXT_SETTINGS)
@click.argument("lang_dir", type=EXISTING_DIR)
@click.argument("arpa", type=click.Path(exists=True, dir_okay=False))
@click.argument("out_lang_dir", type=click.Path(file_okay=False))
@click.option("--prune-threshold", default=0.0, type=click.FloatRange(min=0),
              help="Prune n-grams whose removal raises perplexity by less than this fraction (Stolcke's relative "
                   "entropy criterion, SRILM's -prune; Kaldi's LibriSpeech LMs use 1e-7 and 3e-7); 0 keeps all.")
@click.option("--case", type=click.Choice(["upper", "lower"]),
              help="Fold the LM's words to this case first (pocketsphinx's en-us LM is lower case, Kaldi lexicons "
                   "often upper case); <s>, </s> and <UNK>-like words are kept.")
@asrkit_command("format_lm")
def format_lm_command(lang_dir, arpa, out_lang_dir, prune_threshold, case):
    """Copy LANG_DIR to OUT_LANG_DIR with G.fst (and G.arpa) from the LM ARPA: an ARPA file, plain or gzipped
    (lines before its \\data\\ are skipped, as Kaldi's arpa2fst skips them), or CMU Sphinx's binary trie
    (pocketsphinx's .lm.bin).  The LM's words outside LANG_DIR's lexicon are counted, listed in
    OUT_LANG_DIR/arpa_oovs.txt and mapped to its unknown word (oov.txt).  Kaldi's utils/format_lm.sh without its
    lexicon argument: words.txt is the lexicon's."""
    from asrkit.graph.format_lm import format_lm  # deferred: numpy and kaldifst, as in prepare_lang

    summary = format_lm(lang_dir, arpa, out_lang_dir, prune_threshold, case)
    logging.getLogger("format_lm").info(summary_line(
        "format_lm", "ok", lang_dir=out_lang_dir, order=summary.order, ngrams_in=",".join(map(str, summary.ngrams_in)),
        ngrams=",".join(map(str, summary.ngrams_out)), oov_words=len(summary.oov_words),
        unknown_word=summary.unknown_word, dropped_ngrams=summary.dropped_ngrams, pruned=summary.pruned_ngrams))


@click.command("mkgraph", context_settings=CONTEXT_SETTINGS)
@existing_dirs("lang_dir", "model_dir")
@click.argument("graph_dir", type=click.Path(file_okay=False))
@click.option("--self-loop-scale", default=0.1, type=click.FloatRange(min=0),
              help="Scale of self-loop log-probs.  With asrkit's topology (every self-loop and exit 0.5, untrained) "
                   "it shifts every path by the same cost per frame and changes no decode (voicesearch dev: the "
                   "same WER at 0.1, 0.3 and 0.5).")
@click.option("--transition-scale", default=1.0, type=click.FloatRange(min=0),
              help="Scale of the other transition log-probs.")
@asrkit_command("mkgraph")
def mkgraph_command(lang_dir, model_dir, graph_dir, self_loop_scale, transition_scale):
    """Build GRAPH_DIR/HCLG.fst (inputs pdf+1, outputs words) from LANG_DIR (L_disambig.fst, G.fst)
    and MODEL_DIR (tree.json; topo and num_pdfs if present)."""
    from asrkit.graph.hclg import GraphOptions, make_graph  # deferred: numpy and kaldifst, as in prepare_lang

    info = make_graph(lang_dir, model_dir, graph_dir, GraphOptions(self_loop_scale, transition_scale))
    logging.getLogger("mkgraph").info(summary_line(
        "mkgraph", "ok", graph_dir=graph_dir, states=info.num_states, arcs=info.num_arcs, pdfs=info.num_pdfs,
        seconds=f"{info.seconds:.1f}", peak_memory_mib=f"{info.peak_memory_mib:.0f}"))


@click.command("make_monophone_model", context_settings=CONTEXT_SETTINGS)
@click.argument("lang_dir", type=EXISTING_DIR)
@click.argument("model_dir", type=click.Path(file_okay=False))
@asrkit_command("make_monophone_model")
def make_monophone_model_command(lang_dir, model_dir):
    """Write MODEL_DIR/tree.json (one pdf per phone and HMM state), topo, phones.txt and num_pdfs from LANG_DIR."""
    from asrkit.graph.hclg import write_monophone_model_dir  # deferred: numpy and kaldifst, as in prepare_lang

    tree = write_monophone_model_dir(lang_dir, model_dir)
    logging.getLogger("make_monophone_model").info(summary_line(
        "make_monophone_model", "ok", model_dir=model_dir, pdfs=tree.num_pdfs))


@click.command("mix_lm", context_settings=CONTEXT_SETTINGS)
@click.argument("lms", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False))
@click.argument("arpa", type=click.Path(dir_okay=False))
@click.option("--weights", help="Comma-separated weight of each LM, in order, summing to 1 (e.g. 0.6,0.4).")
@click.option("--heldout", type=click.Path(exists=True, dir_okay=False),
              help="Choose the weights on this held-out text by EM (SRILM's compute-best-mix) instead.")
@click.option("--kaldi-text", is_flag=True, help="--heldout's lines start with an utterance id (a data dir's text).")
@click.option("--vocab", "vocabulary", type=click.Path(exists=True, dir_okay=False),
              help="Word list or words.txt (a lang dir's): only n-grams among these words are kept, with their "
                   "probabilities (SRILM's -limit-vocab); a general LM of 70,000 words shrinks to the lexicon's.")
@click.option("--case", type=click.Choice(["upper", "lower"]),
              help="Fold every LM's words to this case first (pocketsphinx's en-us LM is lower case, Kaldi "
                   "lexicons often upper case); <s>, </s> and <UNK>-like words are kept.")
@click.option("--oov-word", default="<UNK>", show_default=True,
              help="Held-out words no LM knows are scored as this word where an LM has it, else skipped.")
@asrkit_command("mix_lm")
def mix_lm_command(lms, arpa, weights, heldout, kaldi_text, vocabulary, case, oov_word):
    """Interpolate the back-off LMs LMS (ARPA, plain or gzipped, or CMU Sphinx's binary trie .lm.bin) into the
    ARPA file ARPA: the union of their n-grams, each with the weighted sum of the LMs' probabilities, back-off
    weights recomputed (SRILM's ngram -mix-lm)."""
    from asrkit.lm.mix_files import mix_lm_files  # deferred: numpy, as the other LM commands

    if (weights is None) == (heldout is None):
        raise click.UsageError("give either --weights or --heldout")
    if len(lms) < 2:
        raise click.UsageError(f"mixing needs two or more LMs; got {len(lms)}")
    parsed = None
    if weights is not None:
        try:
            parsed = [float(value) for value in weights.split(",")]
        except ValueError:
            raise click.BadParameter(f"{weights!r} is not a comma-separated list of numbers", param_hint="--weights")
    result = mix_lm_files(lms, arpa, parsed, heldout, kaldi_text, vocabulary, case, oov_word)
    fields = {"arpa": arpa, "weights": ",".join(f"{w:.4f}" for w in result.weights),
              "ngrams": ",".join(map(str, result.ngram_counts))}
    if result.fit is not None:
        fields["heldout_ppl"] = ",".join(f"{p:.2f}" for p in result.fit.perplexities)
        fields["mixture_ppl"] = f"{result.fit.mixture_perplexity:.2f}"
        fields["heldout_tokens"] = result.fit.tokens
        fields["skipped_tokens"] = result.fit.skipped_tokens
    logging.getLogger("mix_lm").info(summary_line("mix_lm", "ok", **fields))
