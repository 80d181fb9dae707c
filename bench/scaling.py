"""Section 6: what adding the n-th policy costs, and what the process pool buys.

Adding the n-th policy to a population evaluates its n-1 new payoff
entries (one match each), so its cost should grow linearly in n.  The
entries go through the engine's own evaluator (`GameEvaluator.run`), and
the bench records whether that dispatched them to the process pool of
referees and with how many worker processes.  The pool's speed-up is
`evaluate_matchups` on the same jobs with 1 worker and with every core.
"""

from __future__ import annotations

import os

from bench.common import Table, fmt_seconds, ratio, timed

SIZES = (5, 10, 20, 40)
SEED_ORDER = ("frequency_counter", "markov_predictor", "beat_last", "cycle", "uniform_random", "constant_rock")


def population(spec, size: int):
    """`size` distinct RRPS members: the seed policies, each copy with its own comment line."""
    from csro_tui.oracles.base import PolicyRecord

    seeds = spec.seed_policies()
    members = []
    for k in range(size):
        name = SEED_ORDER[k % len(SEED_ORDER)]
        members.append(PolicyRecord(id=f"p{k}", name=f"{name}#{k}", source=seeds[name] + f"\n# member {k}\n",
                                    origin="seed"))
    return members


class PoolWatch:
    """Records the worker count of every dispatch to the runner's process pool."""

    def __init__(self) -> None:
        from csro_tui.evaluation import runner

        self.runner = runner
        self.original = runner._evaluate_in_pool  # noqa: SLF001 - observing, not changing, the code path
        self.dispatches: list[int] = []

    def __enter__(self):
        def watched(spec, jobs, chunks, processes, progress, limits):
            self.dispatches.append(processes)
            return self.original(spec, jobs, chunks, processes, progress, limits)

        self.runner._evaluate_in_pool = watched
        return self

    def __exit__(self, *exc) -> None:
        self.runner._evaluate_in_pool = self.original


def scaling(table: Table, quick: bool) -> None:
    from csro_tui.engine.evaluator import GameEvaluator, MatchJob, derive_seed
    from csro_tui.evaluation.participants import CodePolicy
    from csro_tui.evaluation.runner import MatchJob as RunnerJob, evaluate_matchups
    from csro_tui.games.registry import get_game

    spec = get_game("rrps")
    episodes = 2 if quick else spec.default_episodes
    cores = os.cpu_count() or 1
    times = {}
    pool_use = {}
    evaluator = GameEvaluator(spec)
    try:
        for size in SIZES:
            members = population(spec, size)
            new = members[-1]
            jobs = [MatchJob(new, old, derive_seed(0, "payoff", new.id, old.id), episodes) for old in members[:-1]]
            with PoolWatch() as watch:
                run = timed(lambda: evaluator.run(jobs), 1)
            assert all(r.failure is None for r in run.value), [r.failure for r in run.value if r.failure]
            times[size] = run.best
            pool_use[size] = watch.dispatches
    finally:
        evaluator.close()
    per_entry = {size: times[size] / (size - 1) for size in SIZES}
    growth = ratio(times[SIZES[-1]], times[SIZES[0]])
    ideal = (SIZES[-1] - 1) / (SIZES[0] - 1)
    linear = per_entry[SIZES[-1]] <= 2 * per_entry[SIZES[0]]
    table.add("6a", f"add the n-th RRPS policy (n-1 entries x {episodes} episodes), n = {', '.join(map(str, SIZES))}",
              ", ".join(fmt_seconds(times[s]) for s in SIZES),
              "per entry: " + ", ".join(fmt_seconds(per_entry[s]) for s in SIZES),
              f"t({SIZES[-1]})/t({SIZES[0]}) = {growth:.1f} (entries x{ideal:.2f})",
              "O(n): per-entry cost flat (within 2x)", linear,
              note="through the engine's GameEvaluator.run; pool dispatches (workers) per n: "
                   + "; ".join(f"n={s}: {pool_use[s] or 'in-process'}" for s in SIZES))
    uses_all = all(pool_use[s] and max(pool_use[s]) == cores for s in SIZES if s > SIZES[0]) and cores > 1
    table.add("6b", "engine evaluates new entries in a process pool of all cores",
              "yes" if uses_all else "no", "", f"{cores} cores", "pool of all cores", uses_all,
              note="for n >= 10 (n=5 may stay in-process when the pool would not pay)")

    members = population(spec, 20)
    speed_jobs = [RunnerJob(CodePolicy(m.id, m.source), CodePolicy(members[0].id, members[0].source), episodes, 5 + i)
                  for i, m in enumerate(members[1:])]
    one = timed(lambda: evaluate_matchups(spec, speed_jobs, workers=1), 1)
    every = timed(lambda: evaluate_matchups(spec, speed_jobs, workers=cores), 1)
    table.add("6c", f"evaluate_matchups, {len(speed_jobs)} RRPS matches x {episodes} episodes: 1 worker vs {cores}",
              fmt_seconds(every.best), fmt_seconds(one.best), f"{ratio(one.best, every.best):.2f}x speed-up",
              "", None, note=f"a process pool of {cores} lockstep referees vs one lockstep in this process")
