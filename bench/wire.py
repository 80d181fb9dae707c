"""The wire's bound (issue 34): the parent's memory and time while it plays a
policy whose replies are valid but oversized, against an honest policy's,
in this tree and in a baseline tree, in turns.

    .venv/bin/python -m bench.wire [--base COMMIT] [--turns N] [--entries N]

The oversized policy answers every move with a distribution of `--entries`
entries: all the weight on a legal action, zero on ids that are not legal
(valid: zero weight on an illegal action changes nothing).  Before the
bound its host sent every entry and the parent parsed them all; now the
host leaves them out.  The honest policy is the same with a one-entry
distribution.  Each side plays RRPS (100 throws) against frequency_counter,
10 episodes, in a fresh interpreter that prints its peak resident memory
(the parent alone: ru_maxrss of its own process) and the match's wall time.
The ratio that matters, oversized / honest in the same tree, is printed per
tree (target: within 1.5x).
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile

from bench.clock import ROOT, export, run

BASE = "7fda173"  # the commit the wire's branch started from

POLICY = """
TABLE = dict.fromkeys(range(3, {entries} + 2), 0.0)
TABLE[1] = 1.0


class Policy:
    def __init__(self, player, game):
        pass

    def act(self, obs):
        return TABLE
"""

MATCH = """
import resource, sys, time
sys.path.insert(0, {root!r})
import csro_tui
assert csro_tui.__file__.startswith({root!r}), csro_tui.__file__  # the tree this side measures
from csro_tui.evaluation.participants import CodePolicy
from csro_tui.evaluation.referee import play_match
from csro_tui.games.registry import get_game
spec = get_game("rrps(num_repetitions=100)")
policy = CodePolicy("policy", {source!r})
opponent = CodePolicy("frequency_counter", spec.seed_policies()["frequency_counter"])
start = time.perf_counter()
result = play_match(spec, policy, opponent, episodes=10, seed=7)
seconds = time.perf_counter() - start
outcome = "ok" if result.failure is None else result.failure.category.value
print(seconds, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, outcome)
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", default=BASE)
    parser.add_argument("--turns", type=int, default=3)
    parser.add_argument("--entries", type=int, default=5000)
    args = parser.parse_args()
    os.environ.setdefault("CSRO_SANDBOX", "rlimits")
    print(f"cores {os.cpu_count()}, load at start {os.getloadavg()[0]:.2f}, CSRO_SANDBOX={os.environ['CSRO_SANDBOX']}")
    policies = {"honest": POLICY.format(entries=1), "oversized": POLICY.format(entries=args.entries)}
    with tempfile.TemporaryDirectory(prefix="csro-bench-base-") as base:
        export(args.base, base)
        trees = {"baseline": base, "wire": str(ROOT)}
        memory = {(tree, kind): [] for tree in trees for kind in policies}
        seconds = {(tree, kind): [] for tree in trees for kind in policies}
        for turn in range(args.turns):
            line = []
            for tree, root in trees.items():
                for kind, source in policies.items():
                    wall, peak, outcome = run(MATCH.format(root=root, source=source))
                    memory[tree, kind].append(float(peak))
                    seconds[tree, kind].append(float(wall))
                    line.append(f"{tree} {kind} {float(peak):.0f} MB {float(wall):.2f} s {outcome}")
            print(f"turn {turn + 1}: " + "; ".join(line) + f"; load {os.getloadavg()[0]:.2f}")
        print(f"RRPS 100 throws x 10 episodes against frequency_counter; oversized: {args.entries} entries a move")
        for tree in trees:
            honest, oversized = memory[tree, "honest"], memory[tree, "oversized"]
            fast, slow = seconds[tree, "honest"], seconds[tree, "oversized"]
            print(f"  {tree}: parent peak memory honest {statistics.median(honest):.0f} MB, oversized "
                  f"{statistics.median(oversized):.0f} MB: {max(oversized) / min(honest):.2f}x at worst "
                  f"(target 1.5x); wall {statistics.median(fast):.2f} s against {statistics.median(slow):.2f} s "
                  f"(medians): {statistics.median(slow) / statistics.median(fast):.1f}x")


if __name__ == "__main__":
    main()
