#!/usr/bin/env bash
# Installs csro-tui into ./.venv: system packages first (bubblewrap for the
# policy sandbox, tmux for terminal checks), then the package with its test
# extra. Safe to run again.
set -euo pipefail
cd "$(dirname "$0")"

if command -v apt-get >/dev/null 2>&1 && ! command -v bwrap >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ]; then
    apt-get update -qq && apt-get install -y -qq bubblewrap >/dev/null
  else
    echo "note: bubblewrap is not installed; policies run in the weaker rlimits-only sandbox" >&2
  fi
fi

PYTHON=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q -e ".[test]"
