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
combined with the current meta-strategy into its expected payoff (with its
standard error where payoffs are sampled), plus its population metrics
against the benchmark bots where those are measured.

The preview also says whether the candidate repeats a member or an earlier
rejected proposal (`Preview.duplicate_of`, `duplicate_reason`; see
`engine/duplicates.py`), and `Preview.shortfall(threshold)` says why it is
not an improvement on the meta-strategy: the auto reviewer's rule, shown to
a person in the TUI and fed back to the oracles.  `known_policies(state)`
lists what a candidate is compared with; `progress_note(state, iteration)`
says when a run has stopped improving.

`ReviewLoop` is the gate's other half, the review loop the engine runs for each
proposal: validate, preview, ask the reviewer (with the request
`sessions.review.review_request` builds from the folded state, as replay does),
record the decision, and follow a reviewer's edits until a verdict (`Gated`).
"""

from __future__ import annotations

import dataclasses
import functools
import math
import threading
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING, Callable, Sequence

from csro_tui.engine.duplicates import KnownPolicy, find_duplicate
from csro_tui.engine.evaluator import CANDIDATE, Evaluator, derive_seed
from csro_tui.errors import EvaluationInterrupted
from csro_tui.evaluation.population_metrics import population_metrics
from csro_tui.records import Bot, Decision, MatchJob, PolicyRecord, Preview, Proposal, ValidationResult
from csro_tui.sandbox.clock import describe_printed, describe_timing, timing_of
from csro_tui.sandbox.failures import PolicyFailure
from csro_tui.sessions.events import Event, ProposalCreated, ProposalDecided, ProposalPreviewed, ProposalValidated
from csro_tui.sessions.review import review_request
from csro_tui.sessions.state import SessionState, headline_metric

if TYPE_CHECKING:
    from csro_tui.config import RunConfig
    from csro_tui.reviewers import Reviewer

# Rejected proposals a candidate is compared with, newest first (each one may
# cost a tabularisation in exact games after a resume).
MAX_REJECTED_COMPARED = 20
# Episodes per member of a sampled preview unless `preview_episodes` says
# otherwise: five seat-swapped pairs, so the preview measures its own noise
# (one pair has no standard error, and the gate accepted a uniform-random
# RRPS policy on one lucky pair: +7.0 "± 0" where 20 episodes gave -0.5).
DEFAULT_SAMPLED_PREVIEW_EPISODES = 10


@dataclass(frozen=True)
class GateSettings:
    seed: int = 0
    smoke_episodes: int = 2
    # None: DEFAULT_SAMPLED_PREVIEW_EPISODES, or the smoke matches if they have at least as many
    preview_episodes: int | None = None
    benchmark: bool = False  # score candidates against the benchmark bots
    benchmark_episodes: int = 2


def candidate_record(source: str, name: str = CANDIDATE, seat: int | None = None) -> PolicyRecord:
    return PolicyRecord(id=CANDIDATE, name=name, source=source, origin="candidate", seat=seat)


def _candidate_failure(failure: PolicyFailure | None) -> PolicyFailure | None:
    """The failure if the candidate caused it (a member's failure is not the candidate's fault)."""
    if failure is None:
        return None
    return failure if failure.policy in ("", CANDIDATE) else None


class Gate:
    def __init__(self, evaluator: Evaluator, settings: GateSettings) -> None:
        self.evaluator = evaluator
        self.settings = settings

    def validate(
        self, key: str, source: str, population: Sequence[PolicyRecord], seat: int | None = None
    ) -> ValidationResult:
        """Static checks, then the smoke run; `key` (a proposal id) seeds the matches.

        `seat` (two populations): the candidate plays only that seat, against
        `population`, the other seat's members.
        """
        issues = self.evaluator.static_issues(source)
        if issues:
            return ValidationResult(valid=False, issues=issues)
        candidate = candidate_record(source)
        opponents = list(population) or [PolicyRecord(id="self", name="itself", source=source, origin="candidate")]
        exact = self.evaluator.exact
        episodes = 0 if exact else self.settings.smoke_episodes
        jobs = [
            MatchJob(candidate, member, derive_seed(self.settings.seed, "smoke", key, member.id), episodes, exact,
                     seat=seat)
            for member in opponents
        ]
        smoke: dict[str, float] = {}
        smoke_stderr: dict[str, float] = {}
        outcomes = self.evaluator.run(jobs)
        timing, printed = _candidate_timing(outcomes)
        for member, outcome in zip(opponents, outcomes):
            # Against itself, any failure is the candidate's.
            failure = _candidate_failure(outcome.failure) if population else outcome.failure
            if failure is not None:
                return ValidationResult(valid=False, failure=failure, smoke=smoke, smoke_episodes=episodes, timing=timing,
                                        printed=printed)
            if outcome.failure is None and population:
                smoke[member.id] = float(outcome.mean)
                smoke_stderr[member.id] = sampled_stderr(outcome)
        return ValidationResult(valid=True, smoke=smoke, smoke_episodes=episodes, smoke_stderr=smoke_stderr,
                                timing=timing, printed=printed)

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
        known: Sequence[KnownPolicy] = (),
        seat: int | None = None,
        on_estimate: "Callable[[PreviewEstimate], None] | None" = None,
    ) -> tuple[Preview, bool, int]:
        """(preview, exact, episodes per member) for a valid candidate.

        `benchmark=False` skips the benchmark scores even where configured.
        `member_id`, the id the candidate will have if it joins, makes the
        benchmark matches the very ones the member's own benchmark will play
        (same seeds), so the evaluator can reuse them instead of playing
        dozens of bot matches twice.  `known` (see `known_policies`) is what
        the candidate must not repeat.  `seat` (two populations): the candidate
        plays only that seat, against `population`, the other seat's members.

        `on_estimate` (an observer, called on this thread): the figures so far
        after each round of matches, then the final ones (`PreviewEstimate`).
        With it a sampled preview plays its members in two rounds (the
        meta-strategy's first), then the bots in one batch as before; every match is
        the same job with the same seed either way, so the final preview does
        not depend on whether anyone watched.
        """
        candidate = candidate_record(source, seat=seat)
        exact = self.evaluator.exact
        episodes = 0 if exact else self.preview_episodes(validation.smoke_episodes)
        progress = _PreviewProgress(on_estimate, weights, exact, episodes, seat, len(population),
                                    len(self.evaluator.bots()) if benchmark and self.settings.benchmark else 0)
        failure: PolicyFailure | None = None
        if exact or (self.settings.preview_episodes is None and episodes == validation.smoke_episodes):
            progress.per_member = dict(validation.smoke)
            progress.stderr = {m: validation.smoke_stderr.get(m, 0.0) for m in progress.per_member}
            progress.members_done = len(population)
            progress.report()
        else:
            progress.report_smoke(validation)  # figures at once, before any preview match ends
            jobs = [
                MatchJob(candidate, m, derive_seed(self.settings.seed, "preview", key, m.id), episodes, exact, seat=seat)
                for m in population
            ]
            # Streamed: the members that carry the meta-strategy's weight first (they make the
            # expected payoff), in rounds; each job is whole, so the figures are the same
            # as one batch would give.
            order = sorted(range(len(jobs)), key=lambda i: -weights.get(population[i].id, 0.0))
            rounds = [order] if on_estimate is None else first_and_rest(order, FIRST_MEMBER_ROUND)
            for chosen in rounds:
                for index, outcome in zip(chosen, self.evaluator.run([jobs[i] for i in chosen])):
                    failure = failure or _candidate_failure(outcome.failure)
                    if outcome.failure is None:
                        progress.per_member[population[index].id] = float(outcome.mean)
                        progress.stderr[population[index].id] = sampled_stderr(outcome)
                progress.members_done += len(chosen)
                if failure is not None:
                    break
                progress.report()
            # the population's order, as the record has always had it
            progress.per_member = {m.id: progress.per_member[m.id] for m in population if m.id in progress.per_member}
            progress.stderr = {m: progress.stderr[m] for m in progress.per_member}
        metrics = None
        if benchmark and self.settings.benchmark and failure is None:
            metrics, failure = self._benchmark(key, candidate, member_id, progress)  # candidate.seat: seat-fixed
        result = progress.preview(metrics, failure)
        if failure is None:
            self.mark_duplicate(result, source, known, exact, episodes)
        else:  # no behaviour to compare, but the same code needs no run
            self.mark_duplicate(result, source, known, exact, code_only=True)
        progress.finish(result)
        return result, exact, episodes

    def preview_episodes(self, smoke_episodes: int) -> int:
        """Episodes per member of a sampled preview (see `GateSettings.preview_episodes`)."""
        if self.settings.preview_episodes:
            return self.settings.preview_episodes
        return max(smoke_episodes, DEFAULT_SAMPLED_PREVIEW_EPISODES)

    def repeated_code(self, validation: ValidationResult, source: str,
                      known: Sequence[KnownPolicy]) -> ValidationResult:
        """An invalid candidate's validation, marked if its code repeats a known policy's.

        Same code needs no run, so it is found even for code that failed
        (the human oracle's unchanged crashing file, a deterministic oracle's repeat).
        """
        if validation.valid or not known:
            return validation
        found = find_duplicate(source, known)
        if found is None:
            return validation
        return dataclasses.replace(validation, duplicate_of=found.of, duplicate_reason=found.reason)

    def mark_duplicate(
        self, preview: Preview, source: str, known: Sequence[KnownPolicy], exact: bool, episodes: int = 0,
        *, code_only: bool = False,
    ) -> None:
        """Set `preview.duplicate_of` / `duplicate_reason` if the candidate repeats a known policy
        (`code_only`: by its code alone, for a candidate that failed and has no behaviour)."""
        if not known:
            return
        table_of = getattr(self.evaluator, "policy_table", None) if exact and not code_only else None
        row = None if exact or code_only else {
            m: (v, preview.stderr.get(m, 0.0), episodes) for m, v in preview.per_member.items()
        }
        found = find_duplicate(source, known, table_of=table_of, candidate_row=row)
        if found is not None:
            preview.duplicate_of, preview.duplicate_reason = found.of, found.reason

    def _benchmark(
        self, key: str, candidate: PolicyRecord, member_id: str | None = None,
        progress: "_PreviewProgress | None" = None,
    ) -> tuple[dict[str, float] | None, PolicyFailure | None]:
        bots = self.evaluator.bots()
        if not bots:
            return None, None
        episodes = self.settings.benchmark_episodes
        jobs = [
            MatchJob(candidate, Bot(bot), seed, episodes, seat=candidate.seat)
            for bot, seed in zip(bots, self._benchmark_seeds(key, bots, member_id))
        ]
        # One batch, streamed or not: a round of its own costs a batch's sandbox starts and a
        # pool worker idle at its end (~1 s, 9% of a --quick preview: bench/progressive.py),
        # and the bots' figures over a few bots say little (PopExpl is a maximum).
        per_bot: dict[str, float] = {}
        for bot, outcome in zip(bots, self.evaluator.run(jobs)):
            if outcome.failure is not None:
                return None, _candidate_failure(outcome.failure) or outcome.failure
            per_bot[bot] = float(outcome.mean)
        if progress is not None:
            progress.bots_done = len(per_bot)
        return bot_metrics(per_bot), None

    def _benchmark_seeds(self, key: str, bots: list[str], member_id: str | None) -> list[int]:
        if member_id is None:
            return [derive_seed(self.settings.seed, "preview-bench", key, bot) for bot in bots]
        # The seeds of engine.jobs.benchmark_jobs for that member.
        return [derive_seed(self.settings.seed, "benchmark", member_id, bot) for bot in bots]

    def check(
        self,
        source: str,
        population: Sequence[PolicyRecord],
        weights: dict[str, float],
        key: str,
        known: Sequence[KnownPolicy] = (),
        seat: int | None = None,
    ) -> Preview:
        """Validate and preview in one call (the oracles' `context.preview`; `seat` as `preview`'s).

        Without benchmark scores: oracles rank candidates by their payoff
        against the meta-strategy, and scoring every candidate they try
        against dozens of bots would cost minutes.  Duplicates of `known`
        are marked, so an oracle learns before proposing that it repeated one.
        """
        validation = self.validate(key, source, population, seat)
        if not validation.valid:
            failure = validation.failure or PolicyFailure.from_dict(
                {"category": "invalid", "message": validation.summary()}
            )
            invalid = Preview(expected_payoff=math.nan, per_member={}, failure=failure)
            self.mark_duplicate(invalid, source, known, self.evaluator.exact, code_only=True)
            return invalid
        preview, _, _ = self.preview(key, source, population, weights, validation, benchmark=False, known=known,
                                     seat=seat)
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


def expected_stderr(stderr: dict[str, float], weights: dict[str, float]) -> float:
    """Standard error of `expected_payoff` (independent per-member estimates, the same weighting)."""
    if not stderr:
        return 0.0
    total = sum(weights.get(member, 0.0) for member in stderr)
    if total <= 0:
        share = {member: 1.0 / len(stderr) for member in stderr}
    else:
        share = {member: weights.get(member, 0.0) / total for member in stderr}
    value = math.sqrt(sum((share[m] * se) ** 2 for m, se in stderr.items() if se == se))
    return float(value)


def sampled_stderr(outcome) -> float:
    """Standard error of a sampled mean, over seat-swapped pairs where there are two or more
    (seat-fixed outcomes, two populations: over episodes, as the referee gives it).

    The two episodes of a pair share a seed and in symmetric games often
    return the same value, so the per-episode error understates the noise;
    the pair means are independent.  With one pair, the outcome's own figure.
    """
    from csro_tui.evaluation.lockstep import paired_stderr  # start-up time: importing it loads pyspiel

    returns = list(getattr(outcome, "returns", None) or [])
    if getattr(outcome, "seat", None) is not None:
        returns = []  # seat-fixed (two populations): episodes are independent, the referee's per-episode figure holds
    if len(returns) >= 4 and len(returns) % 2 == 0:
        return paired_stderr(returns)  # the referee's own measure, from the returns
    value = getattr(outcome, "stderr", 0.0)
    try:
        value = float(value)
    except (TypeError, ValueError):
        return 0.0
    return value if value == value and value >= 0 else 0.0


def bot_metrics(per_bot: dict[str, float]) -> dict[str, float]:
    """The preview's population metrics from the mean payoff against each bot."""
    scores = population_metrics(per_bot)
    return {"pop_return": scores.pop_return, "pop_expl": scores.pop_expl, "agg_score": scores.agg_score}


# A streamed preview's first round: this many members (10 episodes each by default: about
# a second of RRPS at 1000 throws), the meta-strategy's first; the second plays the rest.
# The bots play in one batch after them, as in the one-batch preview, so with this many
# members or fewer the preview plays the very batches it did before.
FIRST_MEMBER_ROUND = 2


def first_and_rest(items: list, first: int) -> list[list]:
    """`items` as a first round of `first`, then the rest (no empty round)."""
    return [part for part in (items[:max(1, first)], items[max(1, first):]) if part]


@dataclass(frozen=True)
class PreviewEstimate:
    """A preview's figures so far: what a reviewer can read before it ends.

    `preview` has the members measured so far (the expected payoff
    renormalised over them, with its standard error); the bots' population
    metrics come with the final preview (`done`).
    """

    preview: Preview
    members_measured: int
    members: int
    bots_scored: int
    bots: int
    episodes: int  # per member (0: exact)
    done: bool = False
    smoke: bool = False  # the figures are the validation's smoke matches, before the preview's

    def describe(self) -> str:
        """One line: how far the preview is ("" once done)."""
        if self.done:
            return ""
        parts = [f"{self.members_measured} of {self.members} members measured"]
        if self.smoke:
            parts[0] = f"smoke-run figures until {self.episodes} episodes per member end"
        if self.bots:
            parts.append(f"then {self.bots} bots" if self.members_measured < self.members
                         else f"scoring {self.bots} bots")
        return "measuring: " + ", ".join(parts) + "; figures refine as matches finish"


class LivePreview:
    """The preview of a proposal under review, refined while the person reads it.

    The gate's observer (`update`, called on the thread that previews) keeps
    the newest `PreviewEstimate`; a reader (the TUI's review screen, polling)
    takes `latest()` with its version number and redraws when it changed.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._latest: PreviewEstimate | None = None
        self._version = 0

    def update(self, estimate: PreviewEstimate) -> None:
        with self._lock:
            self._latest = estimate
            self._version += 1

    def latest(self) -> tuple[int, PreviewEstimate | None]:
        with self._lock:
            return self._version, self._latest


class _PreviewProgress:
    """The figures of one preview as its rounds finish, handed to an observer."""

    def __init__(self, on_estimate, weights, exact, episodes, seat, members, bots) -> None:
        self.on_estimate = on_estimate
        self.weights, self.exact, self.episodes, self.seat = weights, exact, episodes, seat
        self.members, self.bots = members, bots
        self.per_member: dict[str, float] = {}
        self.stderr: dict[str, float] = {}
        self.members_done = 0
        self.bots_done = 0

    def preview(self, metrics: dict[str, float] | None, failure: PolicyFailure | None = None) -> Preview:
        stderr = {} if self.exact else dict(self.stderr)
        return Preview(
            expected_payoff=expected_payoff(self.per_member, self.weights),
            per_member=dict(self.per_member),
            population_metrics=metrics,
            failure=failure,
            stderr=stderr,
            expected_stderr=0.0 if self.exact else expected_stderr(stderr, self.weights),
            # independent samples behind `stderr`: seat-swapped pairs, or episodes when seat-fixed
            pairs=0 if self.exact else (self.episodes if self.seat is not None else self.episodes // 2),
        )

    def report(self, metrics: dict[str, float] | None = None) -> None:
        if self.on_estimate is not None and self.per_member:
            self._send(self.preview(metrics), done=False)

    def report_smoke(self, validation: ValidationResult) -> None:
        """The validation's smoke matches as the very first figures: a pair of episodes per
        member, too few to measure their noise (`pairs` 1 says so), until the members' round ends."""
        if self.on_estimate is None or not validation.smoke or self.seat is not None:
            return
        stderr = {m: validation.smoke_stderr.get(m, 0.0) for m in validation.smoke}
        preview = Preview(expected_payoff=expected_payoff(validation.smoke, self.weights),
                          per_member=dict(validation.smoke), stderr=stderr,
                          expected_stderr=expected_stderr(stderr, self.weights), pairs=validation.smoke_episodes // 2)
        self._send(preview, done=False, smoke=True)

    def finish(self, result: Preview) -> None:
        if self.on_estimate is not None:
            self._send(result, done=True)

    def _send(self, preview: Preview, done: bool, smoke: bool = False) -> None:
        self.on_estimate(PreviewEstimate(preview, self.members_done, self.members, self.bots_done, self.bots,
                                         self.episodes, done, smoke))


def known_policies(state: "SessionState", seat: int | None = None) -> list[KnownPolicy]:
    """What a candidate must not repeat: every member, then rejected proposals that ran, newest first.

    Members carry their payoff row (from the recorded payoff entries);
    rejected proposals the row their preview measured.  With `seat` (two
    populations) only that seat's members and the rejected proposals for it,
    their rows against the other seat's members.
    """
    known: list[KnownPolicy] = []
    ids = [m.id for m in state.seat_members(None if seat is None else 1 - seat)]
    for member in state.seat_members(seat):
        row: dict[str, tuple] = {}
        for other in ids:
            if other == member.id:
                continue
            entry = state.payoffs.get((member.id, other))
            sign = 1.0
            if entry is None or entry.failure is not None:
                entry, sign = state.payoffs.get((other, member.id)), -1.0
            if entry is not None and entry.failure is None:
                episodes = 0 if entry.exact else int(entry.episodes or 0)
                row[other] = (sign * float(entry.mean), float(entry.stderr or 0.0), episodes)
        known.append(KnownPolicy(member.id, f"member {member.name} ({member.id})", member.source, row, True))
    # Every rejected proposal for the same code; only those that ran for the
    # same behaviour: code that failed cannot behave like a valid candidate,
    # and asking a failing policy for its table again would cost a sandbox each time.
    rejected = [
        proposal for proposal in state.proposals.values()
        if proposal.decision is not None and proposal.decision.action == "reject" and proposal.proposal.seat == seat
    ]
    for proposal in list(reversed(rejected))[:MAX_REJECTED_COMPARED]:
        ran = proposal.preview is not None and proposal.preview.preview.failure is None
        row = {}
        if ran:
            preview, episodes = proposal.preview.preview, proposal.preview.episodes
            row = {m: (v, preview.stderr.get(m, 0.0), episodes) for m, v in preview.per_member.items() if v == v}
        known.append(KnownPolicy(
            proposal.id, f"rejected proposal {proposal.proposal.name} ({proposal.id})",
            proposal.proposal.source, row, False, behaviour_known=ran,
        ))
    return known


# An iteration that adds nothing, or a headline metric whose best value has
# stood for IMPROVEMENT_PATIENCE iterations, is "not improving"; the note
# names how long that has lasted.
IMPROVEMENT_PATIENCE = 3


def progress_note(state: "SessionState", iteration: int) -> str:
    """One line when the run has stopped improving as of `iteration` (else "").

    Two signs: iterations in a row that added no policy (every proposal
    rejected), and a headline metric (exploitability, AggScore) whose best
    value so far was reached IMPROVEMENT_PATIENCE or more
    iterations ago.
    """
    numbers = sorted(n for n in state.iterations if 1 <= n <= iteration)
    idle = 0
    for number in reversed(numbers):
        if state.iterations[number].accepted is None and not _joined_in(state, number):
            idle += 1
        else:
            break
    if idle:
        last = _last_rejection(state, iteration)
        why = f" (last rejection: {last})" if last else ""
        plural = "s" if idle > 1 else ""
        return f"not improving: no policy accepted in the last {idle} iteration{plural}{why}"
    history = [m for m in state.metrics if m.iteration <= iteration]
    if not history or history[-1].iteration < 1:
        return ""
    current = headline_metric(history[-1])
    if current is None or current[0] == "meta-NashConv":
        return ""
    name, value = current
    # PSRO's headline metric is not monotone (a new member can shift the
    # meta-strategy to a more exploitable mixture for an iteration), so only
    # a best value left standing for IMPROVEMENT_PATIENCE iterations counts.
    best_value, best_iteration = value, history[-1].iteration
    for metrics in history:
        before = headline_metric(metrics)
        if before is None or before[0] != name:
            continue
        better = before[1] > best_value + 1e-9 if name == "AggScore" else before[1] < best_value - 1e-9
        if better or (abs(before[1] - best_value) <= 1e-9 and metrics.iteration < best_iteration):
            best_value, best_iteration = before[1], metrics.iteration
    stale = history[-1].iteration - best_iteration
    if stale < IMPROVEMENT_PATIENCE:
        return ""
    return (f"not improving: {name} {value:.4f}; the best, {best_value:.4f}, "
            f"was reached {stale} iterations ago")


def _joined_in(state: "SessionState", number: int) -> bool:
    return any(m.iteration == number for m in state.population) and number > 0


def _last_rejection(state: "SessionState", iteration: int) -> str:
    for proposal in reversed(list(state.proposals.values())):
        if proposal.iteration <= iteration and proposal.decision is not None and proposal.decision.action == "reject":
            reason = " ".join(proposal.decision.reason.split())
            return reason if len(reason) <= 160 else reason[:159] + "…"
    return ""


def _candidate_timing(outcomes) -> tuple[str, str]:
    """The candidate's call timing in its smoke run and what it printed there,
    each as one line ('' if not measured, or nothing printed).  Its host served
    every smoke match, so the match with the most calls holds all of them."""
    measured = timing_of(outcomes)
    return describe_timing(measured), describe_printed(measured)


class Gated(Enum):
    """How one proposal left the gate."""

    ACCEPTED = "accepted"
    REJECTED = "rejected"
    STOPPED = "stopped"


class ReviewLoop:
    """The review loop, run by the engine (`Engine` is a `ReviewLoop`) for each proposal.

    It reads the engine's folded `state`, `config.max_attempts`, its `gate` checks and
    `reviewer`, its stop event `_stop`, and records through `_emit`; new ids come from
    `_next_member_id` / `_next_proposal_id`.
    """

    state: SessionState
    config: "RunConfig"
    gate: Gate
    reviewer: "Reviewer"
    _stop: threading.Event
    _emit: Callable[[Event], Event]
    _next_member_id: Callable[[], str]
    _candidate_member_id: Callable[[], str]
    _next_proposal_id: Callable[[int], str]

    def _gate(self, proposal_id: str) -> tuple[Gated, str]:
        """Validate, preview and review a proposal, following edits, until a verdict.

        Returns the verdict and the id of the proposal it is about (the last edit).
        """
        while True:
            verdict = self._gate_once(proposal_id)
            if isinstance(verdict, Gated):
                return verdict, proposal_id
            proposal_id = verdict

    def _gate_once(self, proposal_id: str) -> Gated | str:
        """One pass through the gate: a verdict, or the id of the reviewer's edit."""
        if self._stop.is_set():
            return Gated.STOPPED
        entry = self.state.proposals[proposal_id]
        seat = entry.proposal.seat
        # two populations: judged in its seat against the other seat's members and their meta-strategy
        population = list(self.state.seat_members(None if seat is None else 1 - seat))
        weights = self.state.meta_strategy
        # what the proposal may repeat: members and rejected proposals (this one's own events do not change it)
        known = [k for k in known_policies(self.state, seat) if k.id != proposal_id]
        validation = self.gate.validate(proposal_id, entry.proposal.source, population, seat)
        validation = self.gate.repeated_code(validation, entry.proposal.source, known)
        self._emit(ProposalValidated(proposal_id=proposal_id, validation=validation))
        preview = None
        if validation.valid:
            if self._stop.is_set():
                return Gated.STOPPED
            run_preview = functools.partial(
                self.gate.preview, proposal_id, entry.proposal.source, population, weights, validation,
                member_id=self._candidate_member_id(), known=known, seat=seat,
            )
            if getattr(self.reviewer, "progressive", False) and not self.gate.evaluator.exact:
                decision, measured = self._review_while_previewing(proposal_id, population, weights, run_preview)
                if measured is None:
                    return Gated.STOPPED
                preview, exact, episodes = measured
                self._emit(ProposalPreviewed(proposal_id=proposal_id, preview=preview, exact=exact, episodes=episodes))
                return Gated.STOPPED if decision is None else self._follow(proposal_id, decision, validation, preview)
            preview, exact, episodes = run_preview()
            self._emit(ProposalPreviewed(proposal_id=proposal_id, preview=preview, exact=exact, episodes=episodes))
        if self._stop.is_set():
            return Gated.STOPPED
        decision = self._ask_reviewer(proposal_id, population, weights)
        if decision is None:
            return Gated.STOPPED
        return self._follow(proposal_id, decision, validation, preview)

    def _review_while_previewing(
        self, proposal_id: str, population: list[PolicyRecord], weights: dict[str, float],
        run_preview: Callable[..., tuple[Preview, bool, int]],
    ) -> tuple[Decision | None, tuple[Preview, bool, int] | None]:
        """A progressive reviewer decides while the preview plays, on a thread of its own,
        its figures reaching the reviewer through `LivePreview` as each round ends.

        Whenever the decision comes, the preview plays to its end before anything is
        recorded (the same `ProposalPreviewed`, then the decision): the session's
        figures do not depend on when the person decided.  (decision, preview result);
        the result is None when a stop interrupted the preview.
        """
        live = LivePreview()
        outcome: dict[str, object] = {}

        def measure() -> None:
            try:
                outcome["result"] = run_preview(on_estimate=live.update)
            except BaseException as error:  # handed to the engine thread below
                outcome["error"] = error

        worker = threading.Thread(target=measure, name=f"csro-preview-{proposal_id}", daemon=True)
        worker.start()
        try:
            decision = self._ask_reviewer(proposal_id, population, weights, live=live)
        finally:
            worker.join()
        error = outcome.get("error")
        if error is not None:
            if isinstance(error, EvaluationInterrupted) and self._stop.is_set():
                return None, None
            raise error  # type: ignore[misc]
        if self._stop.is_set():
            return None, None
        return decision, outcome["result"]  # type: ignore[return-value]

    def _follow(self, proposal_id: str, decision: Decision, validation: ValidationResult,
                preview: Preview | None) -> Gated | str:
        """Record the reviewer's decision: a verdict, or the id of the reviewer's edit."""
        acceptable = validation.valid and (preview is None or preview.failure is None)
        if decision.action == "accept" and not acceptable:
            why = validation.summary() if not validation.valid else preview.failure.summary()
            self._decide(proposal_id, Decision.reject(why), note="accept refused: the code is invalid")
            return Gated.REJECTED
        self._decide(proposal_id, decision)
        if decision.action == "accept":
            return Gated.ACCEPTED
        if decision.action == "reject":
            return Gated.REJECTED
        return self._record_edit(proposal_id, decision)

    def _ask_reviewer(self, proposal_id: str, population: list[PolicyRecord], weights: dict[str, float],
                      live: "LivePreview | None" = None) -> Decision | None:
        request = review_request(
            self.state, proposal_id, population=population, meta_strategy=weights,
            cancel=self._stop, max_attempts=self.config.max_attempts,
        )
        request.live_preview = live
        try:
            decision = self.reviewer.decide(request)
        except Exception:
            if self._stop.is_set():
                return None  # a reviewer unblocked by the stop request
            raise
        if self._stop.is_set() and decision is None:
            return None
        return decision

    def _decide(self, proposal_id: str, decision: Decision, note: str = "") -> None:
        reason = decision.reason
        if decision.action == "reject" and not reason.strip():
            reason = f"rejected by {self.reviewer.name} without a reason"
        self._emit(
            ProposalDecided(
                proposal_id=proposal_id,
                action=decision.action,
                decided_by=self.reviewer.name,
                reason=reason,
                edited_source=decision.source if decision.action == "edit" else None,
                note=note,
            )
        )

    def _record_edit(self, proposal_id: str, decision: Decision, editor: str | None = None) -> str:
        editor = editor or self.reviewer.name
        entry = self.state.proposals[proposal_id]
        original = entry.proposal
        edited = Proposal(
            source=decision.source or "",
            oracle=original.oracle,
            name=original.name,
            parent=original.parent,
            rationale=original.rationale
            + (f"\n\nEdited by {editor}: {decision.reason}" if decision.reason else ""),
            seat=original.seat,
        )
        new_id = self._next_proposal_id(entry.iteration)
        self._emit(
            ProposalCreated(
                proposal_id=new_id,
                iteration=entry.iteration,
                attempt=entry.attempt,
                proposal=edited,
                edited_from=proposal_id,
                edited_by=editor,
            )
        )
        return new_id
