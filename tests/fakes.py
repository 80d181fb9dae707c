"""Small stand-ins for the engine's parts, for tests and UI development.

A toy game where a policy's source declares its strength (``STRENGTH =
0.3``): the payoff of a against b is ``strength(a) - strength(b)``
(antisymmetric, as the real meta-game).  Source containing ``CRASH`` fails
its smoke run; source that does not parse, or lacks ``class Policy``, has
static issues.  Nothing here starts a process, so a whole engine run with
these parts takes milliseconds.  Test doubles, so they live with the tests
(`csro_tui/engine/fakes.py` until issue 21) and do not ship in the package.
"""

from __future__ import annotations

import ast
import functools
import re
import threading
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np

from csro_tui.records import Bot, MatchJob, PolicyRecord, Proposal
from csro_tui.oracles.base import OracleContext
from csro_tui.sandbox.failures import FailureCategory, PolicyFailure

_STRENGTH = re.compile(r"STRENGTH\s*=\s*(-?[0-9.]+)")


def toy_policy(strength: float, *, extra: str = "") -> str:
    """Source of a toy policy with the given strength."""
    return (
        f"STRENGTH = {strength}\n{extra}"
        "class Policy:\n"
        "    def __init__(self, player, game):\n"
        "        self.player = player\n\n"
        "    def act(self, obs):\n"
        "        return obs['legal_actions'][0]\n"
    )


def strength(source: str) -> float:
    match = _STRENGTH.search(source)
    return float(match.group(1)) if match else 0.0


@functools.lru_cache(maxsize=256)
def _toy_issues(source: str) -> tuple[dict[str, Any], ...]:
    try:
        tree = ast.parse(source)
    except SyntaxError as error:
        return ({"line": error.lineno or 0, "col": error.offset or 0, "message": f"syntax error: {error.msg}"},)
    if not any(isinstance(node, ast.ClassDef) and node.name == "Policy" for node in tree.body):
        return ({"line": 1, "col": 0, "message": "no class Policy"},)
    return ()


@dataclass
class ToySpec:
    """Enough of a `GameSpec` for the engine: a name and seed policies."""

    name: str = "toy"
    exact: bool = True
    default_episodes: int = 10
    seeds: dict[str, str] = field(default_factory=lambda: {"zero": toy_policy(0.0), "weak": toy_policy(-0.5)})

    def seed_policies(self) -> dict[str, str]:
        return dict(self.seeds)


@dataclass
class ToyResult:
    mean: float
    stderr: float = 0.0
    episodes: int = 0
    seeds: list[int] = field(default_factory=list)
    exact: bool = False
    failure: PolicyFailure | None = None


class ToyEvaluator:
    """Evaluates the toy game; records every job it ran (`jobs`)."""

    def __init__(self, *, exact: bool = True, bots: Sequence[str] = ()) -> None:
        self.exact = exact
        self._bots = list(bots)
        self.jobs: list[MatchJob] = []
        self.exploitability_calls = 0
        self._lock = threading.Lock()

    def static_issues(self, source: str) -> list[dict[str, Any]]:
        return [dict(issue) for issue in _toy_issues(source)]

    def run(self, jobs: Sequence[MatchJob]) -> list[ToyResult]:
        with self._lock:
            self.jobs.extend(jobs)
        return [self._one(job) for job in jobs]

    def _one(self, job: MatchJob) -> ToyResult:
        for side in (job.a, job.b):
            if isinstance(side, PolicyRecord) and "CRASH" in side.source:
                failure = PolicyFailure(FailureCategory.CRASH, "ZeroDivisionError: boom", "Traceback ...", side.id)
                return ToyResult(0.0, failure=failure)
        a = strength(job.a.source)
        b = self.bot_strength(job.b.name) if isinstance(job.b, Bot) else strength(job.b.source)
        if job.exact:
            return ToyResult(a - b, exact=True)
        episodes = max(2, job.episodes)
        return ToyResult(a - b, 0.01, episodes, [job.seed] * episodes)

    def bots(self) -> list[str]:
        return list(self._bots)

    def close(self) -> None:
        """Nothing to end: the toy plays in this process."""

    @staticmethod
    def bot_strength(name: str) -> float:
        return float(len(name)) / 10

    def exploitability(self, members: Sequence[PolicyRecord], weights: Sequence[float]) -> float | None:
        """How much a strength-1 policy gains against the mixture (0 if none is stronger)."""
        self.exploitability_calls += 1
        if not self.exact:
            return None
        mixture = sum(w * strength(m.source) for m, w in zip(members, weights)) / max(sum(weights), 1e-12)
        return max(0.0, 1.0 - mixture)

    def forfeit(self) -> float:
        return -1.0

    def payoff_jobs(self) -> list[tuple[str, str]]:
        """(row, col) of the payoff-entry jobs run so far (code against code, not smoke)."""
        return [
            (job.a.id, job.b.id)
            for job in self.jobs
            if isinstance(job.b, PolicyRecord) and job.a.id != "candidate"
        ]


@dataclass
class ToySolution:
    row: np.ndarray
    col: np.ndarray
    value: float
    nash_conv: float


def best_member_solve(name: str, matrix: np.ndarray) -> ToySolution:
    """A meta-solver for the toy game: all weight on the row with the best worst case."""
    worst = matrix.min(axis=1)
    row = np.zeros(len(matrix))
    row[int(np.argmax(worst))] = 1.0
    value = float(row @ matrix @ row)
    nash_conv = float((matrix @ row).max() - value) * 2 if len(matrix) else 0.0
    return ToySolution(row, row.copy(), value, max(0.0, nash_conv))


@dataclass
class ScriptedOracle:
    """Proposes from a function of (iteration, attempt); records every context it got."""

    make: Callable[[int, int, OracleContext], Proposal | BaseException]
    name: str = "scripted"
    contexts: list[OracleContext] = field(default_factory=list)

    def propose(self, context: OracleContext) -> Proposal:
        self.contexts.append(context)
        attempt = sum(1 for c in self.contexts if c.iteration == context.iteration)
        result = self.make(context.iteration, attempt, context)
        if isinstance(result, BaseException):
            raise result
        return result


def climbing_oracle(step: float = 0.1) -> ScriptedOracle:
    """Each iteration proposes a policy a bit stronger than the strongest member."""

    def make(iteration: int, attempt: int, context: OracleContext) -> Proposal:
        best = max((strength(m.source) for m in context.population), default=0.0)
        best_member = max(context.population, key=lambda m: strength(m.source), default=None)
        return Proposal(
            source=toy_policy(round(best + step, 6)),
            oracle="scripted",
            name=f"climb-{iteration}",
            parent=best_member.id if best_member else None,
            rationale=f"stronger than {best:.2f}",
        )

    return ScriptedOracle(make)


def toy_engine(oracle=None, reviewer=None, evaluator=None, **config):
    """An engine over the toy game (seeds "zero" and "weak"), auto-reviewed unless told otherwise."""
    from csro_tui.config import RunConfig
    from csro_tui.engine import Engine
    from csro_tui.reviewers import AutoReviewer

    settings = {"game": "toy", "oracle": "scripted", "iterations": 3, **config}
    return Engine(
        config=RunConfig(**settings),
        spec=None,
        oracle=oracle or climbing_oracle(),
        reviewer=reviewer or AutoReviewer(),
        evaluator=evaluator or ToyEvaluator(),
        meta_solve=best_member_solve,
        seed_sources={"zero": toy_policy(0.0), "weak": toy_policy(-0.5)},
        versions={"csro_tui": "test"},
    )

