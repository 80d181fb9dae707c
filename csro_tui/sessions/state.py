"""The state of a session as a pure fold over its events.

`SessionState.apply(event)` is the only way state changes, both live (the
engine applies each event it records) and on replay, so a replayed session
ends exactly where the live run did.  Nothing here evaluates a policy or
calls an oracle; `SessionState.at(step)` rebuilds the state after any event.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Iterable

import numpy as np

from csro_tui.errors import SessionError
from csro_tui.meta.metagame import MetaGame, PayoffEntry
from csro_tui.records import PolicyRecord, Proposal, ValidationResult
from csro_tui.sessions.events import (
    BehaviourProfiled,
    BenchmarkEvaluated,
    Event,
    GamePlayed,
    IterationFinished,
    IterationStarted,
    MetaSolved,
    MetricsComputed,
    OracleFailed,
    PayoffRecord,
    PayoffsEvaluated,
    PolicyAdded,
    ProposalCreated,
    ProposalDecided,
    ProposalPreviewed,
    ProposalValidated,
    SessionClosed,
    SessionResumed,
    SessionStarted,
)
from csro_tui.sessions.store import SessionInfo


@dataclass
class ProposalState:
    """A proposal and what happened to it at the gate."""

    id: str
    iteration: int
    attempt: int
    proposal: Proposal
    edited_from: str | None = None
    edited_by: str | None = None
    validation: ValidationResult | None = None  # as recorded by its proposal_validated event
    preview: ProposalPreviewed | None = None
    decision: ProposalDecided | None = None
    policy_id: str | None = None  # set when it joined the population

    @property
    def valid(self) -> bool:
        return self.validation is not None and self.validation.valid


@dataclass
class IterationState:
    number: int
    finished: bool = False
    accepted: str | None = None
    proposals: list[str] = field(default_factory=list)  # proposal ids, in order
    oracle_failures: int = 0
    original_proposals: int = 0  # from the oracle, not reviewers' edits

    @property
    def attempts(self) -> int:
        """Oracle attempts so far: its proposals plus the times it failed."""
        return self.oracle_failures + self.original_proposals


@dataclass
class SessionState:
    """Everything a session has recorded, folded event by event."""

    events: list[Event] = field(default_factory=list)
    started: SessionStarted | None = None
    resumes: list[SessionResumed] = field(default_factory=list)
    closed: SessionClosed | None = None
    population: list[PolicyRecord] = field(default_factory=list)
    policy_proposal: dict[str, str] = field(default_factory=dict)  # policy id -> proposal id
    payoffs: dict[tuple[str, str], PayoffRecord] = field(default_factory=dict)  # as evaluated
    payoff_updates: int = 0  # payoffs_evaluated events folded: views keyed on it know when `payoffs` changed
    # The same entries as the meta-game's incremental antisymmetric matrix.
    metagame: MetaGame = field(default_factory=MetaGame, compare=False, repr=False)
    benchmark: dict[str, BenchmarkEvaluated] = field(default_factory=dict)
    meta: MetaSolved | None = None
    meta_history: list[MetaSolved] = field(default_factory=list)
    metrics: list[MetricsComputed] = field(default_factory=list)
    proposals: dict[str, ProposalState] = field(default_factory=dict)
    iterations: dict[int, IterationState] = field(default_factory=dict)
    oracle_failures: list[OracleFailed] = field(default_factory=list)
    games: list[GamePlayed] = field(default_factory=list)
    # Behaviour profiles recorded (policy or proposal id -> the latest): csro_tui/profiles/.
    profiles: dict[str, BehaviourProfiled] = field(default_factory=dict)

    # --- folding ------------------------------------------------------------

    @property
    def step(self) -> int:
        """Sequence number of the last event applied (0 before any)."""
        return self.events[-1].seq if self.events else 0

    def apply(self, event: Event) -> None:
        handler = getattr(self, f"_on_{event.TYPE}", None)
        if handler is None:
            raise SessionError(f"event {event.seq}: no fold rule for {event.TYPE!r}")
        handler(event)
        self.events.append(event)

    def at(self, step: int) -> "SessionState":
        """The state right after event `step` (a sequence number, 1-based)."""
        if step < 0 or step > self.step:
            raise SessionError(f"step {step} is outside this session (1..{self.step})")
        return fold(event for event in self.events if event.seq <= step)

    def copy(self) -> "SessionState":
        """An independent copy to fold further (the timeline keeps copies at checkpoints, so a
        jump to any step folds a bounded number of events). Events and the records they hold
        are never changed by the fold, so they are shared; the containers and the per-proposal
        and per-iteration states it mutates are copied."""
        return SessionState(
            events=list(self.events), started=self.started, resumes=list(self.resumes), closed=self.closed,
            population=list(self.population), policy_proposal=dict(self.policy_proposal),
            payoffs=dict(self.payoffs), payoff_updates=self.payoff_updates, metagame=self.metagame.copy(), benchmark=dict(self.benchmark),
            meta=self.meta, meta_history=list(self.meta_history), metrics=list(self.metrics),
            proposals={key: replace(value) for key, value in self.proposals.items()},
            iterations={key: replace(value, proposals=list(value.proposals)) for key, value in self.iterations.items()},
            oracle_failures=list(self.oracle_failures), games=list(self.games), profiles=dict(self.profiles),
        )

    def _on_session_started(self, event: SessionStarted) -> None:
        if self.started is not None:
            raise SessionError(f"event {event.seq}: a second session_started")
        self.started = event

    def _on_session_resumed(self, event: SessionResumed) -> None:
        self.resumes.append(event)
        self.closed = None

    def _on_session_closed(self, event: SessionClosed) -> None:
        self.closed = event

    def _on_iteration_started(self, event: IterationStarted) -> None:
        self.iterations.setdefault(event.iteration, IterationState(event.iteration))

    def _iteration(self, number: int) -> IterationState:
        return self.iterations.setdefault(number, IterationState(number))

    def _on_oracle_failed(self, event: OracleFailed) -> None:
        self.oracle_failures.append(event)
        if not event.cancelled:
            self._iteration(event.iteration).oracle_failures += 1

    def _on_proposal_created(self, event: ProposalCreated) -> None:
        self.proposals[event.proposal_id] = ProposalState(
            id=event.proposal_id,
            iteration=event.iteration,
            attempt=event.attempt,
            proposal=event.proposal,
            edited_from=event.edited_from,
            edited_by=event.edited_by,
        )
        iteration = self._iteration(event.iteration)
        iteration.proposals.append(event.proposal_id)
        if event.edited_from is None:
            iteration.original_proposals += 1

    def _proposal(self, event: Event, proposal_id: str) -> ProposalState:
        try:
            return self.proposals[proposal_id]
        except KeyError:
            raise SessionError(f"event {event.seq}: unknown proposal {proposal_id!r}") from None

    def _on_proposal_validated(self, event: ProposalValidated) -> None:
        self._proposal(event, event.proposal_id).validation = event.validation

    def _on_proposal_previewed(self, event: ProposalPreviewed) -> None:
        self._proposal(event, event.proposal_id).preview = event

    def _on_proposal_decided(self, event: ProposalDecided) -> None:
        self._proposal(event, event.proposal_id).decision = event

    def _on_policy_added(self, event: PolicyAdded) -> None:
        if any(member.id == event.policy.id for member in self.population):
            raise SessionError(f"event {event.seq}: policy {event.policy.id!r} added twice")
        try:
            self.metagame.add_policy(event.policy.id, seat=event.policy.seat)
        except ValueError as error:
            raise SessionError(f"event {event.seq}: {error}") from None
        self.population.append(event.policy)
        if event.proposal_id is not None:
            self._proposal(event, event.proposal_id).policy_id = event.policy.id
            self.policy_proposal[event.policy.id] = event.proposal_id

    def _on_payoffs_evaluated(self, event: PayoffsEvaluated) -> None:
        for entry in event.entries:
            try:
                self.metagame.set_entry(
                    PayoffEntry(
                        row=entry.row,
                        col=entry.col,
                        mean=entry.mean,
                        stderr=entry.stderr,
                        episodes=entry.episodes,
                        seeds=list(entry.seeds),
                        exact=entry.exact,
                    )
                )
            except (KeyError, ValueError) as error:
                raise SessionError(f"event {event.seq}: bad payoff entry {entry.row} vs {entry.col}: {error}") from None
            self.payoffs[(entry.row, entry.col)] = entry
        self.payoff_updates += 1

    def _on_benchmark_evaluated(self, event: BenchmarkEvaluated) -> None:
        self.benchmark[event.policy_id] = event

    def _on_meta_solved(self, event: MetaSolved) -> None:
        self.meta = event
        self.meta_history.append(event)

    def _on_metrics(self, event: MetricsComputed) -> None:
        self.metrics.append(event)

    def _on_iteration_finished(self, event: IterationFinished) -> None:
        iteration = self._iteration(event.iteration)
        iteration.finished = True
        iteration.accepted = event.accepted

    def _on_game_played(self, event: GamePlayed) -> None:
        self.games.append(event)

    def _on_behaviour_profiled(self, event: BehaviourProfiled) -> None:
        self.profiles[event.policy_id] = event

    # --- views ----------------------------------------------------------------

    @property
    def config(self) -> dict[str, Any]:
        """The run configuration, with the overrides of every resume applied."""
        config = dict(self.started.config) if self.started else {}
        for resume in self.resumes:
            config.update(resume.overrides)
        return config

    @property
    def ids(self) -> list[str]:
        return [member.id for member in self.population]

    @property
    def populations(self) -> int:
        """1: one population playing both seats; 2: one population per seat (issue 23)."""
        return int(self.config.get("populations", 1) or 1)

    def seat_members(self, seat: int | None) -> list[PolicyRecord]:
        """The members of one seat's population (two populations), in joining order;
        None: the whole population."""
        return [member for member in self.population if seat is None or member.seat == seat]

    def member(self, policy_id: str) -> PolicyRecord | None:
        return next((m for m in self.population if m.id == policy_id), None)

    def edit_chain(self, proposal_id: str) -> list[ProposalState]:
        """The proposal's history: the oracle's original first, then each edit, ending with it."""
        chain: list[ProposalState] = []
        current = self.proposals.get(proposal_id)
        while current is not None and current not in chain:
            chain.append(current)
            current = self.proposals.get(current.edited_from) if current.edited_from else None
        return chain[::-1]

    def edited_by(self, policy_id: str) -> str | None:
        """Who edited an accepted member's code by hand (the last editor), or None."""
        proposal_id = self.policy_proposal.get(policy_id)
        if proposal_id is None:
            return None
        return next((p.edited_by or "a reviewer" for p in reversed(self.edit_chain(proposal_id)) if p.edited_from), None)

    def solver_ids(self) -> list[str]:
        """The members in the order of the meta-solver's strategy (`MetaSolved.population`):
        the population, or with two populations seat 0's members then seat 1's."""
        if self.metagame.populations == 2:
            return [m.id for m in self.seat_members(0)] + [m.id for m in self.seat_members(1)]
        return self.ids

    def seat_value(self, seat: int, before: int | None = None) -> float | None:
        """Two populations: the seat's value of the latest meta-game (seat 0's is the
        solver's value, seat 1's its negation), or of the latest solved before event
        `before` (a seq); None before any meta-solve."""
        meta = self.meta
        if before is not None:
            meta = next((m for m in reversed(self.meta_history) if m.seq is not None and m.seq < before), None)
        if meta is None:
            return None
        return meta.value if seat == 0 else (-meta.value or 0.0)  # not "-0.000" in words

    def seat_strategy(self, seat: int) -> dict[str, float]:
        """Two populations: the latest meta-strategy of one seat's members (sums to 1 once solved)."""
        weights = self.meta_strategy
        return {m.id: weights[m.id] for m in self.seat_members(seat)}

    def seat_matrix(self) -> np.ndarray:
        """Two populations: the seat-0 x seat-1 matrix of seat-0 members' returns (rows and
        columns in `seat_members` order), NaN where not evaluated yet."""
        return self.metagame.partial_matrix()

    def meta_matrix(self, ids: list[str]) -> np.ndarray:
        """The matrix the meta-solver was given for the members `ids` (a `MetaSolved.population`):
        square over `ids`, or with two populations their seat-0 x seat-1 block; NaN where missing."""
        if self.metagame.populations == 2:
            rows = [pid for pid in ids if self.metagame.seat_of(pid) == 0]
            cols = [pid for pid in ids if self.metagame.seat_of(pid) == 1]
            return np.array([[np.nan if (v := self.payoff(r, c)) is None else v for c in cols] for r in rows],
                            dtype=float).reshape(len(rows), len(cols))
        return self.matrix(ids)

    def payoff(self, row: str, col: str) -> float | None:
        """M[row][col] (the matrix is antisymmetric); None if not evaluated yet, or
        never (two populations: a same-seat pair)."""
        if row not in self.metagame or col not in self.metagame:
            return None
        entry = self.metagame.entry(row, col)
        return entry.mean if entry is not None else None

    def missing_payoffs(self) -> list[tuple[str, str]]:
        """Pairs (newer, older) of members whose matchup has not been evaluated."""
        return self.metagame.missing_pairs()

    def matrix(self, ids: list[str] | None = None) -> np.ndarray:
        """The meta-game payoff matrix over `ids` (default: the population); NaN where missing."""
        ids = self.ids if ids is None else ids
        matrix = np.full((len(ids), len(ids)), np.nan)
        for i, row in enumerate(ids):
            for j, col in enumerate(ids):
                value = self.payoff(row, col)
                if value is not None:
                    matrix[i, j] = value
        return matrix

    @property
    def meta_strategy(self) -> dict[str, float]:
        """The latest meta-strategy, by policy id (members added since weigh 0)."""
        weights = dict.fromkeys(self.ids, 0.0)
        if self.meta is not None:
            for policy_id, weight in zip(self.meta.population, self.meta.strategy):
                if policy_id in weights:
                    weights[policy_id] = weight
        return weights

    @property
    def meta_is_current(self) -> bool:
        return self.meta is not None and self.meta.population == self.solver_ids()

    @property
    def rejections(self) -> list[tuple[Proposal, str]]:
        """Rejected proposals with the reason, oldest first (what oracles get back)."""
        return [
            (state.proposal, state.decision.reason)
            for state in self.proposals.values()
            if state.decision is not None and state.decision.action == "reject"
        ]

    @property
    def completed_iterations(self) -> int:
        """Oracle iterations (numbered from 1) that finished."""
        return sum(1 for number, it in self.iterations.items() if number >= 1 and it.finished)

    @property
    def oracle_finished_iteration(self) -> IterationState | None:
        """The last iteration when it finished with the oracle having nothing more
        (no proposal, no failed attempt: the oracle's "finished" ends it empty)."""
        numbered = [it for number, it in self.iterations.items() if number >= 1]
        last = max(numbered, key=lambda it: it.number) if numbered else None
        if last is not None and last.finished and not last.proposals and not last.oracle_failures:
            return last
        return None

    @property
    def open_iteration(self) -> IterationState | None:
        """The iteration started but not finished (a stop or crash interrupted it)."""
        unfinished = [it for it in self.iterations.values() if not it.finished]
        return max(unfinished, key=lambda it: it.number) if unfinished else None

    def seat_attempts(self, iteration: int, seat: int) -> int:
        """Two populations: the oracle's attempts for one seat in an iteration (its
        proposals for that seat, edits not counted, plus its failures for it)."""
        proposals = sum(
            1 for pid in self.iterations[iteration].proposals
            if self.proposals[pid].edited_from is None and self.proposals[pid].proposal.seat == seat
        ) if iteration in self.iterations else 0
        failures = sum(1 for f in self.oracle_failures
                       if f.iteration == iteration and f.seat == seat and not f.cancelled)
        return proposals + failures

    def accepted_pending(self) -> ProposalState | None:
        """An accepted proposal whose policy has not been added yet (crash in between)."""
        for state in self.proposals.values():
            if state.decision is not None and state.decision.action == "accept" and state.policy_id is None:
                return state
        return None

    def metrics_for(self, iteration: int) -> MetricsComputed | None:
        return next((m for m in reversed(self.metrics) if m.iteration == iteration), None)

    @property
    def latest_metrics(self) -> MetricsComputed | None:
        return self.metrics[-1] if self.metrics else None

    def summary(self, directory: Path) -> "SessionInfo":
        started = self.started
        return SessionInfo(
            id=directory.name,
            path=directory,
            game=started.game if started else "",
            oracle=started.oracle if started else "",
            solver=started.solver if started else "",
            started=started.ts if started else "",
            # What a person counts: the empty iteration in which the oracle said it had
            # nothing more is not one (completed_iterations, which resume and replay use, counts it).
            iterations=self.completed_iterations - (self.oracle_finished_iteration is not None),
            oracle_finished=self.oracle_finished_iteration is not None,
            population_size=len(self.population),
            seat_sizes=(tuple(len(self.seat_members(seat)) for seat in (0, 1)) if self.populations == 2 else ()),
            best_metric=best_metric(self.metrics),
            closed=self.closed.reason if self.closed else None,
            populations=self.metagame.populations,
        )


def headline_metric(metrics: MetricsComputed) -> tuple[str, float] | None:
    """The one number that says how an iteration went: exploitability, AggScore or NashConv."""
    if metrics.exploitability is not None:
        return ("exploitability", metrics.exploitability)
    meta_scores = (metrics.benchmark or {}).get("meta") or {}
    if meta_scores.get("agg_score") is not None:
        return ("AggScore", float(meta_scores["agg_score"]))
    return ("meta-NashConv", metrics.meta_nash_conv)


def best_metric(history: Iterable[MetricsComputed]) -> tuple[str, float] | None:
    """The best headline value over a run (lowest exploitability/NashConv, highest AggScore)."""
    best: tuple[str, float] | None = None
    for metrics in history:
        current = headline_metric(metrics)
        if current is None or current[1] is None:
            continue
        if best is None or best[0] != current[0]:
            best = current
            continue
        higher_is_better = current[0] == "AggScore"
        if (current[1] > best[1]) if higher_is_better else (current[1] < best[1]):
            best = current
    return best


def fold(events: Iterable[Event]) -> SessionState:
    """The state after applying `events` in order; SessionError naming the event when one
    does not fit (a log from elsewhere may hold well-formed events of the wrong types)."""
    state = SessionState()
    for event in events:
        try:
            state.apply(event)
        except SessionError:
            raise
        except Exception as error:  # noqa: BLE001 - a crafted log is one line of error, never a traceback
            raise SessionError(f"event {event.seq} ({event.TYPE}) does not fit the session "
                               f"({type(error).__name__}: {error})") from None
    return state
