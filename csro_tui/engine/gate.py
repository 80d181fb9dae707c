"""Validation and preview: what a reviewer sees about a candidate.

Validation is static (`validate_source`) and then a sandboxed run against
every population member (against itself when the population is empty), so
code that crashes, times out or plays illegal moves is caught before anyone
reads it.  In sampled games the run is a short match (`smoke_episodes`,
seats swapped).  In exact games (Kuhn, Leduc) it is the exact evaluation
itself: the candidate's sandbox is asked about every information state of
both seats, which covers more than a few episodes would and costs one
sandbox start instead of two per member.

The preview is the candidate's mean payoff against each member - the
validation run's results, or `preview_episodes` more in sampled games -
combined with the current meta-strategy into its expected payoff, plus its
population metrics against the benchmark bots where those are measured.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

from csro_tui.engine.evaluator import CANDIDATE, Bot, Evaluator, MatchJob, derive_seed
from csro_tui.oracles.base import PolicyRecord, Preview
from csro_tui.policies.failures import PolicyFailure
from csro_tui.reviewers import ValidationResult


@dataclass(frozen=True)
class GateSettings:
    seed: int = 0
    smoke_episodes: int = 2
    preview_episodes: int | None = None  # None: reuse the smoke matches
    benchmark: bool = False  # score candidates against the benchmark bots
    benchmark_episodes: int = 2


def candidate_record(source: str, name: str = CANDIDATE) -> PolicyRecord:
    return PolicyRecord(id=CANDIDATE, name=name, source=source, origin="candidate")


def _candidate_failure(failure: PolicyFailure | None) -> PolicyFailure | None:
    """The failure if the candidate caused it (a member's failure is not the candidate's fault)."""
    if failure is None:
        return None
    return failure if failure.policy in ("", CANDIDATE) else None


class Gate:
    def __init__(self, evaluator: Evaluator, settings: GateSettings) -> None:
        self.evaluator = evaluator
        self.settings = settings

    def validate(self, key: str, source: str, population: Sequence[PolicyRecord]) -> ValidationResult:
        """Static checks, then the smoke run; `key` (a proposal id) seeds the matches."""
        issues = self.evaluator.static_issues(source)
        if issues:
            return ValidationResult(valid=False, issues=issues)
        candidate = candidate_record(source)
        opponents = list(population) or [PolicyRecord(id="self", name="itself", source=source, origin="candidate")]
        exact = self.evaluator.exact
        episodes = 0 if exact else self.settings.smoke_episodes
        jobs = [
            MatchJob(candidate, member, derive_seed(self.settings.seed, "smoke", key, member.id), episodes, exact)
            for member in opponents
        ]
        smoke: dict[str, float] = {}
        for member, outcome in zip(opponents, self.evaluator.run(jobs)):
            # Against itself, any failure is the candidate's.
            failure = _candidate_failure(outcome.failure) if population else outcome.failure
            if failure is not None:
                return ValidationResult(valid=False, failure=failure, smoke=smoke, smoke_episodes=episodes)
            if outcome.failure is None and population:
                smoke[member.id] = float(outcome.mean)
        return ValidationResult(valid=True, smoke=smoke, smoke_episodes=episodes)

    def preview(
        self,
        key: str,
        source: str,
        population: Sequence[PolicyRecord],
        weights: dict[str, float],
        validation: ValidationResult,
        *,
        benchmark: bool = True,
        member_id: str | None = None,
    ) -> tuple[Preview, bool, int]:
        """(preview, exact, episodes per member) for a valid candidate.

        `benchmark=False` skips the benchmark scores even where configured.
        `member_id`, the id the candidate will have if it joins, makes the
        benchmark matches the very ones the member's own benchmark will play
        (same seeds), so the evaluator can reuse them instead of playing
        dozens of bot matches twice.
        """
        candidate = candidate_record(source)
        exact = self.evaluator.exact
        episodes = 0 if exact else (self.settings.preview_episodes or validation.smoke_episodes)
        failure: PolicyFailure | None = None
        if exact or self.settings.preview_episodes is None:
            per_member = dict(validation.smoke)
        else:
            jobs = [
                MatchJob(candidate, m, derive_seed(self.settings.seed, "preview", key, m.id), episodes, exact)
                for m in population
            ]
            per_member = {}
            for member, outcome in zip(population, self.evaluator.run(jobs)):
                failure = failure or _candidate_failure(outcome.failure)
                if outcome.failure is None:
                    per_member[member.id] = float(outcome.mean)
        metrics = None
        if benchmark and self.settings.benchmark and failure is None:
            metrics, failure = self._benchmark(key, candidate, member_id)
        return (
            Preview(
                expected_payoff=expected_payoff(per_member, weights),
                per_member=per_member,
                population_metrics=metrics,
                failure=failure,
            ),
            exact,
            episodes,
        )

    def _benchmark(
        self, key: str, candidate: PolicyRecord, member_id: str | None = None
    ) -> tuple[dict[str, float] | None, PolicyFailure | None]:
        from csro_tui.evaluation.metrics import population_metrics

        bots = self.evaluator.bots()
        if not bots:
            return None, None
        episodes = self.settings.benchmark_episodes
        jobs = [
            MatchJob(candidate, Bot(bot), seed, episodes)
            for bot, seed in zip(bots, self._benchmark_seeds(key, bots, member_id))
        ]
        per_bot: dict[str, float] = {}
        for bot, outcome in zip(bots, self.evaluator.run(jobs)):
            if outcome.failure is not None:
                return None, _candidate_failure(outcome.failure) or outcome.failure
            per_bot[bot] = float(outcome.mean)
        scores = population_metrics(per_bot)
        return {"pop_return": scores.pop_return, "pop_expl": scores.pop_expl, "agg_score": scores.agg_score}, None

    def _benchmark_seeds(self, key: str, bots: list[str], member_id: str | None) -> list[int]:
        if member_id is None:
            return [derive_seed(self.settings.seed, "preview-bench", key, bot) for bot in bots]
        # The seeds of engine.jobs.benchmark_jobs for that member.
        return [derive_seed(self.settings.seed, "benchmark", member_id, bot) for bot in bots]

    def check(self, source: str, population: Sequence[PolicyRecord], weights: dict[str, float], key: str) -> Preview:
        """Validate and preview in one call (the oracles' `context.preview`).

        Without benchmark scores: oracles rank candidates by their payoff
        against the meta-strategy, and scoring every candidate they try
        against dozens of bots would cost minutes.
        """
        validation = self.validate(key, source, population)
        if not validation.valid:
            failure = validation.failure or PolicyFailure.from_dict(
                {"category": "invalid", "message": validation.summary()}
            )
            return Preview(expected_payoff=math.nan, per_member={}, failure=failure)
        preview, _, _ = self.preview(key, source, population, weights, validation, benchmark=False)
        return preview


def expected_payoff(per_member: dict[str, float], weights: dict[str, float]) -> float:
    """Payoff against the meta-strategy, renormalised over the members measured.

    With no meta-strategy yet (or no weight on any measured member) the
    members count equally.
    """
    if not per_member:
        return math.nan
    total = sum(weights.get(member, 0.0) for member in per_member)
    if total <= 0:
        return sum(per_member.values()) / len(per_member)
    return sum(weights.get(member, 0.0) * value for member, value in per_member.items()) / total
