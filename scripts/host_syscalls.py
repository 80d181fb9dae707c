"""Measure the system calls a policy host makes once its seccomp filter is loaded.

    .venv/bin/python scripts/host_syscalls.py            # both modes, prints a table
    .venv/bin/python scripts/host_syscalls.py --mode rlimits

Runs itself under `strace -f -ff` (apt-get install strace), plays a set of
policies that between them use every allowed module (numpy's submodules
included), grow and free memory, time out, run out of memory, crash and
print, then reads each host's trace from its `seccomp(` call on and counts
the system calls by name.  What the allow-list in
csro_tui/sandbox/host_kernel.py is measured from (see docs/SECURITY.md).
"""

from __future__ import annotations

import argparse
import collections
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

LOOPS = "class Policy:\n    def __init__(self, p, g):\n        pass\n    def act(self, obs):\n        while True:\n            pass\n"
SLEEPS = ("import time\nclass Policy:\n    def __init__(self, p, g):\n        pass\n"
          "    def act(self, obs):\n        time.sleep(30)\n")  # blocked import: a forbidden failure path
MEMORY = ("class Policy:\n    def __init__(self, p, g):\n        pass\n"
          "    def act(self, obs):\n        keep = []\n        while True:\n            keep.append(bytearray(64 << 20))\n")
NUMPY_MEMORY = ("import numpy as np\nclass Policy:\n    def __init__(self, p, g):\n        pass\n"
                "    def act(self, obs):\n        return int(np.zeros((1 << 40,)).sum())\n")
CRASH = "class Policy:\n    def __init__(self, p, g):\n        pass\n    def act(self, obs):\n        return 1 / 0\n"
RECURSION = ("class Policy:\n    def __init__(self, p, g):\n        pass\n"
             "    def act(self, obs):\n        return self.act(obs)\n")


def play(mode: str) -> None:
    os.environ["CSRO_SANDBOX"] = mode
    from csro_tui.sandbox.failures import PolicyFailure
    from csro_tui.sandbox.sandbox import PolicyHost, SandboxLimits

    fixtures = ROOT / "tests" / "sandbox_policies"
    game = {"name": "test", "num_players": 2, "num_actions": 3, "action_names": ["a", "b", "c"], "params": {}}
    limits = SandboxLimits(init_timeout=60, move_timeout=5, batch_timeout=10, memory_mb=512)
    short = SandboxLimits(init_timeout=60, move_timeout=0.3, batch_timeout=10, memory_mb=512)
    sources = [
        ((fixtures / name).read_text(), limits, 4)
        for name in ("numpy_everything.py", "idioms.py", "numpy_policy.py", "history_digest.py")
    ] + [(LOOPS, short, 1), (SLEEPS, limits, 1), (MEMORY, limits, 1), (NUMPY_MEMORY, limits, 1), (CRASH, limits, 1),
         (RECURSION, limits, 1)]
    for source, lim, moves in sources:
        host = PolicyHost(source, game, name="measured", limits=lim)
        try:
            host.new_episodes([(1, 0, 1), (2, 1, 2)])
            for _ in range(moves):
                host.act([(1, {"legal_actions": [0, 1, 2], "history": [0, 1]}), (2, {"legal_actions": [0, 1, 2]})])
            host.end_episodes([1, 2])
        except PolicyFailure as failure:
            print(f"  {mode}: {failure.summary()[:100]}", file=sys.stderr)
        finally:
            host.close()


_CALL = re.compile(r"^(?:\d+ +)?(?:\d+:\d+:\d+\.\d+ )?([a-z0-9_]+)\(")


def measure(mode: str) -> collections.Counter:
    trace_dir = tempfile.mkdtemp(prefix="csro-strace-")
    try:
        subprocess.run(["strace", "-f", "-ff", "-qq", "-o", os.path.join(trace_dir, "t"),
                        sys.executable, __file__, "--play", mode], check=True)
        counts: collections.Counter = collections.Counter()
        for trace in Path(trace_dir).iterdir():
            filtered = False
            for line in trace.read_text(errors="replace").splitlines():
                match = _CALL.match(line)
                if not match:
                    continue
                if filtered:
                    counts[match.group(1)] += 1
                elif "SECCOMP_SET_MODE_FILTER" in line and "{len=" in line and line.rstrip().endswith("= 0"):
                    filtered = True  # the allow-list is loaded (libseccomp's probes before it pass no program)
        return counts
    finally:
        shutil.rmtree(trace_dir, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mode", choices=("rlimits", "bubblewrap"), action="append")
    parser.add_argument("--play", choices=("rlimits", "bubblewrap"))
    args = parser.parse_args()
    if args.play:
        play(args.play)
        return
    if shutil.which("strace") is None:
        sys.exit("strace is not installed (apt-get install strace)")
    results = {mode: measure(mode) for mode in args.mode or ("rlimits", "bubblewrap")}
    names = sorted(set().union(*results.values()))
    print("system call".ljust(24) + "".join(mode.rjust(12) for mode in results))
    for name in names:
        print(name.ljust(24) + "".join(str(results[mode][name]).rjust(12) for mode in results))
    from csro_tui.sandbox import host_kernel

    allowed = set(host_kernel.ALLOWED_SYSCALLS) | {name for name, *_ in host_kernel._argument_rules(0, (0, 0))}
    print("made but not on the allow-list:", sorted(set(names) - allowed) or "none")
    print("on the allow-list but not made here:", sorted(allowed - set(names)) or "none")


if __name__ == "__main__":
    main()
