#!/usr/bin/env bash
# Installs csro-tui into ./.venv: bubblewrap first (the policy sandbox's
# stronger mode, via apt-get when run as root), then the package with its
# test extra. Safe to run again.
#
# Another apt process (unattended upgrades on a fresh machine) may hold the
# package lock: apt-get waits for it up to CSRO_APT_LOCK_TIMEOUT seconds
# (default 300); if it still cannot install, a note says so and the Python
# install goes on without bubblewrap (the sandbox then runs in its
# rlimits-only mode, and `csro eval` prints which mode is active).
set -euo pipefail
cd "$(dirname "$0")"

LOCK_TIMEOUT=${CSRO_APT_LOCK_TIMEOUT:-300}
SANDBOX_NOTE="policies will run in the rlimits-only sandbox (see docs/SECURITY.md); run ./install.sh again later to add bubblewrap"

# `apt-get ARGS`, retried while another process holds an apt/dpkg lock and
# the deadline has not passed (DPkg::Lock::Timeout covers dpkg's lock, not
# the package lists' lock that `apt-get update` takes).
apt_get_waiting() {
  local deadline=$((SECONDS + LOCK_TIMEOUT)) output
  while true; do
    if output=$(apt-get -o DPkg::Lock::Timeout="$LOCK_TIMEOUT" "$@" 2>&1 >/dev/null); then
      return 0
    fi
    if ! grep -qi "lock" <<<"$output" || [ "$SECONDS" -ge "$deadline" ]; then
      printf '%s\n' "$output" | grep -E '^(E|W):' | head -3 >&2 || true
      return 1
    fi
    sleep 2
  done
}

if command -v apt-get >/dev/null 2>&1 && ! command -v bwrap >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ]; then
    echo "installing bubblewrap (waiting up to ${LOCK_TIMEOUT}s for the package lock if another apt is running)" >&2
    apt_get_waiting update -qq || echo "note: apt-get update failed; trying the install with the current package lists" >&2
    if ! apt_get_waiting install -y -qq bubblewrap; then
      echo "note: could not install bubblewrap (package lock busy for ${LOCK_TIMEOUT}s, or apt failed); $SANDBOX_NOTE" >&2
    fi
  else
    echo "note: bubblewrap is not installed and this is not root; $SANDBOX_NOTE" >&2
  fi
fi

PYTHON=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q -e ".[test]"
