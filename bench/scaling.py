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

from bench.common import Table, fmt_seconds, interleaved, ratio, timed

SIZES = (5, 10, 20, 40)
SEED_ORDER = ("frequency_counter", "markov_predictor", "beat_last", "cycle", "uniform_random", "constant_rock")


def population(spec, size: int):
    """`size` distinct RRPS members: the seed policies, each copy with its own comment line."""
    from csro_tui.records import PolicyRecord

    seeds = spec.seed_policies()
    members = []
    for k in range(size):
        name = SEED_ORDER[k % len(SEED_ORDER)]
        members.append(PolicyRecord(id=f"p{k}", name=f"{name}#{k}", source=seeds[name] + f"\n# member {k}\n",
                                    origin="seed"))
    return members


class PoolWatch:
    """Records every batch the runner hands to a process pool of referees:
    (worker processes, chunks)."""

    def __init__(self) -> None:
        from csro_tui.evaluation.runner import RefereePool

        self.cls = RefereePool
        self.original = RefereePool.run
        self.dispatches: list[tuple[int, int]] = []

    def __enter__(self):
        original, dispatches = self.original, self.dispatches

        def watched(pool, jobs, chunks, progress, limits):
            dispatches.append((pool.processes, len(chunks)))
            return original(pool, jobs, chunks, progress, limits)

        self.cls.run = watched
        return self

    def __exit__(self, *exc) -> None:
        self.cls.run = self.original


def scaling(table: Table, quick: bool) -> None:
    from csro_tui.engine.evaluator import GameEvaluator, derive_seed
    from csro_tui.records import MatchJob
    from csro_tui.evaluation.participants import CodePolicy
    from csro_tui.evaluation.runner import MatchJob as RunnerJob, evaluate_matchups
    from csro_tui.games.registry import get_game

    spec = get_game("rrps")
    # The engine's default is 20 episodes per entry; --quick plays 6, which
    # keeps even n=5 (4 entries, 24k moves) above the pool threshold.
    episodes = 6 if quick else spec.default_episodes
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
              note="through the engine's GameEvaluator.run (its referee pool starts on first use, "
                   "inside the n=5 figure); pool dispatches (workers, chunks) per n: "
                   + "; ".join(f"n={s}: {pool_use[s] or 'in-process'}" for s in SIZES))
    uses_all = cores > 1 and all(pool_use[s] and min(p for p, _ in pool_use[s]) == cores for s in SIZES)
    table.add("6b", "engine evaluates new entries in a process pool of all cores",
              "yes" if uses_all else "no", "", f"{cores} cores", "pool of all cores", uses_all,
              note="every batch of new entries above went to the pool with one worker per core" if uses_all
              else "some batches stayed in this process or used fewer workers (see 6a's note)")

    # The pool's speed-up on one batch: the engine's case, a pool kept warm
    # between batches (its start-up is reported separately), in turns with
    # one lockstep in this process.
    from csro_tui.evaluation.runner import RefereePool

    members = population(spec, 20)
    speed_jobs = [RunnerJob(CodePolicy(m.id, m.source), CodePolicy(members[0].id, members[0].source), episodes, 5 + i)
                  for i, m in enumerate(members[1:])]
    pool = RefereePool(spec, cores)
    try:
        start = timed(lambda: pool.run(speed_jobs[:2], [[0], [1]], None, None), 1)  # cold: workers start
        timings = interleaved({
            "one": lambda: evaluate_matchups(spec, speed_jobs, workers=1),
            "every": lambda: evaluate_matchups(spec, speed_jobs, pool=pool),
        }, 2 if quick else 3)
    finally:
        pool.close()
    one, every = timings["one"], timings["every"]
    table.add("6c", f"evaluate_matchups, {len(speed_jobs)} RRPS matches x {episodes} episodes: 1 worker vs {cores}",
              fmt_seconds(every.best), fmt_seconds(one.best), f"{ratio(one.best, every.best):.2f}x speed-up",
              "", None, note=f"a warm pool of {cores} lockstep referees vs one lockstep in this process (in turns); "
                             f"starting the pool's workers took {fmt_seconds(start.best)} once")
