"""The app's one door to the core (no textual import).

Every method here may block (it reads files, evaluates, or waits for the
engine), so the app calls them from thread workers only.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from csro_tui.config import load_run_config
from csro_tui.engine import new_engine, resume_engine
from csro_tui.numbers import counted, duration, fixed, rate_text
from csro_tui.oracles.base import oracle_llm
from csro_tui.oracles.llm.client import LLMClient, LLMConfig, LLMError, estimate_tokens
from csro_tui.oracles.llm.keys import KeyTrust
from csro_tui.oracles.registry import game_refusal, oracle_names, oracles_needing
from csro_tui.records import Bot
from csro_tui.sandbox.limits import loosened_limits, loosened_text
from csro_tui.sessions.events import GamePlayed
from csro_tui.sessions.store import SessionStore
from csro_tui.text import one_line
from csro_tui.tui import adapt
from csro_tui.tui.model import DashboardData, LaunchOptions, StartChoices


class Backend:
    def __init__(self, sessions_dir: Path | str = "sessions", *, engine_parts: dict[str, Any] | None = None,
                 key_trust: KeyTrust | None = None) -> None:
        self.store = SessionStore(Path(sessions_dir))
        # Where the user lets an LLM key go when a session is resumed (its recorded base URL is
        # the file's, not the user's); None: the environment and the user's config (issue 35).
        self.key_trust = key_trust
        # Parts handed to `new_engine` instead of those made from the
        # configuration (spec, oracle, evaluator, meta_solve): tests use fakes.
        self.engine_parts = dict(engine_parts or {})

    # ---------------------------------------------------------------- choices
    def choices(self) -> StartChoices:
        from csro_tui.games.registry import list_games  # start-up time: importing it loads open_spiel, pyspiel

        games = [spec.name for spec in list_games()]  # the built-in games: the registry's list, no copy here
        solvers: list[str] = []
        try:
            from csro_tui.meta.solvers import SOLVERS  # start-up time: importing it loads scipy

            solvers = list(SOLVERS)
        except ImportError:
            solvers = ["nash", "uniform"]
        oracles = oracle_names()
        return StartChoices(
            games=games,
            oracles=oracles,
            llm_oracles=set(oracles_needing("model")),
            file_oracles=set(oracles_needing("file")),
            solvers=solvers,
            sessions=[(info.id, session_summary(info)) for info in self.store.list_sessions()],
        )

    # ---------------------------------------------------------------- recorded sessions
    def list_sessions(self) -> list[Any]:
        return self.store.list_sessions()

    def read_events(self, session_id: str) -> list[Any]:
        return self.store.read(session_id).events

    # ---------------------------------------------------------------- live runs
    def start_run(self, options: LaunchOptions, reviewer: Any, on_event: Callable[[Any, DashboardData], None]) -> "LiveRun":
        return LiveRun.start(self, options, reviewer, on_event)

    @staticmethod
    def game_spec(name: str) -> Any:
        from csro_tui.games.registry import get_game  # start-up time: importing it loads open_spiel, pyspiel

        return get_game(name)

    @staticmethod
    def oracle_refusals(spec: Any) -> dict[str, str]:
        """Oracle name -> why it cannot serve the game `spec` (its declared needs), for those that cannot."""
        refusals = {name: game_refusal(name, spec) for name in oracle_names()}
        return {name: refusal for name, refusal in refusals.items() if refusal}

    @staticmethod
    def populations_refusal(populations: int, oracle: str, solver: str) -> str | None:
        """Why the engine would refuse `--populations 2` with this oracle and meta-solver (its own
        one line, `engine.setup.populations_refusal`), or None; None too where this engine has no
        such check (starting then says why, as any start error)."""
        from csro_tui.engine import setup  # start-up time: the check may load scipy

        refusal = getattr(setup, "populations_refusal", None)
        return refusal(populations, oracle, solver) if refusal is not None else None

    @staticmethod
    def seed_names(game: str) -> list[str]:
        from csro_tui.games.registry import get_game  # start-up time: importing it loads open_spiel, pyspiel

        return list(get_game(game).seed_policies())

    @staticmethod
    def list_models(base_url: str | None, model: str | None = None, key_trust: KeyTrust | None = None) -> list[str]:
        """The model ids an OpenAI-compatible server offers (GET /models; one attempt).
        `model`: the one typed on the form, which a failure's advice may name; with none
        typed, the advice never names the client's default (a model nobody chose)."""
        settings = LLMConfig(base_url=base_url or None, **({"model": model} if model else {}))
        client = LLMClient(settings, key_trust=key_trust)
        try:
            return client.list_models()
        except LLMError as error:
            if model or repr(settings.model) not in str(error):
                raise
            raise LLMError(error.kind, f"the server at {client.public_base_url} did not list its models "
                           f"({error.kind.replace('_', ' ')}; is the base URL the one ending in /v1?)") from None

    @staticmethod
    def record_game(live: "LiveRun | None", record: dict[str, Any]) -> bool:
        """Record a game played on the play screen; False when no session is live."""
        if live is None:
            return False
        live.record_game(record)
        return True

    def record_played_game(self, live: "LiveRun | None", session_id: str | None, record: dict[str, Any]) -> bool:
        """Record a game played on the play screen in `session_id`: through the
        live run's engine when it is that session, else appended to the closed
        session's log by the store.  False when there is no session to record in."""
        if live is not None and (session_id is None or live.session_id == session_id):
            live.record_game(record)
            return True
        if session_id is None:
            return False

        self.store.append_to_closed(session_id, GamePlayed(**record))
        return True

    def resume_run(self, session_id: str, reviewer: Any, on_event: Callable[[Any, DashboardData], None]) -> "LiveRun":
        return LiveRun.resume(self, session_id, reviewer, on_event, key_trust=self.key_trust)

    review_info = staticmethod(adapt.review_info)
    to_engine_decision = staticmethod(adapt.engine_decision)

    @staticmethod
    def describe_activity(event: Any) -> str:
        """What the engine is doing after `event`, for the status line."""
        kind = getattr(event, "TYPE", "")
        if kind == "progress":
            return event.text
        if kind == "proposal_decided" and getattr(event, "action", "") in ("reject", "edit"):
            # a rejection goes back to the oracle (unless the attempts are used up); an edit is checked again
            return "rejected: oracle working…" if event.action == "reject" else "validating the edit (sandboxed smoke run)…"
        return {
            "iteration_started": "oracle working…",
            "proposal_created": "validating the proposal (sandboxed smoke run)…",
            "proposal_validated": "previewing against the population…",
            "proposal_previewed": "waiting for your review",
            "proposal_decided": "engine working…",
            "policy_added": "evaluating new payoff entries…",
            "payoffs_evaluated": "solving the meta-game…",
            "meta_solved": "computing metrics…",
            "iteration_finished": "idle",
        }.get(kind, "")


def iterations_of(done: int, requested: int) -> str:
    """`2 of 10 iterations`; past the request (`n` ran more), `12 iterations (10 requested)`."""
    if done > requested:
        return f"{counted(done, 'iteration')} ({requested} requested)"
    return f"{done} of {counted(requested, 'iteration')}"


def iterations_outcome(before: Any, after: Any, outcome: Any, target: int) -> str:
    """What a run of iterations did, for a toast: each finished iteration's result
    ("iteration 3 done: tight_bluffer accepted"), then why it stopped if it did.
    An oracle with nothing more to propose ends the run as `csro run` says it:
    "completed: oracle seed has nothing more to propose: ..."."""
    names = {member.id: member.name for member in after.population}
    finished_by_oracle = getattr(outcome, "oracle_finished", False)
    last = max(after.iterations, default=0)
    lines = []
    for number, iteration in sorted(after.iterations.items()):
        if number == 0 or not iteration.finished:
            continue
        if number in before.iterations and before.iterations[number].finished:
            continue
        # two populations: up to one member per seat joins (the event names only the last)
        joined = [m for m in after.population if m.iteration == number] \
            if adapt.session_populations(after) == 2 else []
        if joined:
            lines.append(f"iteration {number} done: "
                         + ", ".join(f"{m.name} (seat {m.seat})" for m in joined) + " accepted")
        elif iteration.accepted is not None:
            lines.append(f"iteration {number} done: {names.get(iteration.accepted, iteration.accepted)} accepted")
        elif finished_by_oracle and number == last and not iteration.proposals:
            continue  # the iteration the oracle ended: the closing line says why
        else:
            lines.append(f"iteration {number} ended with nothing accepted ({counted(iteration.attempts, 'attempt')} used)")
    if outcome.reason == "stopped":
        open_iteration = after.open_iteration
        where = f" during iteration {open_iteration.number}" if open_iteration is not None else ""
        lines.append(f"stopped{where}; n continues")
    elif finished_by_oracle or outcome.reason != "completed" or after.completed_iterations < target:
        lines.append(f"{outcome.reason}: {outcome.message}" if outcome.message else outcome.reason)
    if not lines:
        lines.append("no iteration finished")
    return "; ".join(lines)


def session_summary(info: Any, *, status: bool = True) -> str:
    """One line about a recorded session; with `status`, how it closed leads (so it is never cut off)."""
    if info.error:
        return f"unreadable: {info.error}"

    iterations = counted(info.iterations, "iteration") + (", then the oracle finished" if info.oracle_finished else "")
    members = counted(info.population_size, "policy", "policies")
    if info.seat_sizes:  # two populations
        members += " ({} in seat 0, {} in seat 1)".format(*info.seat_sizes)
    # "2 populations" next to the game: still in view where 80 columns cut the line
    parts = [info.game, "2 populations" if info.populations == 2 else "", info.oracle, info.solver, iterations, members]
    if info.best_metric:
        parts.append(f"best {info.best_metric[0]} {info.best_metric[1]:.4f}")
    if status:
        parts.insert(0, info.closed or "open")
    return " · ".join(p for p in parts if p)


PROGRESS_EVERY = 0.25  # seconds between progress lines on the status line
RATE_AFTER = 2.0  # seconds of a batch before its rate (and time left) means anything


def batch_description(activity: str, jobs: Any) -> tuple[str, str]:
    """(what, noun) for a batch's progress line: its matches against benchmark bots
    are counted as bots, a proposal's preview against the members as members."""
    what = activity.rstrip("…") or "evaluating"
    if jobs and all(isinstance(getattr(job, "b", None), Bot) for job in jobs):
        what = "previewing against the benchmark bots" if what.startswith("previewing") else "playing the benchmark bots"
        return what, "bots"
    if what.startswith("previewing"):
        return what, "members"
    return what, "matchups"


@dataclass
class BatchProgress:
    """One evaluation batch's counts, for the status line (which shows the elapsed time
    itself unless the line says the time left)."""

    what: str
    noun: str
    total: int
    started: float
    done: float = 0.0

    def line(self, now: float, note: str = "") -> str:
        done = min(int(self.done), self.total)  # whole matchups: a part-played one is not done
        parts = [f"{self.what}: {done}/{self.total} {self.noun}"]
        if note:
            parts.append(note)
        elapsed = now - self.started
        if elapsed >= RATE_AFTER and 0 < self.done < self.total:
            rate = self.done / elapsed
            parts.append(rate_text(rate))
            parts.append(f"{duration((self.total - self.done) / rate)} left")  # last: the status line looks for it
        return " · ".join(parts)


@dataclass(frozen=True)
class EvaluationProgress:
    """Not a session event: what the evaluation has done so far, for the status line."""

    text: str
    TYPE = "progress"


# ---------------------------------------------------------------- LLM calls in flight
LLM_PURPOSES = {
    "best_response": "best response",
    "refine": "refinement",
    "mutate": "mutation",
    "summarize": "opponent summary",
}


@dataclass
class CallInFlight:
    """One LLM call the oracle is waiting for, as far as it has come (updated on the oracle's thread)."""

    number: int  # the k-th call of this proposal
    purpose: str
    started: float
    prompt_tokens: int  # estimated from the messages' characters
    streamed: bool
    tokens: int = 0  # streamed chunks so far (one token each from llama.cpp and OpenAI)
    text: str = ""
    first_token: float | None = None

    def seen(self, text: str, now: float) -> None:
        if not text.startswith(self.text):
            self.tokens = 0  # the client retried: the reply starts over
            self.first_token = None
        if self.first_token is None:
            self.first_token = now
        self.tokens += 1
        self.text = text


# Seconds a probe waits for the LLM server to take a TCP connection, and between probes.
CONNECT_PROBE_TIMEOUT = 3.0
CONNECT_PROBE_INTERVAL = 1.0


class ServerReach:
    """Whether the LLM server's address takes a TCP connection, probed on a daemon thread
    while calls wait for their first byte, so the status line says "connecting to HOST"
    (with why it cannot, at once) rather than "reading the prompt" of a server that is not
    there.  The client's own call goes on meanwhile: it is what fails, or succeeds.  Not
    probed behind an HTTP proxy (the proxy connects, not this machine)."""

    def __init__(self, base_url: str) -> None:
        import os
        from urllib.parse import urlsplit

        parts = urlsplit(base_url or "")
        self.host = parts.hostname or ""
        try:
            self.port = parts.port or (443 if parts.scheme == "https" else 80)
        except ValueError:  # a port that is not a number: the client says so itself
            self.port = 0
        self.address = f"{self.host}:{self.port}" if parts.port else self.host
        proxied = any(os.environ.get(name) for name in ("HTTPS_PROXY", "HTTP_PROXY", "https_proxy", "http_proxy", "ALL_PROXY"))
        self._lock = threading.Lock()
        # None: connected (or not probed); "": still trying; else why it cannot connect
        self.problem: str | None = None if proxied or not self.host or not self.port else ""
        self._probing = False

    def probe(self, waiting: Callable[[], bool]) -> None:
        """Probe until the server takes a connection or `waiting()` is false (no call waits)."""
        with self._lock:
            if self.problem is None or self._probing:
                return
            self._probing = True
        threading.Thread(target=self._run, args=(waiting,), daemon=True, name="llm-server-probe").start()

    def connected(self) -> None:
        """The server answered (a first byte, a finished call)."""
        with self._lock:
            self.problem = None

    def _run(self, waiting: Callable[[], bool]) -> None:
        import socket
        import time

        try:
            while waiting():
                try:
                    socket.create_connection((self.host, self.port), timeout=CONNECT_PROBE_TIMEOUT).close()
                except OSError as error:
                    with self._lock:
                        if self.problem is not None:
                            self.problem = connect_problem(error)
                    time.sleep(CONNECT_PROBE_INTERVAL)
                    continue
                self.connected()
                return
        finally:
            with self._lock:
                self._probing = False


def connect_problem(error: OSError) -> str:
    """Why a TCP connection failed, in a few words."""
    import socket

    if isinstance(error, ConnectionRefusedError):
        return "connection refused"
    if isinstance(error, socket.gaierror):
        return "unknown host"
    if isinstance(error, TimeoutError):
        return f"no answer within {CONNECT_PROBE_TIMEOUT:g} s"
    return one_line(error.strerror or str(error), 60)


@dataclass(frozen=True)
class LLMActivity:
    """The oracle's LLM calls in flight, for the status line and the dashboard's reply panel."""

    oracle: str
    budget: int | None  # calls a proposal may use (None: unknown)
    calls: tuple[CallInFlight, ...]  # oldest first
    scored: tuple[str, ...] = ()  # how the oracle scored this proposal's earlier replies ("reply 1: +0.125 vs meta")
    attempt: int = 1  # the iteration's proposal the oracle is making (the engine allows max_attempts)
    max_attempts: int | None = None
    replies: int = 0  # this proposal's calls that came back with a reply
    server: str = ""  # the LLM server's host (and port)
    # None: the server took a connection; "": connecting; else why it cannot (ServerReach.problem)
    connecting: str | None = None

    @property
    def has_reply(self) -> bool:
        """Some reply of this proposal has come (scored, or being written): `f` has something to finish."""
        return self.replies > 0 or any(call.first_token is not None for call in self.calls)

    @property
    def reply(self) -> str:
        """The oldest call's reply so far (untrusted text: shown through csro_tui.text)."""
        return self.calls[0].text if self.calls else ""

    def line(self, now: float, *, short: bool = False) -> str:
        """`LLM call 2 of ≤10 (refinement): 143 tokens · 9.8/s · 61 s`; the call's own time last."""
        call = self.calls[0]
        of = f" of ≤{self.budget}" if self.budget else ""
        label = f"LLM call {call.number}{of}" if short else f"{self.oracle}: LLM call {call.number}{of} ({LLM_PURPOSES.get(call.purpose, call.purpose)})"
        if self.attempt > 1 and not short:  # after a rejection: which of the iteration's proposals this is
            label = f"proposal {self.attempt}" + (f" of {self.max_attempts}" if self.max_attempts else "") + f", {label}"
        if len(self.calls) > 1:
            label += f" +{len(self.calls) - 1} more"
        elapsed = int(now - call.started)
        if call.first_token is None and self.connecting is not None:
            state = f"connecting to {self.server}" + (f": {self.connecting}, retrying" if self.connecting else "")
        elif call.first_token is None:
            if not call.streamed:
                state = "waiting for the reply (not streamed)"
            elif short:
                state = f"reading ~{call.prompt_tokens:,}-token prompt"
            else:
                state = f"reading the ~{call.prompt_tokens:,}-token prompt, no reply yet"
        else:
            writing = now - call.first_token
            rate = f" · {call.tokens / writing:.1f}/s" if writing >= 2 and call.tokens > 1 else ""
            state = f"{call.tokens:,} tokens{rate}"
        return f"{label}: {state} · {elapsed} s"


class LLMWatch:
    """Sees an LLM oracle's calls while they run: wraps its backend's `complete`
    with an `on_text` observer (the client streams the reply into it), so the
    app can show the call's state and the reply as it arrives.  Thread-safe:
    calls run on the oracle's threads, `activity` is read by the app's timer."""

    def __init__(self, backend: Any, oracle: str, budget: int | None) -> None:
        self.oracle = oracle
        self.budget = budget
        self._streamed = bool(getattr(getattr(backend, "config", None), "stream", True))
        self.reach = ServerReach(str(getattr(backend, "base_url", "") or ""))
        self._lock = threading.Lock()
        self._in_flight: list[CallInFlight] = []
        self._made = 0  # calls started since the last engine event (this proposal's)
        self._answered = 0  # of those, calls that came back with a reply
        # this proposal's replies so far: [label, note]; a note of None waits for the oracle's score
        self._replies: list[list[Any]] = []
        complete = backend.complete

        def watched(messages: Any, *, purpose: str, on_text: Callable[[str], None] | None = None, cancel: Any = None, **kwargs: Any) -> Any:
            call = self._begin(messages, purpose)

            def seen(text: str) -> None:
                import time

                with self._lock:
                    call.seen(text, time.monotonic())
                self.reach.connected()
                if on_text is not None:
                    on_text(text)

            try:
                result = complete(messages, purpose=purpose, on_text=seen, cancel=cancel, **kwargs)
            except Exception as error:
                self._ended(call, f"the call failed: {error}")
                raise
            self.reach.connected()
            self._ended(call, None)
            return result

        backend.complete = watched

    @classmethod
    def attach(cls, oracle: Any) -> "LLMWatch | None":
        """A watch on the LLM client `oracle` declares (`oracles.base.oracle_llm`); None for an oracle without one."""
        use = oracle_llm(oracle)
        if use is None:
            return None
        return cls(use.client, oracle.name, use.budget)

    def _begin(self, messages: Any, purpose: str) -> CallInFlight:
        import time


        try:
            prompt = sum(estimate_tokens(str(m.get("content", ""))) for m in messages)
        except (AttributeError, TypeError):
            prompt = 0
        with self._lock:
            if not self._in_flight:  # a serial oracle asks again: what it did not score, it will not
                for reply in self._replies:
                    if reply[1] is None:
                        reply[1] = "no new code to score (none usable, or scored before)"
            self._made += 1
            call = CallInFlight(self._made, purpose, time.monotonic(), prompt, self._streamed)
            self._in_flight.append(call)
        self.reach.probe(self._waiting)
        return call

    def _waiting(self) -> bool:
        """A call waits for the server (the probe goes on while one does)."""
        with self._lock:
            return any(call.first_token is None for call in self._in_flight)

    def _ended(self, call: CallInFlight, failure: str | None) -> None:
        with self._lock:
            if call in self._in_flight:
                self._in_flight.remove(call)
            if call.purpose != "summarize":  # an opponent summary is no candidate
                self._answered += failure is None
                self._replies.append([f"reply {call.number}", one_line(failure, 80) if failure else None])

    @property
    def made(self) -> int:
        """Calls started for this proposal so far."""
        with self._lock:
            return self._made

    def new_proposal(self) -> None:
        """An engine event came: the oracle's next calls belong to a new proposal."""
        with self._lock:
            self._made = len(self._in_flight)
            self._replies = []
            self._answered = 0

    def scored(self, preview: Any) -> None:
        """The oracle scored a candidate (`context.preview`): the oldest reply waiting for
        its score gets it (a refinement chain scores each reply before it asks again);
        a score before any reply is the chain's start (a population member)."""
        with self._lock:
            waiting = next((reply for reply in self._replies if reply[1] is None), None)
            if waiting is None:
                self._replies.append(["start", score_note(preview)])
            else:
                waiting[1] = score_note(preview)

    def activity(self) -> LLMActivity | None:
        """The calls in flight (copies), or None when the oracle is not waiting for the LLM."""
        with self._lock:
            if not self._in_flight:
                return None
            calls = tuple(CallInFlight(**vars(call)) for call in self._in_flight)
            scored = tuple(f"{label}: {note or 'being scored'}" for label, note in self._replies)
            answered = self._answered
        return LLMActivity(self.oracle, self.budget, calls, scored, replies=answered, server=self.reach.address,
                           connecting=self.reach.problem)


def score_note(preview: Any) -> str:
    """A candidate's preview in a few words: payoff against the meta-strategy, a copy, or its failure."""
    failure = getattr(preview, "failure", None)
    if failure is not None:
        return one_line(f"failed: {failure.summary()}", 60)
    note = f"{fixed(getattr(preview, 'expected_payoff', None), 3, sign=True)} vs meta"
    if getattr(preview, "duplicate_of", None):
        note += f", a copy of {one_line(preview.duplicate_of, 20)}"
    return note


class LiveRun:
    """A session the engine is running, seen from the app.

    Every method blocks (the engine evaluates, asks the oracle, waits for the
    reviewer, writes the log) except `cancel`, so the app calls them from a
    thread worker.  The subscriber gets each event with the dashboard as it
    is after that event, folded on the engine's thread, not the UI's.
    """

    def __init__(self, engine: Any, on_event: Callable[[Any, DashboardData], None]) -> None:
        self.engine = engine
        # Our own fold, advanced one event at a time on the engine's thread
        # (a fresh fold of the whole log per event would cost O(events)).
        self._lock = threading.Lock()
        self._state = engine.snapshot()
        self._cells = adapt.PayoffCells()  # the payoff matrix is made again only when it changed
        seats = adapt.member_seats(self._state)
        self._log = [adapt.event_line(event, seats) for event in self._state.events]
        self._on_event = on_event
        self._activity = ""
        self._batch: BatchProgress | None = None  # the batch being evaluated
        self._batch_what = ("evaluating", "matchups")
        self._batch_note = ""  # the Ray backend's workers, beside the counts
        self._progress_shown = 0.0
        self.oracle_finished: str | None = None  # why the oracle has nothing more to propose, once it said so
        # the iterations the session was asked for (the start form's, else the configuration's)
        self.requested_iterations: int = engine.config.iterations
        if hasattr(engine.evaluator, "on_progress"):
            engine.evaluator.on_progress = self._evaluation_progress
            engine.evaluator.run = self._watch_batches(engine.evaluator.run)
        self.llm_watch = LLMWatch.attach(engine.oracle)
        if self.llm_watch is not None and hasattr(getattr(engine, "gate", None), "check"):
            engine.gate.check = self._watch_scores(engine.gate.check)
        engine.subscribe(self._apply)
        self.options = LaunchOptions.from_config(engine.config)

    @classmethod
    def start(
        cls, backend: Backend, options: LaunchOptions, reviewer: Any, on_event: Callable[[Any, DashboardData], None]
    ) -> "LiveRun":
        flags = {**options.flags(), "sessions_dir": str(backend.store.root)}
        if flags.get("oracle_options"):  # the form's policy file joins the file's oracle options, not replaces them
            flags["oracle_options"] = {**load_run_config(config_file=options.config_file).oracle_options,
                                       **flags["oracle_options"]}
        config = load_run_config(flags, config_file=options.config_file)
        engine = new_engine(config, store=backend.store, reviewer=reviewer, key_trust=options.key_trust,
                            **backend.engine_parts)
        run = cls(engine, on_event)
        run.requested_iterations = options.iterations or config.iterations
        engine.run(0, close=False)  # the seeds join, are evaluated and solved; no oracle call yet
        return run

    @classmethod
    def resume(
        cls, backend: Backend, session_id: str, reviewer: Any, on_event: Callable[[Any, DashboardData], None],
        key_trust: KeyTrust | None = None,
    ) -> "LiveRun":
        engine, _warnings = resume_engine(session_id, store=backend.store, reviewer=reviewer, key_trust=key_trust,
                                          **backend.engine_parts)
        run = cls(engine, on_event)
        # finish what a stop interrupted (e.g. evaluating an accepted policy); no new iteration
        engine.run(engine.snapshot().completed_iterations, close=False)
        return run

    @property
    def session_id(self) -> str:
        return self.engine.session_id

    @property
    def limits_note(self) -> str:
        """One line naming the sandbox limits this run raised above their defaults ("" when none)."""
        return loosened_text(loosened_limits(self.engine.config.to_dict()))

    @property
    def cancelled(self) -> bool:
        return self.engine.stop_requested

    def iterate(self, count: int = 1) -> str:
        """Run `count` more oracle iterations (each reviewed); what happened, for a toast."""
        self.engine.clear_stop()  # a cancelled run must not stop the next one before it starts
        before = self.engine.snapshot()
        target = before.completed_iterations + count
        outcome = self.engine.run(target, close=False)
        after = self.engine.snapshot()
        if outcome.oracle_finished:  # the session's work is done; closing records it completed
            self.oracle_finished = outcome.message
        return iterations_outcome(before, after, outcome, target)

    def cancel(self) -> None:
        self.engine.request_stop()

    def finish_oracle(self) -> None:
        """No more LLM calls for this proposal: the oracle proposes its best reply so far."""
        self.engine.finish_oracle()

    def close(self) -> None:
        """Record the session as closed (the person leaves it, or the app quits): "completed"
        only once the requested iterations are done (or the oracle had nothing more),
        otherwise "stopped", which `csro resume` / R continues."""
        self.engine.request_stop()
        state = self.engine.snapshot()
        requested = self.requested_iterations
        if self.oracle_finished and state.open_iteration is None:
            self.engine.close("completed", self.oracle_finished)  # as `csro run` records it
        elif state.open_iteration is None and state.completed_iterations >= requested:
            self.engine.close("completed", f"{iterations_of(state.completed_iterations, requested)}; closed in the TUI")
        else:
            self.engine.close("stopped", f"left after {iterations_of(state.completed_iterations, requested)}; closed in the TUI")
        self.release()

    def release(self) -> None:
        """Close the session log's file (idempotent); the engine cannot record after this."""
        if self.engine.writer is not None:
            self.engine.writer.close()

    def _evaluation_progress(self, done: float, total: int) -> None:
        """Evaluator progress (engine thread): `what: done/total noun · rate · time left`, about 4 times a second."""
        import time

        now = time.monotonic()
        batch = self._batch
        if batch is None or total != batch.total or done < batch.done:
            what, noun = self._batch_what
            batch = self._batch = BatchProgress(what, noun, total, started=now)
        batch.done = done
        cluster = getattr(self.engine.evaluator, "cluster_status", lambda: None)()  # the Ray backend's
        note = f"{cluster.workers_alive}/{cluster.workers} Ray workers" if cluster is not None else ""
        self._batch_note = note
        if now - self._progress_shown < PROGRESS_EVERY and done < total:
            return
        self._progress_shown = now
        self._on_event(EvaluationProgress(batch.line(now, note)), None)

    def progress_line(self) -> str | None:
        """The batch being evaluated as of now (the app asks twice a second): its rate and time
        left from the work reported done over the time spent so far. A slow policy reports
        rarely; the line computed at its last report froze at that report's estimate
        ("50 s left" for 100 s)."""
        import time

        batch = self._batch
        if batch is None or batch.done >= batch.total:
            return None
        return batch.line(time.monotonic(), self._batch_note)

    def _watch_batches(self, run: Callable[..., Any]) -> Callable[..., Any]:
        """The evaluator's `run`, noting what each batch plays (bots or members) for its progress line."""

        def watched(jobs, *args, **kwargs):
            jobs = list(jobs)
            self._batch_what = batch_description(self._activity, jobs)
            made = self.llm_watch.made if self.llm_watch is not None else 0
            if made and self._batch_what[1] != "bots":
                # calls made since the last engine event: the oracle itself scores what the LLM wrote before it asks again (refine's chain, llm's candidates)
                self._batch_what = (f"{self.llm_watch.oracle}: scoring LLM reply {made}", "members")
            self._batch = None
            if jobs:  # the counts show from the start, not from the first finished matchup
                self._evaluation_progress(0, len(jobs))
            return run(jobs, *args, **kwargs)

        return watched

    def _watch_scores(self, check: Callable[..., Any]) -> Callable[..., Any]:
        """The gate's `check` (the oracles' `context.preview`), noting each score for the LLM panel."""

        def watched(*args: Any, **kwargs: Any) -> Any:
            preview = check(*args, **kwargs)
            if self.llm_watch is not None:
                self.llm_watch.scored(preview)
            return preview

        return watched

    def _apply(self, event: Any) -> None:
        """Engine subscriber (engine thread): fold the event, pass it on with the new dashboard."""
        self._activity = Backend.describe_activity(event) or self._activity
        self._batch = None
        if self.llm_watch is not None:
            self.llm_watch.new_proposal()
        with self._lock:
            self._state.apply(event)
            self._log.append(adapt.event_line(event, adapt.member_seats(self._state)))
            data = adapt.dashboard_data(self._state, log=list(self._log), cells=self._cells)
        self._on_event(event, data)

    def llm_activity(self) -> LLMActivity | None:
        """The oracle's LLM calls in flight (None when there are none), with the proposal of the
        iteration they are for; cheap, in memory."""
        activity = self.llm_watch.activity() if self.llm_watch is not None else None
        if activity is None:
            return None
        with self._lock:
            iteration = self._state.open_iteration
            attempt = iteration.attempts + 1 if iteration is not None else 1
        from dataclasses import replace

        return replace(activity, attempt=attempt, max_attempts=getattr(self.engine.config, "max_attempts", None))

    def data(self) -> DashboardData:
        with self._lock:
            return adapt.dashboard_data(self._state, log=list(self._log), cells=self._cells)

    def record_game(self, record: dict[str, Any]) -> None:
        self.engine.record_game(**record)
