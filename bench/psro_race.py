"""Section 9: PSRO raced to a target exploitability, ours against psro_v2 with exact entries.

Both sides start from the uniform random policy, add an exact best
response to the current meta-strategy each iteration and solve the
meta-game for Nash:

- ours: the engine (`best-response` oracle, `--review auto`, payoff entries
  exact through the sandboxed tabulariser, Nash LP), its exploitability
  computed by the engine itself every iteration (inside our clock);
- psro_v2: OpenSpiel's `PSROSolver` with `BestResponseOracle` (cpp
  backend), Nash meta-solver, `probabilistic` training strategy selector,
  and every payoff entry computed exactly by
  `expected_game_score.policy_value` instead of sampled.  Its
  exploitability (policy aggregator + OpenSpiel exploitability) is measured
  after each iteration with its clock paused: measuring is not part of
  psro_v2's loop.

Each side runs until its meta-strategy's exploitability is at most the last
target, or until its time (or iteration) budget is spent.  Reported per
game: iterations and wall time to each target, seconds per iteration over
the iterations both sides ran (psro_v2's entries grow as n^2 per
iteration, ours as n), and the ratios.

Two populations (issue 23): ours also runs with `populations=2` (one
population per seat, a best response per seat each iteration, as psro_v2),
and its rows compare it with the same psro_v2 run: iterations and wall time
to each target.  psro_v2 keeps two populations in both comparisons (it is
`symmetric_game=False`); ours with one population is the CSRO default.
psro_v2 answers the marginal meta-strategies (`sample_from_marginals=True`):
with a Nash meta-solver the joint profile is the product of the marginals,
so each player's best response is the same (same iterations, checked on
Kuhn and 12 Leduc iterations), while aggregating the n x n joint profiles
of the default costs O(n^2) tree walks per iteration (at 12 Leduc
iterations: 19.1 s against 8.5 s; the runs measured before 2026-12-03
afternoon used the default).  Leduc's psro_v2 run takes many minutes: it is
in the full bench only, not in `--quick`.

Each of our runs points the tabularisation cache
(`csro_tui.evaluation.table_cache`) at a fresh empty directory, so nothing
carries over from an earlier run or the other population setting: the
figure is a first session's.
"""

from __future__ import annotations

import contextlib
import io
import math
import os
import statistics
import tempfile
import time
from dataclasses import dataclass, field

import numpy as np

from bench.common import Table, fmt_seconds, ratio

TARGETS = (0.1, 0.01)


@dataclass
class Race:
    """One side's run: (iteration, seconds since start, exploitability) after each iteration."""

    points: list[tuple[int, float, float]] = field(default_factory=list)
    stopped: str = ""

    def reached(self, target: float) -> tuple[int, float] | None:
        for iteration, seconds, value in self.points:
            if value <= target:
                return iteration, seconds
        return None

    def per_iteration(self, count: int) -> float:
        """Mean seconds per iteration over the first `count` iterations."""
        if count <= 0 or not self.points:
            return math.nan
        count = min(count, len(self.points))
        return self.points[count - 1][1] / count

    def best(self) -> float:
        return min((value for _, _, value in self.points), default=math.nan)


def race_ours(game: str, max_iterations: int, max_seconds: float, populations: int = 1) -> Race:
    from csro_tui.config import RunConfig
    from csro_tui.engine.setup import new_engine
    from csro_tui.sessions.events import MetricsComputed

    # Imported before the clock, as psro_v2's modules are (the engine imports them lazily).
    import csro_tui.evaluation.exact  # noqa: F401
    import csro_tui.evaluation.table_cache  # noqa: F401
    import csro_tui.sandbox.host_pool  # noqa: F401

    race = Race()
    config = RunConfig(game=game, oracle="best-response", iterations=max_iterations, review="auto", seed=0,
                       seed_policies=["uniform"], populations=populations)
    engine = new_engine(config, store=None)
    started = time.perf_counter()

    def on_event(event) -> None:
        if not isinstance(event, MetricsComputed) or event.iteration < 1 or event.exploitability is None:
            return
        elapsed = time.perf_counter() - started
        race.points.append((event.iteration, elapsed, float(event.exploitability)))
        if event.exploitability <= TARGETS[-1]:
            race.stopped = "target reached"
            engine.request_stop()
        elif elapsed > max_seconds:
            race.stopped = f"time budget ({max_seconds:.0f} s) spent"
            engine.request_stop()

    engine.subscribe(on_event)
    outcome = engine.run()
    if not race.stopped:
        race.stopped = outcome.message or outcome.reason
    return race


def race_psro_v2(game_name: str, max_iterations: int, max_seconds: float) -> Race:
    import pyspiel
    from open_spiel.python import policy as os_policy
    from open_spiel.python.algorithms import exploitability, expected_game_score, policy_aggregator
    from open_spiel.python.algorithms.psro_v2 import best_response_oracle, psro_v2

    class ExactEntriesPSRO(psro_v2.PSROSolver):
        """psro_v2 with every payoff entry computed exactly, not sampled."""

        def sample_episodes(self, policies, num_episodes):
            return np.asarray(expected_game_score.policy_value(self._game.new_initial_state(), policies))

    race = Race()
    game = pyspiel.load_game(game_name)
    np.random.seed(0)
    spent = 0.0  # psro_v2's own time: set-up and iterations, not our measuring
    started = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()):  # psro_v2 prints as it goes
        oracle = best_response_oracle.BestResponseOracle(game=game, best_response_backend="cpp")
        solver = ExactEntriesPSRO(
            game, oracle, sims_per_entry=1,
            initial_policies=[os_policy.UniformRandomPolicy(game)] * 2,
            meta_strategy_method="nash", training_strategy_selector="probabilistic",
            symmetric_game=False, sample_from_marginals=True,
        )
        aggregator = policy_aggregator.PolicyAggregator(game)
        spent += time.perf_counter() - started
        for iteration in range(1, max_iterations + 1):
            begun = time.perf_counter()
            solver.iteration()
            spent += time.perf_counter() - begun
            mixture = aggregator.aggregate(range(2), solver.get_policies(), solver.get_meta_strategies())
            value = float(exploitability.exploitability(game, mixture))
            race.points.append((iteration, spent, value))
            if value <= TARGETS[-1]:
                race.stopped = "target reached"
                break
            if spent > max_seconds:
                race.stopped = f"time budget ({max_seconds:.0f} s) spent"
                break
        else:
            race.stopped = f"iteration budget ({max_iterations}) spent"
    return race


def _reached_text(race: Race, target: float) -> str:
    hit = race.reached(target)
    if hit is None:
        return f"not reached ({len(race.points)} it, best {race.best():.4f})"
    return f"{hit[0]} it, {fmt_seconds(hit[1])}"


def psro_race(table: Table, quick: bool) -> None:
    budgets = {  # game: (max iterations, max seconds per side)
        "kuhn_poker": (60, 120.0),
        "leduc_poker": (5000, 300.0 if quick else 900.0),
    }
    for game, (max_iterations, max_seconds) in budgets.items():
        with fresh_table_cache():
            ours = race_ours(game, max_iterations, max_seconds)
            if game == "kuhn_poker":
                # A second session of the same run: every table is on disk now.
                _clear_memory_caches()
                again = race_ours(game, max_iterations, max_seconds)
        with fresh_table_cache():
            two = race_ours(game, max_iterations, max_seconds, populations=2)
        theirs = None if quick and game == "leduc_poker" else race_psro_v2(game, max_iterations, max_seconds)
        _report(table, game, ours, theirs)
        _report_two_populations(table, game, ours, two, theirs)
        _report_fidelity(table, game, two, theirs)
        if game == "kuhn_poker":
            _report_second_session(table, again, theirs)
            _report_host_costs(table, game)


@contextlib.contextmanager
def fresh_table_cache():
    """Our table cache in a new empty directory (and none in memory) for the block."""
    from csro_tui.evaluation import table_cache

    previous = os.environ.get(table_cache.CACHE_DIR_ENV_VAR)
    _clear_memory_caches()
    with tempfile.TemporaryDirectory(prefix="csro-bench-tables-") as cache_dir:
        os.environ[table_cache.CACHE_DIR_ENV_VAR] = cache_dir
        try:
            yield cache_dir
        finally:
            if previous is None:
                os.environ.pop(table_cache.CACHE_DIR_ENV_VAR, None)
            else:
                os.environ[table_cache.CACHE_DIR_ENV_VAR] = previous


NOT_RUN_QUICK = "not run in --quick"


def _short(game: str) -> str:
    return "Kuhn" if game == "kuhn_poker" else "Leduc"


def _trace(race: Race | None, count: int = 40) -> str:
    if race is None:
        return NOT_RUN_QUICK
    return f"{race.stopped}, " + " ".join(f"{v:.3g}" for _, _, v in race.points[:count])


def _report(table: Table, game: str, ours: Race, theirs: Race | None) -> None:
    short = _short(game)
    trace = f"ours: exploitability per iteration {_trace(ours)}; psro_v2: {_trace(theirs)}"
    if theirs is None:
        for target in TARGETS:
            table.add("9", f"{short} PSRO to exploitability {target:g}: iterations, wall time",
                      _reached_text(ours, target), NOT_RUN_QUICK, "", "", None,
                      note=trace if target == TARGETS[0] else "")
        return
    for target in TARGETS:
        mine, other = ours.reached(target), theirs.reached(target)
        holds = None
        wanted = ""
        if game == "leduc_poker" and target == 0.1:
            wanted = "time <= 0.5x psro_v2's"
            # Not reached by psro_v2: its time to the target is at least what it spent.
            theirs_at_least = other[1] if other is not None else (theirs.points[-1][1] if theirs.points else 0.0)
            holds = mine is not None and mine[1] <= 0.5 * theirs_at_least
        quotient = f"{ratio(other[1], mine[1]):.2f}x faster" if mine and other else ""
        if mine and not other and theirs.points:
            quotient = f">= {ratio(theirs.points[-1][1], mine[1]):.2f}x faster"
        table.add("9", f"{short} PSRO to exploitability {target:g}: iterations, wall time",
                  _reached_text(ours, target), _reached_text(theirs, target), quotient, wanted, holds,
                  note=trace if target == TARGETS[0] else "")
    both = min(len(ours.points), len(theirs.points))
    if both < 2:
        return
    steps_ours = _steps(ours, both)
    steps_theirs = _steps(theirs, both)
    # An iteration's cost in the steady state: the median over iterations
    # 2..k (the first carries each side's set-up), k = as many as both ran.
    mine, other = statistics.median(steps_ours[1:]), statistics.median(steps_theirs[1:])
    holds = None
    wanted = ""
    if game == "kuhn_poker":
        wanted = "<= psro_v2's"
        holds = mine <= other
    table.add("9", f"{short} PSRO: seconds per iteration (median of iterations 2-{both})",
              fmt_seconds(mine), fmt_seconds(other), f"{ratio(other, mine):.2f}x", wanted, holds,
              note=(f"means over iterations 1-{both}, set-up included: {fmt_seconds(ours.per_iteration(both))} vs "
                    f"{fmt_seconds(theirs.per_iteration(both))}; first iteration {fmt_seconds(steps_ours[0])} vs "
                    f"{fmt_seconds(steps_theirs[0])} (ours: game tables, the seed's tabularisation, the first "
                    f"warm hosts; psro_v2: its solver and best-response oracle)"))


def _report_two_populations(table: Table, game: str, one: Race, two: Race, theirs: Race | None) -> None:
    """Ours with two populations against psro_v2 (the same run as `_report`'s),
    with one population's figures beside it in the note."""
    short = _short(game)
    for target in TARGETS:
        mine = two.reached(target)
        other = theirs.reached(target) if theirs is not None else None
        wanted, holds, quotient = "", None, ""
        if mine and other:
            quotient = f"{ratio(other[1], mine[1]):.2f}x faster, {other[0] - mine[0]:+d} it"
        elif mine and theirs is not None and theirs.points:
            quotient = f">= {ratio(theirs.points[-1][1], mine[1]):.2f}x faster"
        if game == "leduc_poker" and target == 0.1 and theirs is not None:
            wanted = "it <= psro_v2's, time < psro_v2's"
            if mine is None:
                holds = False
            elif other is None:  # psro_v2 did not reach it: it would need more iterations and more time
                holds = mine[0] <= len(theirs.points) and mine[1] < (theirs.points[-1][1] if theirs.points else 0.0)
            else:
                holds = mine[0] <= other[0] and mine[1] < other[1]
        note = f"ours, one population: {_reached_text(one, target)}"
        if target == TARGETS[0]:
            note += f"; ours, two populations, exploitability per iteration: {_trace(two)}"
        table.add("9", f"{short} PSRO, two populations, to exploitability {target:g}: iterations, wall time",
                  _reached_text(two, target), _reached_text(theirs, target) if theirs is not None else NOT_RUN_QUICK,
                  quotient, wanted, holds, note=note)
    if theirs is None:
        return
    both = min(len(two.points), len(theirs.points))
    if both < 2:
        return
    mine, other = statistics.median(_steps(two, both)[1:]), statistics.median(_steps(theirs, both)[1:])
    table.add("9", f"{short} PSRO, two populations: seconds per iteration (median of iterations 2-{both})",
              fmt_seconds(mine), fmt_seconds(other), f"{ratio(other, mine):.2f}x", "", None,
              note=(f"ours, one population, over its first {both}: "
                    f"{fmt_seconds(statistics.median(_steps(one, min(both, len(one.points)))[1:]))}"
                    if len(one.points) >= 2 else ""))


# Iterations of psro_v2's loop run with our LP and our best-response choices
# for the fidelity row (Leduc: ~20-40 s).
FIDELITY_ITERATIONS = 8


def _report_fidelity(table: Table, game: str, two: Race, theirs: Race | None) -> None:
    """Ours with two populations against psro_v2 iteration by iteration: where the
    exploitability first differs from psro_v2's, and whether it is psro_v2's loop
    once the meta-solver (our LP) and the best-response choices (ours) are the same
    (`scripts/psro_v2_reference.py`'s "exact_lp_our_best_response_gated" run)."""
    reference = _reference_script()
    rows, _ = reference.run("exact_lp_our_best_response_gated", FIDELITY_ITERATIONS, game)
    same_loop = [row["exploitability"] for row in rows[1:]]
    mine = [value for _, _, value in two.points[: len(same_loop)]]
    count = min(len(mine), len(same_loop))
    gap = max((abs(a - b) for a, b in zip(mine[:count], same_loop[:count])), default=math.nan)
    if theirs is None:
        against = NOT_RUN_QUICK
    else:
        first = next((iteration for (iteration, _, a), (_, _, b) in zip(two.points, theirs.points)
                      if abs(a - b) > 1e-6), None)  # ECOS's answers are ~1e-8 accurate
        both = min(len(two.points), len(theirs.points))
        against = (f"the same up to iteration {first - 1}, apart from {first} on" if first is not None
                   else f"the same in all {both} iterations both ran")
    table.add("9", f"{_short(game)} PSRO, two populations, exploitability per iteration: ours against psro_v2's "
                   f"loop with our LP and best-response choices (iterations 1-{count}); baseline column: against "
                   f"psro_v2 as it is",
              f"largest difference {gap:.1e}", against, "", "", None,
              note=("where psro_v2 as it is differs from ours, it is by its meta-solver (ECOS, interior point: another "
                    "equilibrium where the meta-game has several) and its best-response ties (OpenSpiel's "
                    "TabularBestResponse: the lowest action id strictly better, action 0 where the opponent never "
                    "goes; ours: the lowest id within 1e-12, the best response to a uniform opponent there); with "
                    "both made ours its loop gives ours: "
                    + " ".join(f"{v:.4g}" for v in same_loop[:count])))


def _reference_script():
    """`scripts/psro_v2_reference.py` as a module (the variants of psro_v2 it runs)."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "scripts" / "psro_v2_reference.py"
    spec = importlib.util.spec_from_file_location("psro_v2_reference", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _steps(race: Race, count: int) -> list[float]:
    """Seconds of each of the first `count` iterations."""
    times = [seconds for _, seconds, _ in race.points[:count]]
    return [later - earlier for earlier, later in zip([0.0] + times[:-1], times)]


def _clear_memory_caches() -> None:
    """Forget the code policies' tables this process holds (the game's own
    structures, the imports and the sandbox probe stay)."""
    from csro_tui.evaluation import exact

    exact._policy_cache.clear()  # noqa: SLF001


def _report_second_session(table: Table, again: Race, theirs: Race) -> None:
    mine, other = again.reached(TARGETS[-1]), theirs.reached(TARGETS[-1])
    quotient = f"{ratio(other[1], mine[1]):.2f}x faster" if mine and other else ""
    table.add("9", f"Kuhn PSRO to exploitability {TARGETS[-1]:g}, a second session (tables on disk)",
              _reached_text(again, TARGETS[-1]), _reached_text(theirs, TARGETS[-1]), quotient, "", None,
              note="the same run again in this process, the in-memory table cache cleared: every policy's "
                   "table comes from the disk cache (table_cache.py), no sandbox is asked; the imports, the "
                   "sandbox probe and the game's own structures are not paid again, as they would be in a new "
                   "process (~0.1-0.2 s)")


def _report_host_costs(table: Table, game: str, count: int = 8) -> None:
    """What one new policy's sandbox host costs, one host at a time: started
    on demand (spawn, the interpreter, `prepare`, then the module), and
    loaded into a host started beforehand and left to get ready (a warm
    pool's case).  The difference is what a pool hides when it has a host
    ready; each Kuhn iteration needs one new host."""
    from csro_tui.games.registry import get_game
    from csro_tui.sandbox.isolation import isolation_mode
    from csro_tui.sandbox.sandbox import PolicyHost, start_host_process

    spec = get_game(game)
    source, game_info = spec.seed_policies()["uniform"], spec.game_info()
    mode = isolation_mode()
    cold, warm = [], []
    for _ in range(count):
        host = PolicyHost(source, game_info, name="bench-cold")
        begun = time.perf_counter()
        host.start()
        cold.append(time.perf_counter() - begun)
        host.close()
        started = start_host_process(mode)
        time.sleep(0.3)  # ready by then (~0.05 s here)
        host = PolicyHost(source, game_info, name="bench-warm")
        host.adopt(started)
        begun = time.perf_counter()
        host.start()
        warm.append(time.perf_counter() - begun)
        host.close()
    table.add("9", f"Kuhn: one policy's sandbox host ({mode}), started on demand / loaded into a started host "
                   f"(median of {count})",
              f"{fmt_seconds(statistics.median(cold))} / {fmt_seconds(statistics.median(warm))}", "-", "", "", None,
              note="started on demand: spawn, interpreter, the host's modules, its kernel layers (prepare), then "
                   "the module (load); a started host has done all but the load; psro_v2 runs its policies in "
                   "its own process")
