"""An honest policy's score against a CPU hog and against a quiet opponent (issue 34).

    PYTHONPATH=$PWD .venv/bin/python -m bench.hog [--cores 0] [--throws 150] [--episodes 4]

The honest policy needs ~14 ms of CPU a decision (a plain loop, then it
plays against the opponent's most frequent move); its budget is the
default 20 ms.  Its opponent plays the same moves in both matches (drawn
from its seed), quietly or after burning ~20 ms of CPU a decision (all of
its own budget).  Both hosts (and this process) run on `--cores` (a comma
list: `0` for one shared CPU, `0,1` for two), in each sandbox mode that
works here.  Same seeds in both matches, so without a forfeit the honest
policy's returns are equal, not just close: the script prints both, with
the wall time each match took and any failure.  Sandbox v3 charged wall
time, and the honest policy forfeited against the hog on one CPU.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from csro_tui.evaluation.participants import CodePolicy  # noqa: E402
from csro_tui.evaluation.referee import play_match  # noqa: E402
from csro_tui.games.registry import get_game  # noqa: E402
from csro_tui.sandbox.clock import _policy_pid  # noqa: E402
from csro_tui.sandbox.isolation import bubblewrap_problem  # noqa: E402
from csro_tui.sandbox.sandbox import PolicyHost  # noqa: E402

HONEST = """
class Policy:
    def __init__(self, player, game):
        self.counts = [0, 0, 0]

    def act(self, obs):
        total = 0
        for step in range({iterations}):
            total += step
        if obs["opp_moves"]:
            self.counts[obs["opp_moves"][-1]] += 1
        return (self.counts.index(max(self.counts)) + 1) % 3
"""

OPPONENT = """
import random


class Policy:
    def __init__(self, player, game):
        self.rng = random.Random(game["seed"])

    def act(self, obs):
        total = 0
        for step in range({iterations}):
            total += step
        return self.rng.choices([0, 1, 2], weights=[5, 3, 2])[0]
"""


def iterations_for(seconds: float) -> int:
    """Iterations of the policies' loop that take `seconds` of CPU here."""
    count, started = 300_000, time.process_time()
    total = 0
    for step in range(count):
        total += step
    return max(1, int(count * seconds / max(time.process_time() - started, 1e-6)))


def pinned_host_factory(cores: set[int]):
    class PinnedHost(PolicyHost):
        pinned = False

        def start(self) -> None:
            super().start()
            if not self.pinned:
                self.pinned = True
                os.sched_setaffinity(_policy_pid(self._process), cores)

    return PinnedHost


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cores", default="0", help="CPUs for this process and both hosts (default 0)")
    parser.add_argument("--throws", type=int, default=150)
    parser.add_argument("--episodes", type=int, default=4)
    args = parser.parse_args(argv)
    cores = {int(core) for core in args.cores.split(",")}
    os.sched_setaffinity(0, cores)
    spec = get_game(f"rrps(num_repetitions={args.throws})")
    honest = CodePolicy("honest", HONEST.format(iterations=iterations_for(0.014)))
    quiet = CodePolicy("quiet", OPPONENT.format(iterations=1))
    hog = CodePolicy("hog", OPPONENT.format(iterations=iterations_for(0.020)))
    load = os.getloadavg()
    print(f"cores {sorted(cores)}; {args.episodes} episodes of {args.throws} throws; "
          f"load average {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}")
    modes = [mode for mode in ("bubblewrap", "rlimits") if mode != "bubblewrap" or not bubblewrap_problem()]
    for mode in modes:
        os.environ["CSRO_SANDBOX"] = mode
        for opponent in (quiet, hog):
            started = time.monotonic()
            result = play_match(spec, honest, opponent, episodes=args.episodes, seed=3,
                                host_factory=pinned_host_factory(cores))
            seconds = time.monotonic() - started
            failure = result.failure.summary() if result.failure else "none"
            spread = statistics.pstdev(result.returns) if len(result.returns) > 1 else 0.0
            print(f"{mode:10} honest vs {opponent.name:5}: mean return {result.mean:+.2f} "
                  f"(stderr {result.stderr:.2f}, spread {spread:.2f}) over {result.episodes} episode(s), "
                  f"returns {result.returns}; {seconds:.1f} s; failure: {failure}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
