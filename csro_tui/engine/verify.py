"""Re-run a recorded session's evaluations and meta-solves; do they reproduce?

Every payoff entry and benchmark score was evaluated from a seed derived
from the session seed and the matchup (`csro_tui.engine.jobs`), so running
the same job again must give the same numbers: exactly for exact games, and
for sampled games too as long as the policies draw their randomness only
from the seed they are given.  Meta-solves are re-run on the matrix as it
was when they were recorded; exploitability is recomputed for exact games.
Two populations: entries are re-run seat-fixed (the row member in seat 0),
the solver gets the seat-0 x seat-1 matrix, both mixtures are compared, and
exploitability is the joint profile's (members carry their seats).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from csro_tui.engine.evaluator import Evaluator
from csro_tui.engine.jobs import benchmark_jobs, payoff_job
from csro_tui.engine.loop import joint_strategy
from csro_tui.engine.setup import recorded_config
from csro_tui.sessions.events import BenchmarkEvaluated, MetaSolved, MetricsComputed, PayoffsEvaluated
from csro_tui.sessions.state import SessionState

TOLERANCE = 1e-9  # evaluations must agree to this (absolute)
SOLVER_TOLERANCE = 1e-6  # LP solutions may differ in the last digits


@dataclass(frozen=True)
class Check:
    what: str  # e.g. "payoff p3 vs p1"
    recorded: float
    recomputed: float | None
    ok: bool
    note: str = ""


@dataclass
class Verification:
    checks: list[Check] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(check.ok for check in self.checks)

    @property
    def failures(self) -> list[Check]:
        return [check for check in self.checks if not check.ok]


def _close(a: float | None, b: float | None, tolerance: float) -> bool:
    if a is None or b is None:
        return a is None and b is None
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return abs(a - b) <= tolerance


def verify(
    state: SessionState,
    *,
    spec: Any,
    evaluator: Evaluator,
    meta_solve: Callable[[str, np.ndarray], Any],
    progress: Callable[[str], None] | None = None,
) -> Verification:
    """Checks of every recorded evaluation and meta-solve in `state` (up to its step)."""
    config = recorded_config(state)
    members = {m.id: m for m in state.population}
    result = Verification()
    say = progress or (lambda message: None)

    for event in state.events:
        if isinstance(event, PayoffsEvaluated):
            jobs = [
                payoff_job(config, spec, members[e.row], members[e.col], exact=e.exact) for e in event.entries
            ]
            say(f"re-evaluating {len(jobs)} payoff entries (event {event.seq})")
            for entry, outcome in zip(event.entries, evaluator.run(jobs)):
                failed = outcome.failure is not None
                same_failure = failed == (entry.failure is not None)
                recomputed = entry.mean if failed and same_failure else float(outcome.mean)
                result.checks.append(
                    Check(
                        what=f"payoff {entry.row} vs {entry.col}",
                        recorded=entry.mean,
                        recomputed=recomputed,
                        ok=same_failure and _close(entry.mean, recomputed, TOLERANCE),
                        note="" if same_failure else f"failure now {outcome.failure!s}, then {entry.failure!s}",
                    )
                )
        elif isinstance(event, BenchmarkEvaluated) and event.per_bot:
            bots = list(event.per_bot)
            say(f"re-evaluating {event.policy_id} against {len(bots)} benchmark bots")
            outcomes = evaluator.run(benchmark_jobs(config, members[event.policy_id], bots))
            for bot, outcome in zip(bots, outcomes):
                recomputed = None if outcome.failure is not None else float(outcome.mean)
                result.checks.append(
                    Check(
                        what=f"benchmark {event.policy_id} vs {bot}",
                        recorded=event.per_bot[bot],
                        recomputed=recomputed,
                        ok=_close(event.per_bot[bot], recomputed, TOLERANCE),
                    )
                )
        elif isinstance(event, MetaSolved):
            say(f"re-solving the meta-game of {len(event.population)} policies (event {event.seq})")
            before = state.at(event.seq)
            matrix = before.meta_matrix(event.population)  # two populations: its seat-0 x seat-1 block
            two_populations = before.metagame.populations == 2
            solution = meta_solve(event.solver, matrix, **({"populations": 2} if two_populations else {}))
            strategy = np.asarray(joint_strategy(solution, two_populations=two_populations))
            gap = float(np.max(np.abs(strategy - np.asarray(event.strategy)))) if len(strategy) else 0.0
            result.checks.append(
                Check(
                    what=f"meta-strategy at event {event.seq} ({event.solver})",
                    recorded=0.0,
                    recomputed=gap,
                    ok=gap <= SOLVER_TOLERANCE and _close(event.nash_conv, float(solution.nash_conv), SOLVER_TOLERANCE),
                    note=f"largest weight difference {gap:.2e}",
                )
            )
        elif isinstance(event, MetricsComputed) and event.exploitability is not None:
            say(f"recomputing the exploitability of iteration {event.iteration}")
            weighted = [(members[pid], w) for pid, w in event.meta_strategy.items() if w > 0]
            value = evaluator.exploitability([m for m, _ in weighted], [w for _, w in weighted])
            result.checks.append(
                Check(
                    what=f"exploitability, iteration {event.iteration}",
                    recorded=event.exploitability,
                    recomputed=value,
                    ok=_close(event.exploitability, value, SOLVER_TOLERANCE),
                )
            )
    return result
