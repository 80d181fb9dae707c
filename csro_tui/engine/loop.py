"""The CSRO loop (its review gate is `engine.gate.ReviewLoop`).

An iteration:

1. the oracle proposes (`Proposal`) from an `OracleContext` holding the
   population, the meta-strategy and every earlier rejection with its reason;
2. the gate validates it (static, then a sandboxed smoke match against each
   member) and previews it (payoffs against the members, expected payoff
   against the meta-strategy, benchmark scores where measured);
3. the reviewer decides: *accept*; *edit* (the edited code becomes a new
   proposal, validated, previewed and reviewed again; a review script
   accepts its own edit when valid, the edit line being its decision); or *reject* (the
   reason joins the rejections the oracle sees next).  After a rejection the
   oracle tries again, up to `max_attempts` oracle attempts per iteration;
   then the iteration ends without a new policy and the run moves on.
   An oracle that raises counts as an attempt too; an error that would
   repeat at once (`CsroError.persistent`: no LLM server at the address, a
   refused key) stops the run at its first attempt; when every attempt of an
   iteration raised, the run stops with the error (resumable) unless the
   oracle only came up empty (`NoUsableProposal`: all its candidates
   failed), which ends that iteration alone.  An oracle that came up empty
   but hands over its last failed code (`NoUsableProposal.failed`) has that
   code reviewed as its proposal, with the failure: a person sees the code
   and the reason and may fix it by editing; any reviewer may reject it.
   An accept of invalid code is refused and recorded as a rejection;
4. on accept the policy joins, only the payoff entries it adds are
   evaluated, the meta-solver runs and the metrics are computed.

Two populations (`config.populations == 2`, issue 23, as OpenSpiel's
psro_v2 runs it): every member belongs to a seat.  The seed policies join
both populations (seat 0's copies first; ids stay `p0`, `p1`, ... in joining
order, the seat is in the record).  An iteration runs steps 1-3 for seat 0,
then for seat 1, each against the other seat's meta-strategy as it was at
the iteration's start (nothing joins in between) and with its own attempts;
then the accepted proposals join (seat 0's first), only the new seat-0 x
seat-1 entries are evaluated (seat-fixed), one meta-solve gives both
mixtures, and the metrics follow.  An oracle with nothing for one seat
leaves that seat out of the iteration; with nothing for either, the run ends.

Every step is an event: recorded durably (when the engine has a writer),
folded into `self.state` and passed to subscribers, in that order.  The
state is only ever changed by folding events, so the recorded log replays
to exactly the live state, and a resumed engine continues from the log's
last complete event (`SessionState` tells what is still to do): an accepted
policy that had not joined yet joins, missing payoff entries, meta-solve
and metrics are completed, and an iteration stopped before its decision
starts again at its gate (with two populations: the undecided seat's; a
seat already decided keeps its decision) - the undecided proposal (or a reviewer's last
edit) is validated, previewed and reviewed again rather than asking the
oracle (an LLM call) for a new one.

Threads: `run` blocks and is meant for a worker thread.  `subscribe`,
`request_stop`, `record_game` and `snapshot` may be called from any
thread.  Subscribers are called on the thread that emitted the event
(normally the engine's), outside the engine's lock; they should hand the
event over (e.g. post a message) rather than block.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import traceback
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np

from csro_tui.config import RunConfig, strip_credentials
from csro_tui.engine.evaluator import Evaluator, derive_seed
from csro_tui.engine.gate import Gate, Gated, GateSettings, ReviewLoop, candidate_record, known_policies, progress_note
from csro_tui.engine.iteration_metrics import benchmark_scores, payoff_against
from csro_tui.engine.jobs import benchmark_jobs, payoff_job
from csro_tui.errors import ConfigError, CsroError, EvaluationInterrupted, NoUsableProposal
from csro_tui.numbers import counted
from csro_tui.oracles.base import Oracle, OracleContext
from csro_tui.oracles.registry import finished_error_types
from csro_tui.records import Decision, MatchJob, PolicyRecord, Proposal
from csro_tui.sandbox.limits import loosened_limits
from csro_tui.reviewers import Reviewer
from csro_tui.sessions.events import (
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
    SessionClosed,
    SessionResumed,
    SessionStarted,
)
from csro_tui.sessions.state import SessionState
from csro_tui.sessions.store import SessionWriter

log = logging.getLogger(__name__)

Subscriber = Callable[[Event], None]
# solve(solver name, antisymmetric payoff matrix) -> object with row, value, nash_conv
MetaSolve = Callable[[str, np.ndarray], Any]


@dataclass(frozen=True)
class _OracleDone:
    """The oracle said it has nothing more to propose."""

    message: str


@dataclass(frozen=True)
class RunOutcome:
    reason: str  # "completed", "stopped" or "error"
    message: str
    state: SessionState
    oracle_finished: bool = False  # the oracle said it has nothing more to propose (message says why)


def joint_strategy(solution: Any, *, two_populations: bool) -> list[float]:
    """The weights `MetaSolved.strategy` records: the row player's mixture, or with two
    populations the row's (seat 0) then the column's (seat 1)."""
    parts = [solution.row, solution.col] if two_populations else [solution.row]
    return [float(w) for part in parts for w in np.asarray(part, dtype=float)]


class Engine(ReviewLoop):
    """Runs CSRO iterations for one session; see the module docstring."""

    def __init__(
        self,
        *,
        config: RunConfig,
        spec: Any,
        oracle: Oracle,
        reviewer: Reviewer,
        evaluator: Evaluator,
        writer: SessionWriter | None = None,
        state: SessionState | None = None,
        meta_solve: MetaSolve | None = None,
        seed_sources: dict[str, str] | None = None,
        versions: dict[str, str] | None = None,
        session_id: str | None = None,
        finished_errors: tuple[type[BaseException], ...] | None = None,
    ) -> None:
        self.config = config
        self.spec = spec
        self.oracle = oracle
        self.reviewer = reviewer
        self.evaluator = evaluator
        self.writer = writer
        self.state = state if state is not None else SessionState()
        self.session_id = session_id or (writer.session_id if writer else "in-memory")
        self.versions = versions or {}
        self._meta_solve = meta_solve
        self._seed_sources = seed_sources
        self._finished_errors = finished_errors
        self._benchmark_on = self._benchmark_enabled()
        self.gate = Gate(
            evaluator,
            GateSettings(
                seed=config.seed,
                smoke_episodes=self._smoke_episodes(),
                # the game's own size where it needs more than the default to see past its noise
                preview_episodes=config.preview_episodes or getattr(spec, "preview_episodes", None),
                benchmark=self._benchmark_on and config.preview_benchmark,
                benchmark_episodes=config.benchmark_episodes,
            ),
        )
        self._lock = threading.RLock()
        self._subscribers: list[Subscriber] = []
        self._stop = threading.Event()
        if hasattr(evaluator, "cancel"):
            evaluator.cancel = self._stop  # a stop abandons a sampled evaluation mid-way
        # The working oracle's: set by a stop, or by `finish_oracle` (with `_oracle_finish`).
        self._oracle_cancel = threading.Event()
        self._oracle_finish = threading.Event()
        self._resumed_torn_line = False
        self._opened = False  # this engine has recorded session_started/resumed

    # --- observing and steering (any thread) ---------------------------------

    def subscribe(self, callback: Subscriber) -> Callable[[], None]:
        """Call `callback(event)` for every event from now on; returns an unsubscribe function."""
        with self._lock:
            self._subscribers.append(callback)

        def unsubscribe() -> None:
            with self._lock:
                if callback in self._subscribers:
                    self._subscribers.remove(callback)

        return unsubscribe

    def request_stop(self) -> None:
        """Stop at the next step boundary; the oracle and a blocking reviewer see `cancel` set."""
        self._stop.set()
        self._oracle_cancel.set()

    def finish_oracle(self) -> None:
        """Ask the working oracle to make no more LLM calls (the one in flight is cancelled) and
        propose its best candidate so far; the run goes on. Nothing happens between oracle calls."""
        self._oracle_finish.set()
        self._oracle_cancel.set()

    @property
    def stop_requested(self) -> bool:
        return self._stop.is_set()

    def clear_stop(self) -> None:
        """Forget a stop request, so the next `run` goes ahead."""
        self._stop.clear()

    def snapshot(self) -> SessionState:
        """A consistent copy of the state, safe to read on another thread (a copy, not a fold
        of every event again: 2,000 events of a 200-member session took seconds)."""
        with self._lock:
            return self.state.copy()

    def record_game(
        self,
        *,
        policy_id: str | None,
        opponent: str,
        seat: int,
        transcript: list[Any],
        returns: Sequence[float],
        seed: int | None = None,
    ) -> GamePlayed:
        """Record a game played on the play screen (or any shown match)."""
        return self._emit(
            GamePlayed(
                policy_id=policy_id,
                opponent=opponent,
                seat=seat,
                transcript=list(transcript),
                returns=[float(r) for r in returns],
                seed=seed,
            )
        )

    def record_profile(self, event: "BehaviourProfiled") -> "BehaviourProfiled":
        """Record a behaviour profile computed for a member or a proposal (any thread;
        the review's behaviour panel and the diversity view compute them in workers)."""
        return self._emit(event)

    def mark_resumed_after_torn_line(self) -> None:
        """The session store discarded a torn last line; noted in session_resumed."""
        self._resumed_torn_line = True

    # --- running --------------------------------------------------------------

    def run(self, iterations: int | None = None, *, close: bool = True) -> RunOutcome:
        """Run until `iterations` oracle iterations are complete in total (default:
        the configuration's), a stop is requested, or the oracle has nothing more.

        With `close` (the default) the session is then recorded as closed;
        pass False to call `run` again later (the TUI's "one more
        iteration"), and `close()` at the end.  A run after a close records
        a `session_resumed`.  Errors are recorded (session_closed "error")
        and raised.
        """
        target = self.config.iterations if iterations is None else iterations
        message = ""
        oracle_finished = False
        try:
            self._begin()
            self._finish_open_integration()
            while not self._stop.is_set() and self.state.completed_iterations < target:
                finished_message = self._iteration()
                if finished_message is not None:
                    message, oracle_finished = finished_message, True
                    break
        except KeyboardInterrupt:
            self._close("stopped", "interrupted")
            self._release_evaluator()
            raise
        except BaseException as error:
            # A stop that cut an evaluation short ends the run like any stop (recorded
            # below); what was not evaluated is evaluated again on resume.
            if not (isinstance(error, EvaluationInterrupted) and self._stop.is_set()):
                # a CsroError is already one line for a person; anything else names its type
                self._close("error", str(error) if isinstance(error, CsroError) else f"{type(error).__name__}: {error}")
                self._release_evaluator()
                raise
        reason = "stopped" if self._stop.is_set() and self.state.completed_iterations < target else "completed"
        if reason == "completed" and not message:
            message = counted(self.state.completed_iterations, "iteration")
        if close:
            self._close(reason, message)
            self._release_evaluator()
        return RunOutcome(reason, message, self.state, oracle_finished)

    def close(self, reason: str = "completed", message: str = "") -> None:
        """Record the session as closed (after `run(close=False)`); idempotent."""
        if self.state.closed is None:
            self._close(reason, message)
        self._release_evaluator()

    def _release_evaluator(self) -> None:
        """Let the evaluator end its worker processes (it starts new ones if run again)."""
        try:
            self.evaluator.close()
        except Exception:  # best effort, like recording the close
            log.exception("could not close the evaluator")

    # --- events ---------------------------------------------------------------

    def _emit(self, event: Event) -> Event:
        with self._lock:
            if self.writer is not None:
                self.writer.append(event)
            else:
                event.seq = self.state.step + 1
            self.state.apply(event)
            subscribers = list(self._subscribers)
        for callback in subscribers:
            try:
                callback(event)
            except Exception:  # a broken subscriber must not break the run
                log.exception("event subscriber failed on %s", event.TYPE)
        return event

    def _close(self, reason: str, message: str) -> None:
        if self.state.started is None:
            return
        try:
            self._emit(SessionClosed(reason=reason, message=message))
        except Exception:  # closing is best effort; the log is already durable
            log.exception("could not record session_closed")

    # --- beginning and resuming -------------------------------------------------

    def _begin(self) -> None:
        """Record the session's start, or its resumption, once per opening."""
        if self._opened and self.state.closed is None:
            return
        self._opened = True
        if self.state.started is None:
            self._emit(
                SessionStarted(
                    session_id=self.session_id,
                    game=self.config.game,
                    oracle=self.config.oracle,
                    solver=self.config.solver,
                    config=self.config.to_record(),
                    versions=dict(self.versions),
                    model=self.config.model,
                    base_url=strip_credentials(self.config.base_url),
                    loosened_limits=loosened_limits(self.config.to_dict()) or None,
                )
            )
        else:
            overrides = {
                key: value
                for key, value in self.config.to_record().items()
                if self.state.config.get(key) != value
            }
            self._emit(
                SessionResumed(
                    overrides=overrides,
                    versions=dict(self.versions),
                    discarded_torn_line=self._resumed_torn_line,
                )
            )
        if 0 not in self.state.iterations:
            self._emit(IterationStarted(iteration=0))
        if not self.state.iterations[0].finished:
            self._add_seeds()

    def _add_seeds(self) -> None:
        """The initial population joins without review (origin "seed")."""
        sources = self._seed_sources if self._seed_sources is not None else self.spec.seed_policies()
        names = list(self.config.seed_policies) or list(sources)[:1]
        unknown = [name for name in names if name not in sources]
        if unknown:
            raise ConfigError(
                f"{self.config.game} has no seed policy {', '.join(map(repr, unknown))} "
                f"(seeds: {', '.join(sources) or 'none'})"
            )
        if not names:
            raise ConfigError(f"{self.config.game} has no seed policies to start the population")
        present = {(m.name, m.seat) for m in self.state.population if m.origin == "seed"}
        # Two populations: every seed joins both, seat 0's copies first.
        for seat in (0, 1) if self._two_populations else (None,):
            for name in names:
                if (name, seat) not in present:
                    self._add_policy(name=name, source=sources[name], origin="seed", parent=None, iteration=0,
                                     seat=seat)

    def _finish_open_integration(self) -> None:
        """Complete an iteration that stopped between its accept and its metrics."""
        current = self.state.open_iteration
        if current is None:
            return
        if self._two_populations and current.number > 0:
            return  # `_two_seat_iteration` picks it up where it stopped, seat by seat
        pending = self.state.accepted_pending()
        if pending is not None:
            self._join(pending.id)
        if current.number == 0 or self._joined_in(current.number):
            self._integrate(current.number)

    def _joined_in(self, number: int) -> bool:
        """Whether a proposal joined in iteration `number` (> 0).  Not by origin: the seed
        oracle's members have origin "seed" like the seed population's, whose iteration is 0."""
        return number > 0 and any(m.iteration == number for m in self.state.population)

    # --- one iteration -----------------------------------------------------------

    def _iteration(self) -> str | None:
        """Run (or continue) one iteration; a message when the oracle has finished."""
        current = self.state.open_iteration
        if current is None:
            number = max(self.state.iterations, default=0) + 1
            self._emit(IterationStarted(iteration=number))
            current = self.state.iterations[number]
        number = current.number
        if self._two_populations:
            return self._two_seat_iteration(number)
        pending = self._undecided_proposal(number)
        while not self._stop.is_set():
            if pending is not None:
                proposal_id, pending = pending, None
            else:
                current = self.state.iterations[number]
                if current.attempts >= self.config.max_attempts:
                    self._emit(IterationFinished(iteration=number, accepted=None, attempts=current.attempts,
                                                 progress=progress_note(self.state, number)))
                    return None
                asked = self._ask_oracle(number, current.attempts + 1)
                if isinstance(asked, _OracleDone):
                    self._emit(IterationFinished(iteration=number, accepted=None, attempts=current.attempts))
                    return asked.message
                if asked is None:
                    continue
                proposal_id = asked
            outcome, final_id = self._gate(proposal_id)
            if outcome is Gated.ACCEPTED:
                if not self._stop.is_set():  # else the next run joins it (accepted_pending)
                    self._join(final_id)
                    self._integrate(number)
                return None
        return None

    # --- two populations ------------------------------------------------------------

    @property
    def _two_populations(self) -> bool:
        return self.config.populations == 2

    def _two_seat_iteration(self, number: int) -> str | None:
        """One psro_v2 iteration: a proposal per seat, then the accepted join together
        (see the module docstring); a message when the oracle has nothing for either seat."""
        finished: dict[int, str] = {}
        joined = self._joined_in(number)
        for seat in () if joined else (0, 1):  # once a proposal has joined, both seats were decided
            if self._stop.is_set():
                return None
            message = self._seat_turn(number, seat)
            if message is not None:
                finished[seat] = message
        if self._stop.is_set():
            return None
        accepted = [p for p in self.state.proposals.values()
                    if p.iteration == number and p.decision is not None and p.decision.action == "accept"
                    and p.policy_id is None]
        for proposal in sorted(accepted, key=lambda p: p.proposal.seat):
            self._join(proposal.id)
        if self._joined_in(number):
            self._integrate(number)
            return None
        attempts = self.state.iterations[number].attempts
        if len(finished) == 2:
            self._emit(IterationFinished(iteration=number, accepted=None, attempts=attempts))
            return f"{finished[0]}; {finished[1]}"
        self._emit(IterationFinished(iteration=number, accepted=None, attempts=attempts,
                                     progress=progress_note(self.state, number)))
        return None

    def _seat_turn(self, number: int, seat: int) -> str | None:
        """Propose and review for one seat until it has an accepted proposal or its attempts
        are used up; the oracle's message when it has nothing for the seat."""
        if any(p.iteration == number and p.proposal.seat == seat and p.decision is not None
               and p.decision.action == "accept" for p in self.state.proposals.values()):
            return None  # decided before a stop: kept
        pending = self._undecided_proposal(number, seat)
        while not self._stop.is_set():
            if pending is not None:
                proposal_id, pending = pending, None
            else:
                attempts = self.state.seat_attempts(number, seat)
                if attempts >= self.config.max_attempts:
                    return None
                asked = self._ask_oracle(number, attempts + 1, seat)
                if isinstance(asked, _OracleDone):
                    return f"seat {seat}: {asked.message}"
                if asked is None:
                    continue
                proposal_id = asked
            outcome, _ = self._gate(proposal_id)
            if outcome is Gated.ACCEPTED:
                return None
        return None

    def _candidate_member_id(self) -> str:
        """The id a proposal under review will have if it joins (its benchmark preview
        plays that member's matches); with two populations, after those accepted before it."""
        if not self._two_populations:
            return self._next_member_id()
        waiting = sum(1 for p in self.state.proposals.values()
                      if p.decision is not None and p.decision.action == "accept" and p.policy_id is None)
        return f"p{len(self.state.population) + waiting}"

    # --- one population's proposals --------------------------------------------------

    def _undecided_proposal(self, number: int, seat: int | None = None) -> str | None:
        """Where a resumed iteration picks up: its last proposal (for `seat`, two
        populations) if it was never decided, or the edit a reviewer made just
        before the stop (the oracle is not asked again for what it already proposed)."""
        ids = [pid for pid in self.state.iterations[number].proposals if self.state.proposals[pid].proposal.seat == seat]
        if not ids:
            return None
        last = self.state.proposals[ids[-1]]
        if last.decision is None:
            return last.id
        if last.decision.action == "edit":
            edit = Decision.edit(last.decision.edited_source or "", last.decision.reason)
            return self._record_edit(last.id, edit, editor=last.decision.decided_by)
        return None

    def _next_proposal_id(self, number: int) -> str:
        return f"i{number}.{len(self.state.iterations[number].proposals) + 1}"

    def _ask_oracle(self, number: int, attempt: int, seat: int | None = None) -> str | _OracleDone | None:
        """A new proposal's id (for `seat`, two populations); None after a failed attempt;
        `_OracleDone` when it has finished."""
        self._oracle_finish.clear()
        self._oracle_cancel.clear()
        if self._stop.is_set():  # a stop that came just before the clear still cancels
            self._oracle_cancel.set()
        context = self._context(number, attempt, seat)
        try:
            proposal = self.oracle.propose(context)
        except self._finished_error_types() as error:
            return _OracleDone(f"oracle {self.config.oracle} has nothing more to propose: {error}")
        except ConfigError:
            raise
        except Exception as error:
            if self._stop.is_set():
                # Stopped mid-work (a cancelled LLM call): not an attempt, but its calls are recorded.
                calls = list(getattr(error, "llm_calls", None) or [])
                if calls:
                    self._emit(OracleFailed(iteration=number, attempt=attempt, error=f"{type(error).__name__}: {error}",
                                            llm_calls=calls, cancelled=True, seat=seat))
                return None
            failed = getattr(error, "failed", None)
            if isinstance(error, NoUsableProposal) and isinstance(failed, Proposal) and failed.source.strip():
                # Its last failed code goes to review (a person may fix it; a reviewer that
                # rejects it feeds the reason back to the oracle): one attempt, as any proposal.
                calls = list(getattr(error, "llm_calls", None) or failed.llm_calls)
                return self._create_proposal(number, attempt, dataclasses.replace(failed, llm_calls=calls), seat)
            self._emit(
                OracleFailed(
                    iteration=number,
                    attempt=attempt,
                    error=f"{type(error).__name__}: {error}",
                    traceback=traceback.format_exc(),
                    llm_calls=list(getattr(error, "llm_calls", None) or []),
                    seat=seat,
                )
            )
            if getattr(error, "persistent", False):  # the next attempt would fail the same way at once
                raise CsroError(f"oracle {self.config.oracle}: {error}") from error
            current = self.state.iterations[number]
            attempts = current.attempts if seat is None else self.state.seat_attempts(number, seat)
            proposed = any(self.state.proposals[pid].proposal.seat == seat for pid in current.proposals)
            # An oracle whose candidates all failed (a small model's bad code) ends only this
            # iteration; anything else (a server that refuses, a wrong key) would fail again.
            if attempts >= self.config.max_attempts and not proposed and not isinstance(error, NoUsableProposal):
                where = f"iteration {number}" + (f", seat {seat}" if seat is not None else "")
                raise CsroError(
                    f"oracle {self.config.oracle} failed {attempts} times in {where}; "
                    f"last: {type(error).__name__}: {error}"
                ) from error
            return None
        return self._create_proposal(number, attempt, proposal, seat)

    def _create_proposal(self, number: int, attempt: int, proposal: Proposal, seat: int | None) -> str:
        if proposal.seat != seat:  # the seat it was asked for (an oracle may leave it unset)
            proposal = dataclasses.replace(proposal, seat=seat)
        proposal_id = self._next_proposal_id(number)
        self._emit(ProposalCreated(proposal_id=proposal_id, iteration=number, attempt=attempt, proposal=proposal))
        return proposal_id

    def _finished_error_types(self) -> tuple[type[BaseException], ...]:
        if self._finished_errors is None:
            self._finished_errors = finished_error_types()
        return self._finished_errors

    def _context(self, number: int, attempt: int, seat: int | None = None) -> OracleContext:
        if seat is not None:
            return self._seat_context(number, attempt, seat)
        population = list(self.state.population)
        weights = self.state.meta_strategy
        known = known_policies(self.state)
        return OracleContext(
            spec=self.spec,
            iteration=number,
            population=population,
            meta_strategy=[weights[m.id] for m in population],
            rejections=self.state.rejections,
            preview=lambda source: self.gate.check(
                source, population, weights, key=f"oracle-{number}.{attempt}", known=known
            ),
            cancel=self._oracle_cancel,
            finish=self._oracle_finish,
            seed=derive_seed(self.config.seed, "oracle", number, attempt),
            play_candidate=self._play_candidate,
        )

    def _seat_context(self, number: int, attempt: int, seat: int) -> OracleContext:
        """Two populations: the other seat's members and mixture to answer, the seat's own
        members, and the rejections of proposals for this seat."""
        opponents = list(self.state.seat_members(1 - seat))
        weights = self.state.meta_strategy
        known = known_policies(self.state, seat)
        own = list(self.state.seat_members(seat))
        return OracleContext(
            spec=self.spec,
            iteration=number,
            population=opponents,
            meta_strategy=[weights[m.id] for m in opponents],
            rejections=[(proposal, reason) for proposal, reason in self.state.rejections if proposal.seat == seat],
            preview=lambda source: self.gate.check(
                source, opponents, weights, key=f"oracle-{number}.s{seat}.{attempt}", known=known, seat=seat
            ),
            cancel=self._oracle_cancel,
            finish=self._oracle_finish,
            seed=derive_seed(self.config.seed, "oracle", number, attempt, "seat", seat),
            play_candidate=lambda source, members, episodes: self._play_candidate(source, members, episodes, seat),
            seat=seat,
            own_population=own,
            own_meta_strategy=[weights[m.id] for m in own],
            seat_value=self.state.seat_value(seat),
        )

    def _play_candidate(
        self, source: str, opponents: list[tuple[PolicyRecord, int]], episodes: int, seat: int | None = None
    ) -> list:
        """Sampled matches of candidate code against members, on the evaluator's backend
        (in `seat` only, two populations)."""
        candidate = candidate_record(source, seat=seat)
        return self.evaluator.run([MatchJob(candidate, member, seed, episodes, seat=seat) for member, seed in opponents])

    # --- joining and integrating ----------------------------------------------------

    def _add_policy(self, *, name: str, source: str, origin: str, parent: str | None, iteration: int,
                    proposal_id: str | None = None, seat: int | None = None) -> PolicyRecord:
        policy = PolicyRecord(
            id=self._next_member_id(),
            name=name,
            source=source,
            origin=origin,
            parent=parent,
            iteration=iteration,
            seat=seat,
        )
        if self.writer is not None:
            self.writer.write_policy(policy)
        self._emit(PolicyAdded(policy=policy, proposal_id=proposal_id))
        return policy

    def _next_member_id(self) -> str:
        """The id the next policy to join gets."""
        return f"p{len(self.state.population)}"

    def _join(self, proposal_id: str) -> PolicyRecord:
        entry = self.state.proposals[proposal_id]
        return self._add_policy(
            name=entry.proposal.name,
            source=entry.proposal.source,
            origin=entry.proposal.oracle,
            parent=entry.proposal.parent,
            iteration=entry.iteration,
            proposal_id=proposal_id,
            seat=entry.proposal.seat,
        )

    def _integrate(self, number: int) -> None:
        """New payoff entries, benchmark scores, meta-solve, metrics; then the iteration ends.

        Each step checks what the state still lacks, so a resumed session
        finishes exactly the steps a crash left undone.
        """
        steps = [self._evaluate_missing_payoffs]
        if self._benchmark_on:
            steps.append(self._evaluate_missing_benchmarks)
        for step in steps:
            if self._stop.is_set():
                return
            step()
        if self._stop.is_set():
            return
        previous_meta = self._meta_before(number)
        if not self.state.meta_is_current:
            self._solve()
        if self._stop.is_set():
            return
        if self.state.metrics_for(number) is None:
            self._emit(self._metrics(number, previous_meta))
        new = [m.id for m in self.state.population if m.iteration == number and number > 0]
        self._emit(
            IterationFinished(
                iteration=number,
                accepted=new[-1] if new else None,
                joined=new if self.state.metagame.populations == 2 else None,
                attempts=self.state.iterations[number].attempts,
                progress=progress_note(self.state, number),
            )
        )

    def _evaluate_missing_payoffs(self) -> None:
        missing = self.state.missing_payoffs()
        if not missing:
            return
        members = {m.id: m for m in self.state.population}
        exact = self.evaluator.exact
        jobs = [payoff_job(self.config, self.spec, members[row], members[col], exact=exact) for row, col in missing]
        outcomes = self.evaluator.run(jobs)
        entries = [self._entry(job, outcome) for job, outcome in zip(jobs, outcomes)]
        self._emit(PayoffsEvaluated(entries=entries))

    def _entry(self, job: MatchJob, outcome: Any) -> PayoffRecord:
        """A payoff entry; a policy that failed forfeits the matchup (the game's worst payoff)."""
        mean = float(outcome.mean)
        if outcome.failure is not None:
            forfeit = self.evaluator.forfeit()
            b_failed = isinstance(job.b, PolicyRecord) and outcome.failure.policy == job.b.id
            mean = -forfeit if b_failed else forfeit
        return PayoffRecord(
            row=job.a.id,
            col=job.b.id,  # type: ignore[union-attr]
            mean=mean,
            stderr=float(outcome.stderr),
            episodes=int(outcome.episodes),
            seeds=[int(s) for s in outcome.seeds],
            exact=bool(outcome.exact),
            failure=outcome.failure,
        )

    def _evaluate_missing_benchmarks(self) -> None:
        bots = self.evaluator.bots()
        if not bots:
            return
        episodes = self.config.benchmark_episodes
        for member in self.state.population:
            if member.id in self.state.benchmark:
                continue
            if self._stop.is_set():
                return
            outcomes = self.evaluator.run(benchmark_jobs(self.config, member, bots))
            failure = next((o.failure for o in outcomes if o.failure is not None), None)
            self._emit(
                BenchmarkEvaluated(
                    policy_id=member.id,
                    per_bot={} if failure else {bot: float(o.mean) for bot, o in zip(bots, outcomes)},
                    per_bot_stderr=None if failure else {bot: float(o.stderr) for bot, o in zip(bots, outcomes)},
                    episodes=episodes,
                    seed=self.config.seed,
                    failure=failure,
                )
            )

    def _meta_before(self, number: int) -> MetaSolved | None:
        """The meta-strategy the iteration's new policy answered (solved before it joined)."""
        joined = {m.id for m in self.state.population if m.iteration == number}
        for meta in reversed(self.state.meta_history):
            if not joined.intersection(meta.population):
                return meta
        return None

    def _solve(self) -> None:
        """One meta-solve: over the population's square matrix, or with two populations
        over the seat-0 x seat-1 matrix (`strategy`: seat 0's mixture, then seat 1's)."""
        ids = self.state.solver_ids()
        matrix = self.state.meta_matrix(ids)
        if np.isnan(matrix).any():
            raise CsroError("the payoff matrix has missing entries; cannot solve the meta-game")
        two_populations = self.state.metagame.populations == 2
        # alpha-rank's chain differs with two populations; the other solvers take either
        solution = self._solver()(self.config.solver, matrix, **({"populations": 2} if two_populations else {}))
        strategy = joint_strategy(solution, two_populations=two_populations)
        self._emit(
            MetaSolved(
                solver=self.config.solver,
                population=ids,
                strategy=strategy,
                value=float(solution.value),
                nash_conv=float(solution.nash_conv),
            )
        )

    def _solver(self) -> MetaSolve:
        if self._meta_solve is None:
            from csro_tui.meta.solvers import solve  # start-up time: importing it loads scipy

            self._meta_solve = solve
        return self._meta_solve

    def _metrics(self, number: int, previous_meta: MetaSolved | None) -> MetricsComputed:
        meta = self.state.meta
        assert meta is not None
        weights = dict(zip(meta.population, meta.strategy))
        new = [m.id for m in self.state.population if m.iteration == number and number > 0]
        new_id = new[-1] if new else None
        exploitability = None
        if self.evaluator.exact:
            members = [m for m in self.state.population if weights.get(m.id, 0.0) > 0]
            exploitability = self.evaluator.exploitability(members, [weights[m.id] for m in members])
        return MetricsComputed(
            iteration=number,
            population_size=len(self.state.population),
            meta_strategy=weights,
            meta_nash_conv=meta.nash_conv,
            new_policy=new_id,
            new_policy_payoff=payoff_against(self.state, new_id, previous_meta) if new_id else None,
            exploitability=exploitability,
            benchmark=benchmark_scores(self.state, weights) if self._benchmark_on else None,
        )

    # --- settings -------------------------------------------------------------------

    def _benchmark_enabled(self) -> bool:
        if self.config.benchmark == "off":
            return False
        if self.config.benchmark == "on":
            return True
        return not self.evaluator.exact and bool(self._bots())

    def _bots(self) -> list[str]:
        try:
            return self.evaluator.bots()
        except Exception:  # a game without a benchmark may raise instead of answering []
            return []

    def _smoke_episodes(self) -> int:
        return self.config.smoke_episodes or 2
