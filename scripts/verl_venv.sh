#!/usr/bin/env bash
# Build (once) a separate venv holding one verl release + the PyPI torch wheel (runs on CPU) + Ray,
# and (every run, fast) install the arbiter checkout that runs this script into it, editable.
#   scripts/verl_venv.sh [VERSION]  -> VERSION 0.9.1 (default) or 0.8.0; prints the venv's python last
#   ARBITER_VERL_VENV=/path         -> where the 0.9.1 venv lives (default: ~/.cache/arbiter/verl-0.9.1)
#   ARBITER_VERL08_VENV=/path       -> where the 0.8.0 venv lives (default: ~/.cache/arbiter/verl-0.8.0)
#   PYTHON=/usr/bin/python3.11      -> the interpreter that creates it (default: python3)
# Packages added to the list after a venv was built (ADDED) are installed into it on the next run,
# without a rebuild. See docs/verl.md ("Testing against real verl").
set -euo pipefail
VERL_VERSION="${1:-0.9.1}"
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# verl plus what its reward loop imports: hydra/omegaconf (config), Ray (reward-loop actors),
# torch + tensordict (DataProto), transformers (the tokenizer), cachetools (verl's agent loop),
# transferqueue (0.9's replay buffer, where DAPO's filter_groups reads each response's acc).
# The 0.9.1 venv also holds the other trainers arbiter's adapters are tested against: TRL, and
# OpenRLHF without its dependencies (flash-attn and deepspeed need CUDA; its reward-function
# executor needs only torch, transformers and aiohttp, which are here).
case "$VERL_VERSION" in
  0.9.1)
    VENV="${ARBITER_VERL_VENV:-$HOME/.cache/arbiter/verl-0.9.1}"
    PACKAGES=("verl==0.9.1" torch "ray[default]" hydra-core omegaconf tensordict transformers cachetools
              "transferqueue==0.1.11" "trl==1.16.0")
    ADDED=(cachetools "transferqueue==0.1.11" "trl==1.16.0")
    NODEPS=("openrlhf==0.11.2") ;;
  0.8.0)  # verl 0.8.0 pins numpy < 2 and tensordict <= 0.10; pyarrow 26 needs numpy 2
    VENV="${ARBITER_VERL08_VENV:-$HOME/.cache/arbiter/verl-0.8.0}"
    PACKAGES=("verl==0.8.0" torch "ray[default]" hydra-core omegaconf "tensordict>=0.8,<=0.10,!=0.9.0" transformers
              "numpy<2" "pyarrow==25.0.1" cachetools)
    ADDED=("pyarrow==25.0.1")
    NODEPS=() ;;
  *) echo "verl_venv: unknown verl version $VERL_VERSION (known: 0.9.1, 0.8.0)" >&2; exit 2 ;;
esac
PY="${PYTHON:-$(python3 -c 'import sys; print(sys.executable)')}"
STAMP="$VENV/.verl-$VERL_VERSION-ok"

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
# Every run: what ADDED (distributions put in PACKAGES after venvs were built) lists and the venv
# lacks, by name and pinned version (one metadata look-up each when nothing is missing).
lacking() {  # the distributions of "$@" (name[==version]) this venv does not hold
  for dist in "$@"; do
    "$VENV/bin/python" -c "import importlib.metadata as m, sys; n, _, v = sys.argv[1].partition('==')
sys.exit(v not in ('', m.version(n)))" "$dist" 2>/dev/null || echo "$dist"
  done
}
missing=($(lacking ${ADDED[@]+"${ADDED[@]}"}))
if [ "${#missing[@]}" -gt 0 ]; then
  echo "verl_venv: adding ${missing[*]} to $VENV" >&2
  pip_install "${missing[@]}"
fi
missing=($(lacking ${NODEPS[@]+"${NODEPS[@]}"}))
if [ "${#missing[@]}" -gt 0 ]; then
  echo "verl_venv: adding ${missing[*]} (without dependencies) to $VENV" >&2
  pip_install --no-deps "${missing[@]}"
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
