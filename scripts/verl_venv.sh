#!/usr/bin/env bash
# Build (once) the separate venv holding verl 0.9.1 + the PyPI torch wheel (runs on CPU) + Ray,
# and (every run, fast) install the arbiter checkout that runs this script into it, editable.
#   scripts/verl_venv.sh          -> prints the venv's python as the last line of stdout
#   ARBITER_VERL_VENV=/path       -> where the venv lives (default: ~/.cache/arbiter/verl-0.9.1)
#   PYTHON=/usr/bin/python3.11    -> the interpreter that creates it (default: python3)
# See docs/verl.md ("Testing against real verl").
set -euo pipefail
VERL_VERSION=0.9.1
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${ARBITER_VERL_VENV:-$HOME/.cache/arbiter/verl-$VERL_VERSION}"
PY="${PYTHON:-$(python3 -c 'import sys; print(sys.executable)')}"
STAMP="$VENV/.verl-$VERL_VERSION-ok"
# verl plus what its reward loop imports: hydra/omegaconf (config), Ray (reward-loop actors),
# torch + tensordict (DataProto), transformers (the tokenizer).
PACKAGES=("verl==$VERL_VERSION" torch "ray[default]" hydra-core omegaconf tensordict transformers)

pip_install() {  # quiet; on failure, pip's output (less this machine's index-location notes)
  if ! "$VENV/bin/python" -m pip install -q "$@" >"$VENV/.pip.log" 2>&1; then
    grep -v "^WARNING: Location" "$VENV/.pip.log" >&2; echo "verl_venv: pip install $* failed" >&2; exit 1
  fi
}

start=$(date +%s)
if [ ! -f "$STAMP" ]; then
  echo "verl_venv: building $VENV (verl $VERL_VERSION, torch, ray: about 6.5 GB, minutes)" >&2
  rm -rf "$VENV"
  mkdir -p "$(dirname "$VENV")"
  "$PY" -m venv "$VENV"
  pip_install --upgrade pip
  pip_install "${PACKAGES[@]}"
  "$VENV/bin/python" -c "import verl, torch, ray, hydra; print('verl', verl.__version__, 'torch', torch.__version__, 'ray', ray.__version__)" >&2
  echo "verl $VERL_VERSION built $(date -u +%FT%TZ) in $(( $(date +%s) - start ))s" > "$STAMP"
fi
# Every run: the arbiter of THIS checkout, editable (pip keeps the packages already satisfied);
# skipped when this very checkout with this very pyproject.toml is the one installed.
WANT="$REPO $(sha256sum "$REPO/pyproject.toml" | cut -d' ' -f1)"
if [ "$(cat "$VENV/.arbiter-editable" 2>/dev/null)" != "$WANT" ]; then
  pip_install -e "$REPO[test]"
  echo "$WANT" > "$VENV/.arbiter-editable"
fi
echo "verl_venv: ready in $(( $(date +%s) - start ))s ($(cat "$STAMP"))" >&2
echo "$VENV/bin/python"
