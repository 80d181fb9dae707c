"""A new sandbox host ready for a policy: spawned against forked by the zygote.

    .venv/bin/python -m bench.zygote [--pairs 7] [--mode rlimits|bubblewrap|both]

"Ready" is what a pooled host is when it is handed a policy: started, and
its reply to `prepare` read (every kernel layer in place: rlimits, no-new-
privs, Landlock, seccomp).  Each pair starts one host each way, in turns
(spawned, zygote, spawned, ...), so both see the same stretch of a shared
machine's load.  Wall: start_host_process until the reply.  CPU: this
process's (process_time) plus the host's own and, for a spawned host
under bubblewrap, bwrap's, from /proc/<pid>/schedstat of the process tree
just before it is killed; for the zygote, the zygote's CPU over the same
stretch (its fork) is added.  The zygote's own start (once per process) is
timed separately.  Prints the median of the pairs with the range.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

from bench.common import machine_line


def _schedstat_seconds(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/schedstat") as stream:
            return int(stream.read().split()[0]) / 1e9
    except (OSError, ValueError, IndexError):
        return 0.0


def _tree_cpu(pid: int) -> float:
    from csro_tui.policies.zygote import _descendants

    return sum(_schedstat_seconds(p) for p in [pid, *_descendants(pid, 4)])


def _one(mode: str, use_zygote: bool) -> tuple[float, float]:
    from csro_tui.policies import sandbox, zygote

    os.environ[zygote.ZYGOTE_ENV_VAR] = "1" if use_zygote else "0"
    the_zygote = zygote._current(mode) if use_zygote else None
    zygote_cpu = _schedstat_seconds(the_zygote.pid) if the_zygote else 0.0
    cpu, wall = time.process_time(), time.perf_counter()
    started = sandbox.start_host_process(mode)
    try:
        line = started.process.stdout.readline()  # the reply to prepare: the host is ready
        wall = time.perf_counter() - wall
        cpu = time.process_time() - cpu
        if b'"ok":true' not in line.replace(b" ", b""):
            raise RuntimeError(f"host not ready: {line[:200]!r}")
        cpu += _tree_cpu(started.process.pid)
        if the_zygote is not None:
            cpu += _schedstat_seconds(the_zygote.pid) - zygote_cpu
        if use_zygote != (type(started.process).__name__ == "ZygoteHost"):
            raise RuntimeError("the host did not come from where it was asked for")
    finally:
        started.discard()
    return wall, cpu


def _summary(values: list[float]) -> str:
    return (f"median {statistics.median(values) * 1e3:.1f} ms "
            f"(range {min(values) * 1e3:.1f}-{max(values) * 1e3:.1f})")


def run(mode: str, pairs: int) -> None:
    from csro_tui.policies import sandbox, zygote

    os.environ["CSRO_SANDBOX"] = mode
    zygote.shutdown()
    os.environ[zygote.ZYGOTE_ENV_VAR] = "1"
    began = time.perf_counter()
    if zygote._current(mode) is None:
        raise SystemExit(f"the zygote did not start in {mode} mode")
    zygote_start = time.perf_counter() - began
    _one(mode, False), _one(mode, True)  # warm-up: bytecode, probes
    spawned_wall, spawned_cpu, forked_wall, forked_cpu, wall_ratios, cpu_ratios = [], [], [], [], [], []
    for _ in range(pairs):
        sw, sc = _one(mode, False)
        fw, fc = _one(mode, True)
        spawned_wall.append(sw), spawned_cpu.append(sc), forked_wall.append(fw), forked_cpu.append(fc)
        wall_ratios.append(sw / fw), cpu_ratios.append(sc / fc)
    print(f"{mode}: new host ready for a policy, {pairs} alternating pairs")
    print(f"  spawned  wall {_summary(spawned_wall)}, CPU {_summary(spawned_cpu)}")
    print(f"  zygote   wall {_summary(forked_wall)}, CPU {_summary(forked_cpu)}")
    print(f"  ratio (spawned / zygote, per pair): wall median {statistics.median(wall_ratios):.1f}x "
          f"(range {min(wall_ratios):.1f}-{max(wall_ratios):.1f}), CPU median {statistics.median(cpu_ratios):.1f}x "
          f"(range {min(cpu_ratios):.1f}-{max(cpu_ratios):.1f}); target >= 5x")
    print(f"  the zygote's own start (once per process): {zygote_start * 1e3:.0f} ms wall")
    del sandbox


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=7)
    parser.add_argument("--mode", choices=("rlimits", "bubblewrap", "both"), default="both")
    args = parser.parse_args()
    print(machine_line())
    for mode in (("rlimits", "bubblewrap") if args.mode == "both" else (args.mode,)):
        run(mode, max(5, args.pairs))
    try:
        print(f"load average at end: {', '.join(f'{x:.2f}' for x in os.getloadavg())}")
    except OSError:
        pass


if __name__ == "__main__":
    main()
