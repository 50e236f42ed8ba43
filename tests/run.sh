#!/usr/bin/env bash
# Runs asrkit's test suite on a fresh or an existing machine:
#   tests/run.sh [--quick] [pytest arguments]
# --quick leaves out the tests marked slow (the tiny recipes end to end, multi-process and multi-worker
# training): the unit tests alone, in a few minutes, one pytest-xdist worker per core (each test file
# stays on one worker, so a file's module-scoped fixtures are built once).  The full run stays in one
# process: the slow tests start several processes each and time their exchanges.
# bin/setup-env creates .venv and installs asrkit with its test references
# (kaldi-native-fbank, jiwer) and the Debian packages the tests use.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$root/bin/setup-env" --test
cd "$root"
export LC_ALL=C PYTHONUNBUFFERED=1
args=()
for arg in "$@"; do
  if [ "$arg" = --quick ]; then args+=(-m "not slow" -n auto --dist loadfile); else args+=("$arg"); fi
done
exec "$root/.venv/bin/python" -m pytest ${args[@]+"${args[@]}"}
