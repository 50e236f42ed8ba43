# steps/common.sh: shell functions the steps (steps/*.sh) and the recipes (egs/*/run.sh) share, sourced:
#
#   . "$ASRKIT_ROOT/steps/common.sh"
#
# Every function takes what it needs as arguments: none reads a variable its caller must have set.

# launch LAUNCHER LOG COMMAND...: one command as one job of a cmd.sh launcher (run-local, run-slurm,
# run-ssh), its output in LOG; its summary line is shown here.  The command's own --nj jobs run on the
# machine the launcher picks.  A failing job stops the caller (set -e) after the launcher has printed its
# log tail.  LAUNCHER is a command line, split on spaces ("run-local --num-threads 2").  COMMAND's words
# reach the job as they are: the launcher gets them as one command line with every word quoted (printf %q),
# since a launcher passes a whitespace-free word to bash verbatim (run.pl's rule), where a data dir, an id or
# a value read from a file holding $(...), ;, ` or > would run or redirect.
launch() {
  local launcher="$1" log="$2" command
  shift 2
  printf -v command '%q ' "$@"
  $launcher "$log" "${command% }"
  grep -h " summary: " "$log" >&2 || true
}

# run_logged LOG COMMAND...: COMMAND here, not through a launcher, its output in LOG (the launchers pass
# arguments to bash verbatim, run.pl's rule, where an argument such as <UNK> would be a redirection); on
# failure the log's tail is printed.  Its summary line is shown here.
run_logged() {
  local log="$1"
  shift
  mkdir -p "$(dirname "$log")"
  "$@" > "$log" 2>&1 || { tail "$log" >&2; echo "$0: failed: $* (log: $log)" >&2; return 1; }
  grep -h " summary: " "$log" >&2 || true
}

# require_files FILE...: each FILE (or directory) exists, else an error naming the first missing one (and, for a
# data dir's features, what makes them).
require_files() {
  local path
  for path in "$@"; do
    [ -e "$path" ] && continue
    echo "$0: missing input: $path" >&2
    case "$path" in
      */feats.scp|feats.scp) echo "$0: (a data dir's features: steps/featurize.sh, a recipe's features stage;" \
                                  "rerunning a recipe's data stages writes its data dirs anew, without them)" >&2 ;;
    esac
    exit 1
  done
}

# require_built_kaldi KALDI_ROOT CALLER_OPTION: KALDI_ROOT holds a Kaldi that bin/build-kaldi built, one of each
# kind of what steps/kaldi_baseline.sh runs, else an error naming CALLER_OPTION and the first missing file (exit 1):
# a recipe checks it before its first stage, not after the hour of training.
require_built_kaldi() {
  local root="$1" option="$2" path
  for path in egs/wsj/s5/steps/train_sat.sh src/featbin/compute-mfcc-feats src/gmmbin/gmm-latgen-faster \
              src/latbin/lattice-best-path src/bin/compute-wer src/fstbin/fsttablecompose src/lmbin/arpa2fst \
              tools/openfst/bin/fstcompile; do
    [ -x "$root/$path" ] || { echo "$0: $option $root is not a built Kaldi: $path is missing (build it with" \
                                   "bin/build-kaldi $root)" >&2; exit 1; }
  done
}

# usage_error MESSAGE USAGE: a step's wrong arguments: MESSAGE and the usage on stderr, exit 1.
usage_error() {
  printf '%s: %s\n%s\n' "$0" "$1" "$2" >&2
  exit 1
}

# record_options OUT_DIR STEP COMMAND_LINE NAME...: the step's command line and the value of each of its
# options (NAME, a variable) -> OUT_DIR/log/STEP.options: how the outputs beside it were made, defaults
# included.  Written when the step has finished (a step whose command starts its output dir afresh would
# remove an earlier one).
record_options() {
  local out_dir="$1" step="$2" command_line="$3" name
  shift 3
  mkdir -p "$out_dir/log"
  {
    echo "# $command_line"
    echo "# $(date '+%Y-%m-%dT%H:%M:%S')"
    for name in "$@"; do
      printf -- '--%s %q\n' "${name//_/-}" "${!name}"
    done
  } > "$out_dir/log/$step.options.tmp"
  mv "$out_dir/log/$step.options.tmp" "$out_dir/log/$step.options"
}

# Options holding more options (--train-opts "--num-streams 16 --config conf/train_ce.conf") are split
# on blanks, as Kaldi's steps split theirs: their values cannot hold spaces.
# words_of STRING ARRAY_NAME: ARRAY_NAME = STRING split on blanks (no globbing), empty for an empty STRING.
words_of() {
  # shellcheck disable=SC2034
  read -ra "$2" -d '' <<< "$1" || true
}

# Stages of a recipe: stages_init LOG_DIR STAGE STOP_STAGE first, then for each stage
#   if run_stage N; then begin_stage N "what it makes"; ...; fi
# and end_stage after the last.  Each stage starts with a header line (with the time) and ends with a line
# saying how long it took, also appended to LOG_DIR/stage_times ("N SECONDS DATE", for the results table).
stages_log_dir=
stages_first=0
stages_last=100
stage_name=
stage_started=0
stages_init() { stages_log_dir="$1"; stages_first="$2"; stages_last="$3"; }
end_stage() {
  if [ -n "$stage_name" ]; then
    echo "== $stage_name done in $((SECONDS - stage_started)) s ==" >&2
    mkdir -p "$stages_log_dir"
    echo "${stage_name#stage } $((SECONDS - stage_started)) $(date '+%Y-%m-%dT%H:%M:%S')" >> "$stages_log_dir/stage_times"
    stage_name=
  fi
}
begin_stage() {
  end_stage
  stage_name="stage $1"
  stage_started=$SECONDS
  echo "== stage $1: $2 == ($(date '+%Y-%m-%d %H:%M:%S'))" >&2
}
# run_stage N: whether stage N is within the recipe's --stage .. --stop-stage.
run_stage() { [ "$stages_first" -le "$1" ] && [ "$stages_last" -ge "$1" ]; }

# ce_model_options AM CELLS: asrkit-train-ce's --model options of the acoustic network AM, two layers of
# CELLS cells (tdnnf: layers of 2 x CELLS units, the config's 8 TDNN-F layers, 240 ms either side).  wblstm ([Mohamed2015]) is bidirectional with half the cells per direction, over a 6+5+6
# window: at the recipes' 30 ms frames, 180 ms of context either side of groups of 150 ms ([Mohamed2015]'s
# 20+8+20 at 10 ms frames is 200 ms either side of 80 ms); a group of 5 divides the recipes' --unroll
# 20.  Clean-only CE on voicesearch, same data and schedule: 8+4+8 test 18.75% at 5,574 frames/s, 6+6+6
# 18.14% at 7,149 (egs/voicesearch/RESULTS).
ce_model_options() {
  case "$1" in
    lstm) echo --model-param num_layers=2 --model-param num_cells="$2" ;;
    wblstm) echo --model wblstm --model-param num_layers=2 --model-param num_cells="$(( $2 / 2 ))" \
                 --model-param context=6 --model-param group=5 ;;
    tdnnf) echo --model tdnnf --model-param dim="$(( $2 * 2 ))" ;;
    *) echo "ce_model_options: unknown acoustic network '$1' (lstm, wblstm or tdnnf)" >&2; return 1 ;;
  esac
}

# ce_schedule DATA_DIR EPOCHS STREAMS [HALVINGS]: the learning rate halves HALVINGS times (default 4) over
# EPOCHS epochs, continuously (with 4, the last epochs fine-tune at 1/16 of it); the step count comes from
# DATA_DIR's frames (utt2num_frames), b = STREAMS and u = 20.
ce_schedule() {
  local frames steps halvings="${4:-4}"
  frames="$(awk '{ total += $2 } END { print total + 0 }' "$1/utt2num_frames")"
  steps=$(( frames * $2 / ($3 * 20) / halvings ))
  echo --lr-schedule exponential --lr-decay-rate 0.5 --lr-decay-steps $(( steps > 0 ? steps : 1 ))
}
