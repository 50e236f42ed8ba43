#!/usr/bin/env bash
# Runs asrkit's test suite on a fresh or an existing machine:
#   tests/run.sh [pytest arguments]
# bin/setup-env creates .venv and installs asrkit with its test references
# (kaldi-native-fbank, jiwer) and the Debian packages the tests use.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$root/bin/setup-env" --test
cd "$root"
export LC_ALL=C PYTHONUNBUFFERED=1
exec "$root/.venv/bin/python" -m pytest "$@"
