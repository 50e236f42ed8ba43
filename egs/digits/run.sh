#!/usr/bin/env bash
# egs/digits: spoken digits synthesised with espeak-ng, featurized with
# asrkit-featurize, recognised by nearest-template DTW and scored with
# asrkit-score.  A small end-to-end demonstration of the front end and the
# scorer; it is not the LSTM-HMM pipeline, which egs/voicesearch/run.sh will be.
#
#   egs/digits/run.sh [--stage N] [--nj N] [--out DIR]
#
# Sets itself up (bin/setup-env) on a fresh machine; reruns skip finished stages.
set -euo pipefail

stage=0
nj=2
out=
. "$(dirname "$0")/../../steps/parse_options.sh"
require_no_arguments "$@"
require_whole_number stage nj
here="$(cd "$(dirname "$0")" && pwd)"

"$here/../../bin/setup-env"
. "$here/path.sh"
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
  "$here/../../steps/featurize.sh" --nj "$nj" "$out/data/train" "$out/data/test" "$out/feats"
fi

if [ "$stage" -le 2 ]; then
  echo "== stage 2: recognise test utterances by DTW against training templates ==" >&2
  python "$here/local/dtw_recognize.py" "$out/data/train" "$out/data/test" "$out/exp/hyp.txt"
fi

if [ "$stage" -le 3 ]; then
  echo "== stage 3: score ==" >&2
  asrkit-score --utt2spk "$out/data/test/utt2spk" "$out/data/test/text" "$out/exp/hyp.txt" "$out/exp/score"
  echo "$0: results in $out/exp/score (wer, per_utt, per_spk, ops)" >&2
fi
