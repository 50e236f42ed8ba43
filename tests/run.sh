#!/usr/bin/env bash
# Runs asrkit's test suite on a fresh or an existing machine:
#   tests/run.sh [--quick] [pytest arguments]
# --quick leaves out the tests marked slow (the tiny recipes end to end, multi-process and multi-worker
# training): the unit tests alone, in a few minutes.
# bin/setup-env creates .venv and installs asrkit with its test references
# (kaldi-native-fbank, jiwer) and the Debian packages the tests use.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$root/bin/setup-env" --test
cd "$root"
export LC_ALL=C PYTHONUNBUFFERED=1
args=()
for arg in "$@"; do
  if [ "$arg" = --quick ]; then args+=(-m "not slow"); else args+=("$arg"); fi
done
exec "$root/.venv/bin/python" -m pytest ${args[@]+"${args[@]}"}
