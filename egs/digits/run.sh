#!/usr/bin/env bash
# egs/digits: spoken digits synthesised with espeak-ng, featurized with
# asrkit-featurize, recognised by nearest-template DTW and scored with
# asrkit-score.  A small end-to-end demonstration of the front end and the
# scorer; it is not the LSTM-HMM pipeline, which egs/voicesearch/run.sh will be.
#
#   egs/digits/run.sh [--stage N] [--nj N] [--out DIR]
#
# Stage 0 sets the machine up (bin/setup-env) and synthesises the data; reruns skip finished stages.
# cmd.sh says how the featurizing and recognition jobs are launched (run-local by default; Slurm or
# ssh on a cluster, which must see --out at the same path); their logs are in <out>/log.
set -euo pipefail

stage=0
nj=2
out=
. "$(dirname "$0")/../../steps/parse_options.sh"
require_no_arguments "$@"
require_whole_number stage nj
here="$(cd "$(dirname "$0")" && pwd)"
[ "$stage" -le 0 ] && "$here/../../bin/setup-env"
. "$here/path.sh"
. "$here/cmd.sh"
out="${out:-$here/exp_demo}"
mkdir -p "$out"
echo "$parse_command_line: writing to $out" >&2
if ! command -v espeak-ng >/dev/null; then
  echo "$0: espeak-ng is needed to synthesise the digits: apt-get install espeak-ng" >&2
  exit 1
fi

if [ "$stage" -le 0 ] && [ ! -f "$out/data/.done" ]; then
  echo "== stage 0: synthesise train and test speakers ==" >&2
  python "$here/local/synthesize_digits.py" "$out/data"
  for set in train test; do validate_data_dir "$out/data/$set"; done
  touch "$out/data/.done"
fi

if [ "$stage" -le 1 ]; then
  echo "== stage 1: featurize (CMVN from the training set) ==" >&2
  # One job a set, each running its --nj jobs itself on the machine it lands on (as egs/voicesearch).
  "$here/../../steps/featurize.sh" --cmd "$decode_cmd --num-threads $nj" --nj "$nj" --log-dir "$out/log" \
    "$out/data/train" "$out/data/test" "$out/feats"
fi

if [ "$stage" -le 2 ]; then
  echo "== stage 2: recognise test utterances by DTW against training templates ==" >&2
  # A job array: job JOB of nj recognises every nj-th test utterance; the parts are joined in order.  The
  # command is one argument, its words quoted, so that the launcher runs no part of a path as shell syntax.
  printf -v recognize '%q ' python "$here/local/dtw_recognize.py" --part "JOB/$nj" "$out/data/train" \
    "$out/data/test" "$out/exp/hyp.JOB.txt"
  $decode_cmd JOB=1:"$nj" "$out/log/recognize.JOB.log" "$recognize"
  for job in $(seq "$nj"); do cat "$out/exp/hyp.$job.txt"; done | sort > "$out/exp/hyp.txt.tmp"
  mv "$out/exp/hyp.txt.tmp" "$out/exp/hyp.txt"
  for job in $(seq "$nj"); do rm -f "$out/exp/hyp.$job.txt"; done
fi

if [ "$stage" -le 3 ]; then
  echo "== stage 3: score ==" >&2
  asrkit-score --utt2spk "$out/data/test/utt2spk" "$out/data/test/text" "$out/exp/hyp.txt" "$out/exp/score"
  echo "$0: results in $out/exp/score (wer, per_utt, per_spk, ops)" >&2
fi
