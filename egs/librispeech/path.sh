# Sourced by run.sh: the asrkit environment, Kaldi-style.
ASRKIT_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
export ASRKIT_ROOT
export PATH="$ASRKIT_ROOT/.venv/bin:$ASRKIT_ROOT/utils:$ASRKIT_ROOT/bin:$PATH"
export LC_ALL=C
export PYTHONUNBUFFERED=1
