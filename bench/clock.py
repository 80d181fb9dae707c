"""The sandbox clock's cost (issue 25): baseline against this tree, in turns.

    .venv/bin/python -m bench.clock [--base COMMIT] [--turns N] [--episodes N]

1. The code-vs-code row (section 1: RRPS frequency_counter vs
   markov_predictor, 1000 throws, `play_match` with cold hosts): the tree at
   COMMIT (default: where the clock's branch started), exported with
   `git archive`, against this tree.  Each turn runs both, one after the
   other, each in a fresh interpreter that times `play_match` alone.
2. Memory per episode: one code policy against 16 benchmark bots (300
   throws) and against the other code seeds (1000 throws), 20 episodes each,
   in this tree: in waves of `SandboxLimits().episodes_per_host()` episodes
   (the default) against all at once (what the referee did before), in turns.

Prints the load average with every turn, then the minimum and median of
each side and the ratio of the minima.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BASE = "c623a69"  # the commit issue-25-clock started from

CODE_VS_CODE = """
import sys, time
sys.path.insert(0, {root!r})
import csro_tui
assert csro_tui.__file__.startswith({root!r}), csro_tui.__file__  # the tree this side measures
from csro_tui.evaluation.participants import CodePolicy
from csro_tui.evaluation.referee import play_match
from csro_tui.games.registry import get_game
spec = get_game("rrps")
seeds = spec.seed_policies()
a = CodePolicy("frequency_counter", seeds["frequency_counter"])
b = CodePolicy("markov_predictor", seeds["markov_predictor"])
import resource
play_match(spec, a, b, episodes=2, seed=1)  # imports, bytecode, page cache
def children():
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime
hosts_before, cpu = children(), time.process_time()
start = time.perf_counter()
result = play_match(spec, a, b, episodes={episodes}, seed=7)
seconds = time.perf_counter() - start
assert result.failure is None, result.failure
# wall, the referee's CPU, the two hosts' CPU (reaped children; bwrap's included)
print(seconds, time.process_time() - cpu, children() - hosts_before)
"""

WAVES = """
import sys, time
sys.path.insert(0, {root!r})
from csro_tui.evaluation import referee
from csro_tui.evaluation.participants import BotPolicy, CodePolicy
from csro_tui.evaluation.referee import MatchJob, play_matches
from csro_tui.games.registry import get_game
spec = get_game("rrps(num_repetitions={throws})")
seeds = spec.seed_policies()
policy = CodePolicy("frequency_counter", seeds["frequency_counter"])
if {bots}:
    opponents = [BotPolicy(bot.name) for bot in spec.benchmark()[:{opponents}]]
else:
    opponents = [CodePolicy(n, seeds[n]) for n in sorted(seeds) if n != "frequency_counter"][:{opponents}]
jobs = [MatchJob(policy, o, 20, 100 + i) for i, o in enumerate(opponents)]
if {all_at_once}:
    referee.episodes_per_host = lambda limits: 10_000
waves = referee.plan_waves(jobs, referee.episodes_per_host(None))
start = time.perf_counter()
results = play_matches(spec, jobs)
seconds = time.perf_counter() - start
assert all(r.failure is None for r in results), [r.failure for r in results]
print(seconds, len(waves), len(jobs))
"""


def export(commit: str, into: str) -> str:
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", commit, "csro_tui"], check=True, capture_output=True)
    path = os.path.join(into, "tree.tar")
    Path(path).write_bytes(archive.stdout)
    with tarfile.open(path) as tar:
        tar.extractall(into, filter="data")
    return into


def run(code: str) -> list[str]:
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True, timeout=1200)
    return out.stdout.split()


def report(label: str, sides: dict[str, list[float]]) -> None:
    (name_a, a), (name_b, b) = sides.items()
    for name, values in sides.items():
        print(f"  {name}: min {min(values):.3f} s, median {statistics.median(values):.3f} s, "
              f"runs {', '.join(f'{v:.3f}' for v in values)}")
    print(f"  {label}: {name_b} / {name_a} = {min(b) / min(a):.3f} (minima), "
          f"{statistics.median(b) / statistics.median(a):.3f} (medians)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", default=BASE)
    parser.add_argument("--turns", type=int, default=5)
    parser.add_argument("--episodes", type=int, default=60)
    parser.add_argument("--only", choices=("clock", "waves"))
    args = parser.parse_args()
    # rlimits: the host is the referee's own child, so its CPU time is counted
    # when it is reaped (under bubblewrap it is a grandchild in a PID namespace);
    # the clock's code is the same in both modes.
    os.environ.setdefault("CSRO_SANDBOX", "rlimits")
    print(f"cores {os.cpu_count()}, load at start {os.getloadavg()[0]:.2f}, CSRO_SANDBOX={os.environ['CSRO_SANDBOX']}")
    if args.only != "waves":
        with tempfile.TemporaryDirectory(prefix="csro-bench-base-") as base:
            export(args.base, base)
            sides: dict[str, list[float]] = {"baseline": [], "clock": []}
            referee_cpu: dict[str, list[float]] = {"baseline": [], "clock": []}
            host_cpu: dict[str, list[float]] = {"baseline": [], "clock": []}
            for turn in range(args.turns):
                for name, root in (("baseline", base), ("clock", str(ROOT))):
                    seconds, referee, hosts = run(CODE_VS_CODE.format(root=root, episodes=args.episodes))
                    sides[name].append(float(seconds))
                    referee_cpu[name].append(float(referee))
                    host_cpu[name].append(float(hosts))
                print(f"turn {turn + 1}: baseline {sides['baseline'][-1]:.3f} s, clock {sides['clock'][-1]:.3f} s "
                      f"(CPU referee {referee_cpu['baseline'][-1]:.3f} / {referee_cpu['clock'][-1]:.3f}, "
                      f"hosts {host_cpu['baseline'][-1]:.3f} / {host_cpu['clock'][-1]:.3f}), "
                      f"load {os.getloadavg()[0]:.2f}")
            print(f"1. code vs code, {args.episodes} episodes of 1000 throws (play_match, cold hosts):")
            report("cost of the clock, wall", sides)
            report("cost of the clock, the referee's CPU", referee_cpu)
            report("cost of the clock, the hosts' CPU", host_cpu)
    if args.only != "clock":
        for bots, opponents, throws in ((True, 16, 300), (False, 8, 1000)):
            sides = {"all at once": [], "waves": []}
            for turn in range(max(1, args.turns - 2)):
                for name, flag in (("all at once", True), ("waves", False)):
                    seconds, count, jobs = run(WAVES.format(
                        root=str(ROOT), all_at_once=flag, bots=bots, opponents=opponents, throws=throws))
                    sides[name].append(float(seconds))
                    if not flag:
                        waves = count
                print(f"turn {turn + 1}: all at once {sides['all at once'][-1]:.3f} s, waves {sides['waves'][-1]:.3f} s, "
                      f"load {os.getloadavg()[0]:.2f}")
            kind = "benchmark bots (the csro eval path)" if bots else "code opponents (the RRPS fast path)"
            print(f"2. frequency_counter vs {jobs} {kind} x 20 episodes of {throws} throws "
                  f"({20 * int(jobs)} episodes on its host), {waves} waves by default:")
            report("cost of the waves", sides)


if __name__ == "__main__":
    main()
