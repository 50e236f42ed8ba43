#!/usr/bin/env bash
# steps/make_dict.sh: the pronunciation dictionary of the words of Kaldi text files (steps/prepare_dict.py).
set -euo pipefail

cmd=run-local
log_dir=
word_list=
frequent_words=0
frequent_apostrophes=false
pronunciations=
lts=false
max_missing=0
help_message="Usage: steps/make_dict.sh [options] <text> [<text>...] <dict-dir>
 e.g.: steps/make_dict.sh --lts true data/train/text data/local/dict
The dictionary of the words of each Kaldi <text> file (and of --word-list) -> <dict-dir>: CMUdict's
pronunciations (--pronunciations' first), and with --lts true festival's letter-to-sound rules for the words
they lack (listed in <dict-dir>/generated_lexicon.txt).
Options:
  --cmd LAUNCHER           how the job is launched (cmd.sh; default: $cmd)
  --log-dir DIR            the job's log (default: <dict-dir>/log)
  --word-list FILE         more words, one a line (default: none)
  --frequent-words N       also the N most frequent English words (default: $frequent_words)
  --frequent-apostrophes true|false   the frequent words include those with an apostrophe (GOD'S,
                           THEY'LL), which a general English LM knows (default: $frequent_apostrophes)
  --pronunciations FILE    a CMUdict-format lexicon whose pronunciations come first (default: none)
  --lts true|false         letter-to-sound pronunciations for the words without one (default: $lts)
  --max-missing N          words left without a pronunciation before it fails (default: $max_missing)"
. "$(dirname "$0")/parse_options.sh"
. "$(dirname "$0")/common.sh"

[ $# -ge 2 ] || usage_error "expected at least 2 arguments, got $#" "$help_message"
echo "$parse_command_line" >&2
dict_dir="${*: -1}"
texts=("${@:1:$#-1}")
require_files "${texts[@]}" ${word_list:+"$word_list"} ${pronunciations:+"$pronunciations"}
log_dir="${log_dir:-$dict_dir/log}"

options=()
$lts && options+=(--lts)
[ -n "$word_list" ] && options+=(--word-list "$word_list")
for text in "${texts[@]}"; do options+=(--text "$text"); done
[ "$frequent_words" != 0 ] && options+=(--frequent-words "$frequent_words")
$frequent_apostrophes && options+=(--frequent-apostrophes)
[ -n "$pronunciations" ] && options+=(--pronunciations "$pronunciations")
launch "$cmd" "$log_dir/prepare_dict.log" \
  python "$(dirname "$0")/prepare_dict.py" "${options[@]}" --max-missing "$max_missing" "$dict_dir"
record_options "$dict_dir" make_dict "$parse_command_line" cmd log_dir word_list frequent_words \
  frequent_apostrophes pronunciations lts max_missing
