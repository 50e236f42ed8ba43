#!/usr/bin/env bash
# Runs asrkit's test suite on a fresh or an existing machine:
#   tests/run.sh [--quick] [pytest arguments]
# --quick leaves out the tests marked slow (the tiny recipes end to end, multi-process and multi-worker
# training): the unit tests alone, in a few minutes, one pytest-xdist worker per core (each test file
# stays on one worker, so a file's module-scoped fixtures are built once).
# With no arguments (CI) the whole suite runs in two passes: the unit tests spread over the cores as
# --quick does, then the slow tests in one process, since each of them starts several processes and
# times their exchanges.  Both passes always run; the exit status is the first failing pass's.
# Any other arguments go to one pytest process as they are.
# bin/setup-env creates .venv and installs asrkit with its test references
# (kaldi-native-fbank, jiwer) and the Debian packages the tests use.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$root/bin/setup-env" --test
cd "$root"
export LC_ALL=C PYTHONUNBUFFERED=1
pytest=("$root/.venv/bin/python" -m pytest)
spread=(-n auto --dist loadfile)

if [ $# -eq 0 ]; then
  echo "tests/run.sh: pass 1 of 2, the unit tests (-m 'not slow') across the cores"
  unit_status=0
  "${pytest[@]}" -m "not slow" "${spread[@]}" || unit_status=$?
  echo "tests/run.sh: pass 2 of 2, the slow tests (-m slow) in one process"
  slow_status=0
  "${pytest[@]}" -m slow || slow_status=$?
  echo "tests/run.sh: unit pass exit $unit_status, slow pass exit $slow_status"
  if [ "$unit_status" -ne 0 ]; then exit "$unit_status"; fi
  exit "$slow_status"
fi

args=()
for arg in "$@"; do
  if [ "$arg" = --quick ]; then args+=(-m "not slow" "${spread[@]}"); else args+=("$arg"); fi
done
exec "${pytest[@]}" ${args[@]+"${args[@]}"}
