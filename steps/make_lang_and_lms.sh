#!/usr/bin/env bash
# steps/make_lang_and_lms.sh: the lang dir, and the LMs of sequence training, decoding and rescoring.
set -euo pipefail

cmd=run-local
log_dir=
oov_word="<UNK>"
decoding_lm=
mix_lm=
mix_lm_opts=
decoding_dict=
lm_prune=0
trigram_through_format_lm=false
fourgram=true
bigram_train_dir=
help_message="Usage: steps/make_lang_and_lms.sh [options] <dict-dir> <train-dir> <heldout-dir> <data-dir>
 e.g.: steps/make_lang_and_lms.sh data/local/dict data/train data/dev data
The lang dir -> <data-dir>/lang (prepare_lang, unknown word --oov-word), and from <train-dir>/text's
transcripts (<heldout-dir>/text's perplexity in the logs; its text never enters an LM) the bigram of
sequence training -> <data-dir>/lang_bigram and the decoding LM -> <data-dir>/lang_test: a trigram of the
transcripts, or --decoding-lm through format_lm, or the trigram interpolated with --mix-lm (mix_lm, the
weights fitted on <heldout-dir>'s text); ARPA files under <data-dir>/local/lm (test.arpa: the decoding LM).
With --decoding-dict the decoding LM's lang dir is that dictionary's -> <data-dir>/lang_decode (a larger
vocabulary for decoding than for training; the same phones).  With --fourgram true also a 4-gram over the lang dir's words, for lattice rescoring only ->
<data-dir>/local/lm/fourgram.arpa.
Options:
  --cmd LAUNCHER                how jobs are launched (cmd.sh; default: $cmd)
  --log-dir DIR                 the jobs' logs (default: <data-dir>/local/lm/log)
  --oov-word WORD               the lang dir's unknown word (default: $oov_word)
  --decoding-lm FILE            an ARPA LM (plain or gzipped) to decode with, through format_lm: its words
                                outside the lexicon mapped to the unknown word (default: none)
  --mix-lm FILE                 a general LM (ARPA, plain or gzipped, or a Sphinx trie .lm.bin) the
                                transcripts' trigram is interpolated with for decoding (default: none)
  --mix-lm-opts 'OPTS'          more mix_lm options, e.g. '--case upper' (default: none)
  --decoding-dict DIR           the decoding LM's dictionary (default: <dict-dir>)
  --lm-prune T                  format_lm's relative-entropy pruning threshold (default: $lm_prune, none)
  --trigram-through-format-lm true|false   without --decoding-lm, the trigram of the transcripts keeps the
                                lexicon's words only (local/lm/train_trigram.arpa) and goes through format_lm
                                as an external LM would (default: $trigram_through_format_lm: make_lm builds
                                lang_test's G.fst itself)
  --fourgram true|false         the 4-gram for rescoring (default: $fourgram)
  --bigram-train-dir DIR        sequence training's bigram from this data dir's transcripts instead of
                                <train-dir>'s: the acoustic training set, where it holds other corpora's
                                utterances that the decoding LMs should not learn from (default: <train-dir>)"
. "$(dirname "$0")/parse_options.sh"
. "$(dirname "$0")/common.sh"

[ $# -eq 4 ] || usage_error "expected 4 arguments, got $#" "$help_message"
echo "$parse_command_line" >&2
dict_dir="$1"; train_dir="$2"; heldout_dir="$3"; data_dir="$4"
bigram_train_dir="${bigram_train_dir:-$train_dir}"
require_files "$dict_dir/lexicon.txt" "$train_dir/text" "$bigram_train_dir/text" "$heldout_dir/text" \
  ${decoding_lm:+"$decoding_lm"} ${mix_lm:+"$mix_lm"} ${decoding_dict:+"$decoding_dict/lexicon.txt"}
[ -z "$decoding_lm" ] || [ -z "$mix_lm" ] || usage_error "give --decoding-lm or --mix-lm, not both" "$help_message"
lm_dir="$data_dir/local/lm"
log_dir="${log_dir:-$lm_dir/log}"

# Run here, not through a launcher: the launchers pass arguments to bash verbatim (run.pl's rule), where
# <UNK> would be a redirection.
prepare_lang "$dict_dir" "$oov_word" "$data_dir/lang"
decoding_lang="$data_dir/lang"
if [ -n "$decoding_dict" ]; then
  decoding_lang="$data_dir/lang_decode"
  prepare_lang "$decoding_dict" "$oov_word" "$decoding_lang"
fi
mkdir -p "$lm_dir" "$log_dir"
cut -d' ' -f2- "$train_dir/text" > "$lm_dir/train_text.txt"
cut -d' ' -f2- "$heldout_dir/text" > "$lm_dir/dev_text.txt"
cut -d' ' -f2- "$bigram_train_dir/text" > "$lm_dir/bigram_train_text.txt"

lms="bigram:2 test:3"
if [ -n "$decoding_lm" ] || [ -n "$mix_lm" ] || $trigram_through_format_lm; then
  lms="bigram:2"
  if [ -z "$decoding_lm" ]; then
    # The lexicon's vocabulary, the lang dir's unknown word.
    run_logged "$log_dir/make_lm_trigram.log" \
      make_lm --order 3 --method kn --heldout "$lm_dir/dev_text.txt" --vocab "$data_dir/lang/words.txt" \
        --oov-word "$(cat "$data_dir/lang/oov.txt")" "$lm_dir/train_text.txt" "$lm_dir/train_trigram.arpa"
    decoding_lm="$lm_dir/train_trigram.arpa"
  fi
  if [ -n "$mix_lm" ]; then
    words_of "$mix_lm_opts" mix_options
    launch "$cmd" "$log_dir/mix_lm.log" \
      mix_lm "${mix_options[@]}" --heldout "$heldout_dir/text" --kaldi-text --vocab "$decoding_lang/words.txt" \
        "$decoding_lm" "$mix_lm" "$lm_dir/mixed.arpa"
    decoding_lm="$lm_dir/mixed.arpa"
  fi
  rm -rf "$data_dir/lang_test"
  launch "$cmd" "$log_dir/format_lm.log" \
    format_lm --prune-threshold "$lm_prune" "$decoding_lang" "$decoding_lm" "$data_dir/lang_test"
  # pocketsphinx reads the LM G.fst was made from (with the lexicon's words).
  cp "$data_dir/lang_test/G.arpa" "$lm_dir/test.arpa"
fi
for lm in $lms; do
  name="${lm%%:*}"; order="${lm##*:}"
  text="$lm_dir/train_text.txt"
  [ "$name" = bigram ] && text="$lm_dir/bigram_train_text.txt"
  rm -rf "$data_dir/lang_$name"
  cp -r "$data_dir/lang" "$data_dir/lang_$name"
  launch "$cmd" "$log_dir/make_lm_$name.log" \
    make_lm --order "$order" --method kn --heldout "$lm_dir/dev_text.txt" --lang-dir "$data_dir/lang_$name" \
      "$text" "$lm_dir/${name}.arpa"
done
if $fourgram; then
  # The 4-gram only rescores lattices: no graph is made from it, but it needs the lang dir's vocabulary,
  # every word a lattice can hold (run here for the unknown word, as above).
  run_logged "$log_dir/make_lm_fourgram.log" \
    make_lm --order 4 --method kn --heldout "$lm_dir/dev_text.txt" --vocab "$data_dir/lang/words.txt" \
      --oov-word "$(cat "$data_dir/lang/oov.txt")" "$lm_dir/train_text.txt" "$lm_dir/fourgram.arpa"
fi
record_options "$lm_dir" make_lang_and_lms "$parse_command_line" cmd log_dir oov_word decoding_lm mix_lm \
  mix_lm_opts decoding_dict lm_prune trigram_through_format_lm fourgram bigram_train_dir
