"""The Textual app: screens over the engine, sessions and games.

The app never evaluates, calls an LLM or touches session files on its event
loop: every such call goes through `Backend` inside a thread worker, and the
engine's events come back through `call_from_thread`.
"""

from __future__ import annotations

import asyncio
import os
import signal
import threading
import time
import traceback
from collections import deque
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import Any, Iterable

from textual import events, work
from textual.app import App, SystemCommand
from textual.binding import Binding
from textual.drivers._writer_thread import WriterThread
from textual.markup import escape
from textual.message import Message
from textual.screen import Screen
from textual.worker import Worker, WorkerState

from csro_tui.errors import CsroError
from csro_tui.files import path_inside
from csro_tui.numbers import counted
from csro_tui.sessions.state import fold
from csro_tui.text import clean_text, one_line
from csro_tui.tui.backend import Backend
from csro_tui.tui.model import DashboardData, LaunchOptions, ReviewDecision, StartChoices
from csro_tui.tui.reviewer import QueueReviewer
from csro_tui.tui.screens.dashboard import DashboardScreen
from csro_tui.tui.screens.editor import EditorScreen
from csro_tui.tui.screens.help import HelpScreen
from csro_tui.tui.screens.llm_call import LLMCallScreen
from csro_tui.tui.screens.review import ReviewScreen
from csro_tui.tui.screens.sessions import SessionsScreen, TimelineScreen
from csro_tui.tui.screens.start import OpenSession, StartScreen
from csro_tui.tui.widgets.dashboard_view import DashboardView


class EngineUpdate(Message):
    """An engine event and the dashboard after it, from the engine's thread."""

    def __init__(self, event: Any, data: DashboardData) -> None:
        super().__init__()
        self.event = event
        self.data = data


def user_error(error: BaseException) -> bool:
    """A `CsroError` whose causes are all `CsroError`s: its message says all a person needs."""
    seen: BaseException | None = error
    while seen is not None:
        if not isinstance(seen, CsroError):
            return False
        seen = seen.__cause__
    return True


class CsroApp(App[None]):
    TITLE = "csro"
    SUB_TITLE = "Code-Space Response Oracles"
    CSS_PATH = "app.tcss"
    # classes on every screen by terminal size (app.tcss: 80x24 stays usable, 220x60 gets the room)
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (120, "-wide")]
    VERTICAL_BREAKPOINTS = [(0, "-short"), (36, "-tall")]
    BINDINGS = [
        Binding("ctrl+q", "quit", "Quit", id="app.quit", priority=True),
        Binding("f1", "help", "Help", id="app.help", show=False),
        # every screen: a focused text field still types "?" (it handles the key first)
        Binding("question_mark", "help", "Help", id="app.help.key", show=False),
        # not a priority binding: a focused text field keeps ctrl+c for copying
        Binding("ctrl+c", "cancel_work", "Cancel work", id="app.cancel", show=False),
    ]

    def __init__(
        self,
        options: LaunchOptions | None = None,
        *,
        session: str | None = None,
        sessions_dir: Path | str = "sessions",
        backend: Any = None,
        show_start: bool = True,
    ) -> None:
        super().__init__()
        if backend is None:
            backend = Backend(Path(sessions_dir), key_trust=options.key_trust if options is not None else None)
        self.backend = backend
        self.options = options
        self.open_session_id = session
        self.show_start = show_start
        self.live = None  # the live run, once started
        self.reviewer: QueueReviewer | None = None
        self.dashboard: DashboardScreen | None = None
        self.latest = DashboardData()
        self._newest: DashboardData | None = None
        self._work: Worker | None = None
        self._idle = threading.Event()  # set whenever no engine work runs
        self._idle.set()
        self._quitting = False
        self._quit_armed: object | None = None  # the editor whose unsent edit ctrl+q warned about
        self._torn_down = False
        self._closing = False  # a session is being closed to go back to the start screen
        self._close_armed = False  # esc once more closes a session whose work is running
        self._queued_iterations = 0  # `n` typed while the session was starting: run once it is ready
        self._starting = False  # a session is starting or resuming (its seeds, or what a stop left undone)
        self._work_text = "idle"
        self._llm_shown = False  # the dashboard shows an LLM call in flight
        self._key_in_flight: events.Key | None = None  # the last key sent to a widget, until handled
        self._key_sent = 0.0
        self._held_keys: deque[events.Key] = deque()  # keys typed while an earlier one is in flight
        self.__dict__.setdefault("_typed_ahead", {})  # AHEAD_OF_QUEUE keys typed, not yet handled (post_message)
        self._hidden_review: tuple[ReviewScreen, Any] | None = None  # esc left it waiting; n opens it again
        self._review_decided: Any = None  # the shown review's callback (it goes with the screen when hidden)

    # ------------------------------------------------------------------ keys in the order typed
    KEY_WAIT = 1.0  # seconds at most that keys wait for the one before them (a lost key ends the wait)
    # Keys that go ahead of the keys typed before them and still waiting: ctrl+q of all of
    # them, esc of the navigation keys (what they would show is being left). 140 queued PgUp
    # on a large session kept ctrl+q waiting 227 s.
    AHEAD_OF_QUEUE = ("ctrl+q", "escape")
    NAVIGATION_KEYS = frozenset({"left", "right", "up", "down", "pageup", "pagedown", "home", "end",
                                 "shift+left", "shift+right", "left_square_bracket", "right_square_bracket"})

    def post_message(self, message: Message) -> bool:
        """Keys arrive here when typed (from the driver's thread too), before the queue of
        messages reaches them: ctrl+q and esc are counted now, so that the keys queued ahead
        of them are dropped as they come out of the queue (`on_event`)."""
        if isinstance(message, events.Key) and message.key in self.AHEAD_OF_QUEUE and not message.is_forwarded:
            typed = self.__dict__.setdefault("_typed_ahead", {})  # (a key may come before __init__ is through)
            typed[message.key] = typed.get(message.key, 0) + 1
        return super().post_message(message)

    def _skipped(self, key: str) -> bool:
        """A key typed before a ctrl+q (any key) or an esc (a navigation key) still queued."""
        typed = self.__dict__.get("_typed_ahead", {})
        return bool(typed.get("ctrl+q")) or (key in self.NAVIGATION_KEYS and bool(typed.get("escape")))

    async def on_event(self, event: events.Event) -> None:
        """A key waits until the key before it has been handled. Textual sends each key to the
        focused widget at once, but runs a binding (tab, arrows, ctrl+n) only after the key has
        bubbled back up to the app; in a burst the keys after `tab` reached the widget that had
        the focus before it (`uhn_poker` typed into the Game field). ctrl+q and esc go ahead
        (AHEAD_OF_QUEUE)."""
        if isinstance(event, events.Key) and not event.is_forwarded:
            if event.key in self.AHEAD_OF_QUEUE:
                typed = self.__dict__.setdefault("_typed_ahead", {})
                typed[event.key] = max(typed.get(event.key, 0) - 1, 0)
                if event.key == "ctrl+q":
                    self._held_keys.clear()
                    self._key_in_flight = None
                    await self._send_key(event)
                    return
                self._held_keys = deque(key for key in self._held_keys if key.key not in self.NAVIGATION_KEYS)
            elif self._skipped(event.key):
                return
            if self._held_keys or self._key_pending():
                self._held_keys.append(event)
                if len(self._held_keys) == 1:
                    self.set_timer(0.01, self._release_keys)
                return
            await self._send_key(event)
            return
        await super().on_event(event)

    async def _send_key(self, key: events.Key) -> None:
        self._key_in_flight, self._key_sent = key, time.monotonic()
        await super().on_event(key)
        if not key.is_forwarded and self._key_in_flight is key:
            # a priority binding ran it here (the timeline's PgUp): nothing comes back to wait for
            self._key_in_flight = None

    def _key_pending(self) -> bool:
        """The last key sent to a widget is neither handled there (stopped) nor back here."""
        earlier = self._key_in_flight
        return (earlier is not None and not earlier._stop_propagation  # noqa: SLF001
                and time.monotonic() < self._key_sent + self.KEY_WAIT)

    async def _release_keys(self) -> None:
        while self._held_keys and not self._key_pending():
            if not self.is_running or not self.screen_stack:  # quitting: nowhere to send them
                self._held_keys.clear()
                return
            await self._send_key(self._held_keys.popleft())
        if self._held_keys:
            self.set_timer(0.01, self._release_keys)

    def _on_key(self, event: events.Key) -> None:
        # Textual calls App._on_key (which runs the binding) after this one, per class
        if event is self._key_in_flight:  # it bubbled back: the next key goes once its binding ran
            self._key_in_flight = None
            self.call_later(self._release_keys)

    # ------------------------------------------------------------------ start
    def on_mount(self) -> None:
        self.set_interval(0.5, self._show_oracle_activity)
        self._watch_terminal_signals()
        if self.open_session_id:
            self.open_recorded(self.open_session_id)
        elif self.options is not None and not self.show_start:
            self.start_session(self.options)
        else:
            self.load_choices()

    @work(thread=True, exclusive=True, group="choices")
    def load_choices(self) -> None:
        try:
            choices = self.backend.choices()
        except Exception as error:  # noqa: BLE001
            self.call_from_thread(self.notify, f"Could not list games/sessions: {error}", severity="error")
            choices = StartChoices()
        self.call_from_thread(self._show_start, choices)

    def _show_start(self, choices: StartChoices) -> None:
        """The start screen stays at the bottom of the stack: esc from what it opens comes back to it."""
        existing = next((screen for screen in self.screen_stack if isinstance(screen, StartScreen)), None)
        if existing is not None:
            while self.screen is not existing:
                self.pop_screen()
            existing.update_choices(choices)
            return

        def chosen(result: LaunchOptions | OpenSession | None) -> None:
            if isinstance(result, OpenSession):
                self.open_recorded(result.session_id)
            elif isinstance(result, LaunchOptions):
                if self.live is not None or self._closing:
                    self.close_session(then=lambda: self.start_session(result))
                else:
                    self.start_session(result)

        self.push_screen(StartScreen(choices, self.options, on_choice=chosen))

    async def action_pop_screen(self) -> None:
        """Esc on a screen: back to the one below; with nothing below, the start screen."""
        if len(self.screen_stack) > 1:
            self.pop_screen()
        if len(self.screen_stack) <= 1:
            self.load_choices()

    def start_session(self, options: LaunchOptions) -> None:
        self._open_dashboard(DashboardData(game=options.game, oracle=options.oracle, meta_solver=options.meta_solver))
        self.options = options
        self._set_work(f"starting a {options.game} session: evaluating the seed population…")
        self._starting = True
        self._run_worker(self._start_run, options, options.iterations or 0)

    def resume_session(self, session_id: str, recorded: DashboardData | None = None) -> None:
        """Continue a recorded session from its last complete event (closing the live one first).
        `recorded`: its dashboard as recorded (the timeline has it), shown at once while the
        engine resumes (a 200-member session took 7 s before its dashboard showed anything)."""
        if self.live is not None or self._closing:
            if self.live is not None and self.live.session_id == session_id:
                self._raise_dashboard()
                return
            self.close_session(then=lambda: self.resume_session(session_id, recorded))
            return
        # as it will be resumed: no longer closed (a failed session's error panel went with its close)
        self._open_dashboard(replace(recorded, closed=False, closed_reason="", closed_message="", closed_event=0)
                             if recorded is not None else DashboardData())
        self._set_work(f"resuming {session_id}…")
        self._starting = True
        if recorded is None:
            self._run_worker(self._resume_run, session_id)
        else:  # the recorded dashboard painted first: the engine's resume (its fold) holds the GIL for seconds
            self.call_after_refresh(self._run_worker, self._resume_run, session_id)

    def _open_dashboard(self, data: DashboardData) -> None:
        self.latest = data
        self.dashboard = DashboardScreen(data)
        self.push_screen(self.dashboard)
        self.reviewer = QueueReviewer(self._review_from_thread, self.backend.to_engine_decision)

    def _start_run(self, options: LaunchOptions, iterations: int) -> None:
        self.live = self.backend.start_run(options, self.reviewer, self._event_from_thread)
        self.call_from_thread(self.notify, f"Session {self.live.session_id} started.")
        self._warn_loosened_limits()
        if iterations:
            self._iterate(iterations)

    def _resume_run(self, session_id: str) -> None:
        self.live = self.backend.resume_run(session_id, self.reviewer, self._event_from_thread)
        self.options = self.live.options
        self.call_from_thread(self.notify, f"Session {session_id} resumed.")
        self._warn_loosened_limits()

    def _warn_loosened_limits(self) -> None:
        """The sandbox limits the configuration raised, said when the run starts (issue 35)."""
        note = getattr(self.live, "limits_note", "")
        if note:
            self.call_from_thread(self.notify, one_line(note), severity="warning", timeout=10)

    # ------------------------------------------------------------------ live run
    def _run_worker(self, target, *args) -> None:
        def job() -> None:
            message = None
            try:
                message = target(*args)
            except Exception as error:  # noqa: BLE001 - every error lands in the error panel
                if not self._quitting:
                    self.call_from_thread(self._engine_failed, error, traceback.format_exc())
            finally:
                if self._torn_down and self.live is not None:
                    self.live.release()  # the app went away while the engine worked
                self._idle.set()
            if not self._quitting:
                data = self.live.data() if self.live is not None else None
                self.call_from_thread(self._work_done, data, message)

        self._idle.clear()
        self._work = self.run_worker(job, thread=True, exclusive=True, group="engine", name="engine", exit_on_error=False)

    def _engine_failed(self, error: BaseException, details: str) -> None:
        """The engine's worker raised: a persistent panel on the dashboard, a toast that points at it.
        A `CsroError` caused by nothing but CsroErrors is a person's one line (a server that is down,
        a bad setting): no traceback; one that wraps another exception (a bug) keeps it."""
        if user_error(error):
            details = line = one_line(str(error), 300)
        else:
            line = one_line(f"{type(error).__name__}: {error}", 300)  # a refusal says what to do (issue 35)
        if self.live is not None and self.dashboard is not None:
            self.dashboard.show_error(details)
            self.notify(f"{line} (the error panel on the dashboard has the details)", severity="error", timeout=10)
        else:  # the session never started: the start form comes back
            self.notify(f"The session could not start: {line}", severity="error", timeout=30)

    def notify(self, message: str, *, title: str = "", severity: str = "information", timeout: float | None = None, markup: bool = False) -> None:
        """Every toast's text is cleaned and shown literally (it may quote a policy's exception).

        Literal text goes to Textual escaped, as markup: its markup=False path
        stalled the pilot's waits while a session closed (test_navigation)."""
        text = clean_text(message)
        super().notify(text if markup else escape(text), title=one_line(title), severity=severity, timeout=timeout, markup=True)

    def _run_queued(self, count: int) -> None:
        """Run the iterations typed while the session started, once its worker has ended."""
        if self.live is None or self._closing:
            return
        if self._busy():
            self.set_timer(0.05, lambda: self._run_queued(count))
            return
        self.action_run_iterations(count)

    def _work_done(self, data: DashboardData | None, message: str | None) -> None:
        if data is not None:
            self._show(data)
        self._starting = False
        queued, self._queued_iterations = self._queued_iterations, 0
        if queued and self.live is not None and not self._closing:
            self._run_queued(queued)  # `n` typed while the session started
        finished = getattr(self.live, "oracle_finished", None)
        self._set_work("completed: the oracle has nothing more to propose (esc closes the session)" if finished else "idle")
        if message:
            self.notify(message)
        if self.live is None and self.dashboard is not None and not self._closing:
            # the session never started (the error is in a notification): back to the form
            if self.screen is self.dashboard:
                self.pop_screen()
            self.dashboard = None
            self.load_choices()

    def _iterate(self, count: int) -> str | None:
        """Runs on the engine worker's thread."""
        if self.reviewer is not None:
            self.reviewer.reset()
        self.call_from_thread(self._set_work, f"running {count} iteration{'s' if count > 1 else ''}: oracle working…")
        return self.live.iterate(count) if self.live is not None else None

    def _event_from_thread(self, event: Any, data: DashboardData | None) -> None:
        """Engine subscriber: runs on the engine's thread; never waits for the UI (data None: progress only)."""
        if data is not None:
            self._newest = data
        self.post_message(EngineUpdate(event, data))

    def on_engine_update(self, message: "EngineUpdate") -> None:
        activity = self.backend.describe_activity(message.event)
        if activity:
            self._set_work(activity)
        if message.data is None:  # progress only: no new dashboard
            return
        if message.data is self._newest:  # older updates still queued are skipped
            self._show(message.data)

    def _show(self, data: DashboardData) -> None:
        self.latest = data
        if self.dashboard is not None:
            self.dashboard.show(data)

    def _show_oracle_activity(self) -> None:
        """While the oracle waits for its LLM, the call's state and its reply so far (twice a second)."""
        activity = None
        if self.live is not None and self._busy():
            try:
                activity = self.live.llm_activity()
                progress = self.live.progress_line()  # the time left re-estimated now, between reports
            except Exception:  # noqa: BLE001 - a display nicety; never break the app for it
                activity = progress = None
            if progress and progress != self._work_text:
                self._set_work(progress)
        if isinstance(self.screen, LLMCallScreen):
            self.screen.show(activity)
        if self.dashboard is None or (activity is None and not self._llm_shown):
            return
        self._llm_shown = activity is not None
        self.dashboard.show_llm(activity)

    def action_llm_call(self) -> None:
        """`l`: the LLM call in flight, whole (its reply as it streams in)."""
        activity = self.live.llm_activity() if self.live is not None and self._busy() else None
        if activity is None:
            self.notify("No LLM call in flight (l shows one while the oracle waits for its model).", timeout=4)
            return
        self.push_screen(LLMCallScreen(activity))

    def action_finish_oracle(self) -> None:
        """`f`: the LLM oracle makes no more calls (the one in flight is cancelled) and proposes its best so far."""
        activity = self.live.llm_activity() if self.live is not None and self._busy() else None
        if activity is None:
            self.notify("Nothing to finish (f works while an LLM oracle waits for its model).", timeout=4)
            return
        if not activity.has_reply:
            # nothing to propose yet: finishing would only make the engine ask again
            self.action_cancel_work()
            self.notify("No reply yet, so nothing to finish: f cancelled the proposal (n asks again).", timeout=8)
            return
        self.live.finish_oracle()
        self.notify("Finishing: the oracle proposes its best reply so far (none usable: the iteration ends).")

    def _set_work(self, text: str) -> None:
        self._work_text = text
        if self.dashboard is not None:
            self.dashboard.set_work(text)

    def _review_from_thread(self, review: Any) -> None:
        """Reviewer callback: runs on the engine's thread."""
        info = self.backend.review_info(review)
        self.call_from_thread(self._show_review, info)

    def _show_review(self, info) -> None:
        self._set_work(f"waiting for your review of {info.name}")
        if isinstance(self.screen, LLMCallScreen):  # the call it showed is over: the review replaces it
            self.pop_screen()

        def decided(decision: ReviewDecision | None) -> None:
            self._hidden_review = None
            decision = decision or ReviewDecision("cancel")
            if self.reviewer is not None:
                self.reviewer.answer(decision)
            # a progressive review decided early: the engine records it once the preview ends
            estimate = info.live_preview.latest()[1] if info.live_preview is not None else None
            finishing = info.live_preview is not None and not (estimate is not None and estimate.done)
            self._set_work(f"{decision.kind}: " + ("finishing the preview, then engine working…" if finishing
                                                   else "engine working…"))

        self._hidden_review = None
        self._review_decided = decided
        self.push_screen(ReviewScreen(info), decided)

    def action_hide_review(self) -> None:
        """esc on the review: back to the dashboard; the proposal stays waiting (n opens it again)."""
        screen = self.screen
        if not isinstance(screen, ReviewScreen) or self.dashboard is None:
            return
        self._hidden_review = (screen, self._review_decided)
        self.pop_screen()  # not dismissed: the engine keeps waiting for the decision
        self._set_work(f"waiting for your review of {screen.info.name} (n opens it)")
        self.notify(f"{screen.info.name} waits for your review: n opens it again.", timeout=5)

    def _reopen_review(self) -> bool:
        if self._hidden_review is None:
            return False
        screen, callback = self._hidden_review
        self._hidden_review = None
        self.push_screen(screen, callback)
        return True

    def _busy(self) -> bool:
        return self._work is not None and self._work.state in (WorkerState.PENDING, WorkerState.RUNNING)

    def action_next_iteration(self) -> None:
        self.action_run_iterations(1)

    def action_run_iterations(self, count: int = 1) -> None:
        if self._busy() and self._starting:
            # the dashboard shows before the session is ready (its seeds evaluated): the key is kept
            self._queued_iterations = count
            self.notify(f"{counted(count, 'iteration')} will start once the session is ready.", timeout=4)
            return
        if self.live is None:
            self.notify("No live session: start one from the start screen.", severity="warning")
            return
        if self._busy() and self._reopen_review():
            return
        if self._busy():
            self.notify("Still working; c cancels.", severity="warning")
            return
        if getattr(self.live, "oracle_finished", None):
            self.notify(f"completed: {self.live.oracle_finished}. esc closes the session (recorded completed); "
                        "a new session can use another oracle.", timeout=10)
            return
        if self.dashboard is not None and self.dashboard.clear_error():
            self.notify("Resuming after the error: the session goes on where it stopped "
                        "(the error stays in its log and on its timeline).", timeout=8)
        self._run_worker(self._iterate, count)

    def action_cancel_work(self) -> None:
        if not self._busy():
            self.notify("Nothing to cancel (ctrl+q quits).", timeout=3)
            return
        if self.live is not None:
            self.live.cancel()
        if self.reviewer is not None:
            self.reviewer.cancel()
        if isinstance(self.screen, ReviewScreen):
            self.screen.dismiss(ReviewDecision("cancel"))
        self._hidden_review = None
        if self._work is not None:
            self._work.cancel()
        self._set_work("cancelling…")
        self.notify("Cancelling the work in progress.")

    # ------------------------------------------------------------------ many sessions per launch
    def action_close_session(self) -> None:
        """Esc on the dashboard: close the live session (recorded, resumable) and go back to the start screen.
        While work runs the first esc only warns; a second one cancels the work and closes."""
        if self._closing:
            self.notify(f"Closing: waiting for {self._work_text}", timeout=3)
            return
        if self._busy() and not self._close_armed:
            self._close_armed = True
            self.notify(f"Working ({self._work_text}). esc again cancels it and closes the session.", severity="warning")
            return
        self.close_session()

    def action_start_screen(self) -> None:
        """The start form (a new session, or a recorded one); a live session is closed first."""
        if self.live is not None or self.dashboard is not None:
            self.close_session()
            return
        if not any(isinstance(screen, StartScreen) for screen in self.screen_stack):
            while len(self.screen_stack) > 1:
                self.pop_screen()
            self.load_choices()

    def close_session(self, then=None) -> None:
        """Stop the live session's work, record it closed (off the event loop), then `then` or the start screen."""
        self._close_armed = False
        if self.dashboard is None and self.live is None:
            if then is not None:
                then()
            return
        if self._closing:
            return
        self._closing = True
        if self.live is not None:
            self.live.cancel()
        if self.reviewer is not None:
            self.reviewer.cancel()
        now = f"the engine stops (now: {self._work_text})" if self._busy() else "the session log is written"
        self._set_work("closing the session…")
        self.notify(f"Closing the session once {now}.", timeout=4)
        self._close_for_next(then)

    @work(thread=True, group="close-session")
    def _close_for_next(self, then) -> None:
        self._idle.wait(timeout=60)
        live, error = self.live, None
        try:
            if live is not None:
                live.close()
        except Exception as failure:  # noqa: BLE001
            error = f"Could not record the session as closed: {failure}"
        self.call_from_thread(self._session_closed, live.session_id if live is not None else None, error, then)

    def _session_closed(self, session_id: str | None, error: str | None, then) -> None:
        dashboard = self.dashboard
        self.live = None
        self.dashboard = None
        self.reviewer = None
        self._hidden_review = None
        self.latest = DashboardData()
        self._closing = False
        if dashboard is not None and dashboard in self.screen_stack:
            while self.screen is not dashboard:
                self.pop_screen()
            self.pop_screen()
        if error:
            self.notify(error, severity="error", timeout=10)
        elif session_id:
            self.notify(f"Session {session_id} closed; it can be resumed from its timeline (R).", timeout=4)
        if then is not None:
            then()
        else:
            self.load_choices()  # back to the start screen, its list refreshed

    def _raise_dashboard(self) -> None:
        if self.dashboard is not None and self.dashboard in self.screen_stack:
            while self.screen is not self.dashboard:
                self.pop_screen()

    def action_export_session(self) -> None:
        """Write the session on screen (policies, payoffs.csv, report.md) under exports/<session id>."""
        _, _, session_id = self.play_context()
        if session_id is None:
            self.notify("No recorded session on screen to export.", severity="warning")
            return
        self._export(session_id)

    @work(thread=True, group="export")
    def _export(self, session_id: str) -> None:
        # imported when used, not at the top: keeps csro's start-up fast (the profile machinery)
        from csro_tui.profiles.session import export_with_diversity

        try:
            target = path_inside(Path("exports"), session_id)  # the id is a directory's name: still no way out
            written = export_with_diversity(fold(self.backend.read_events(session_id)), target)
        except Exception as error:  # noqa: BLE001
            self.call_from_thread(self.notify, f"Export failed: {error}", severity="error", timeout=10)
            return
        self.call_from_thread(self.notify, f"Exported {len(written)} files to {target}/", timeout=6)

    # ------------------------------------------------------------------ other screens
    def action_help(self) -> None:
        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen(self.screen))  # its keys first

    def action_sessions(self) -> None:
        self.push_screen(SessionsScreen(self.backend))

    def open_recorded(self, session_id: str) -> None:
        self.push_screen(TimelineScreen(self.backend, session_id))

    def action_play(self, member_id: str | None = None) -> None:
        """Play in the session on screen: the replayed one under the current
        screen if there is one, else the live one; its game, its population."""
        from csro_tui.tui.screens.play import PlayScreen  # start-up time: importing it loads pyspiel

        game, data, session_id = self.play_context()
        if not game:
            self.notify("No session on screen: open or start one to play its game.", severity="warning")
            return
        self.push_screen(PlayScreen(self.backend, game, data, preselect=member_id, live=self.live, session_id=session_id))

    def play_context(self) -> tuple[str, DashboardData, str | None]:
        """(game, dashboard, session id) of the nearest session screen on the stack."""
        data: DashboardData | None = None
        for screen in reversed(self.screen_stack):
            if data is None and isinstance(getattr(screen, "data", None), DashboardData):
                data = screen.data  # e.g. the inspector's step of a timeline
            if isinstance(screen, TimelineScreen):
                shown = screen.query_one(DashboardView).data
                data = data or shown
                return data.game or shown.game, data, screen.session_id
            if screen is self.dashboard:
                data = data or self.latest
                game = self.options.game if self.options else data.game
                return game, data, self.live.session_id if self.live is not None else None
        data = data or self.latest
        if self.live is not None:
            game = self.options.game if self.options else data.game
            return game, data, getattr(self.live, "session_id", None)
        return data.game, data, None

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        named = set()
        # every key of the screen the palette was opened on, by its name
        for binding in screen.BINDINGS:
            title = binding.tooltip or binding.description if isinstance(binding, Binding) else ""
            if not title or title in named:
                continue
            named.add(title)
            key = self.get_key_display(binding)
            yield SystemCommand(title, f"{key} on this screen", partial(self.run_action, binding.action, screen))
        commands = [
            ("Help", "Keys and the policy contract", self.action_help),
            ("Sessions", "Browse recorded sessions and step through their timelines", self.action_sessions),
            ("Start screen", "Start a new session or open a recorded one (closes the live session)", self.action_start_screen),
            ("Open session", "Browse recorded sessions and open one", self.action_sessions),
            ("Export session", "Write the session on screen to exports/<id>: policies, payoffs.csv, report.md, diversity.svg", self.action_export_session),
        ]
        if self.play_context()[0]:
            commands.append(("Play", "Play the session's game against a member or a benchmark bot", self.action_play))
        if self.live is not None or self.dashboard is not None:
            commands += [
                ("Close session", "Record the live session closed (resumable) and go back to the start screen", self.close_session),
                ("Next iteration", "Ask the oracle for the next proposal", self.action_next_iteration),
                ("Run 5 iterations", "Five proposals, each reviewed", lambda: self.action_run_iterations(5)),
                ("Cancel work", "Stop the oracle or evaluation in progress (also ctrl+c)", self.action_cancel_work),
            ]
        for title, help_text, callback in commands:
            if title not in named:
                named.add(title)
                yield SystemCommand(title, help_text, callback)

    async def action_quit(self) -> None:
        """ctrl+q. An edit not yet sent is not dropped on the first press."""
        editor = self.screen
        if isinstance(editor, EditorScreen) and editor.unsent and not self._quitting and self._quit_armed is not editor:
            self._quit_armed = editor
            self.notify("Your edit is not sent: ctrl+q again quits without it; ctrl+s sends it.", severity="warning")
            return
        await self._quit()

    async def _quit(self) -> None:
        """Stop the engine, record the session as closed (off the event loop), then exit."""
        if self.live is None or self._quitting:
            self.exit()
            return
        self._quitting = True
        now = f"the engine stops (now: {self._work_text})" if self._busy() else "the session log is written"
        self.live.cancel()
        if self.reviewer is not None:
            self.reviewer.cancel()
        self._set_work("closing the session…")
        self.notify(f"Quitting once {now}; the session is recorded closed.", timeout=10)
        self._close_live()

    # ------------------------------------------------------------------ the terminal goes away
    TERMINAL_SIGNALS = (signal.SIGHUP, signal.SIGTERM)

    def _watch_terminal_signals(self) -> None:
        """Closing the terminal (SIGHUP) or `kill` (SIGTERM) quits as ctrl+q does: the live
        session is recorded closed (resumable), not left open by a dead process."""
        try:
            loop = asyncio.get_running_loop()
            for signum in self.TERMINAL_SIGNALS:
                loop.add_signal_handler(signum, self._terminal_signal, signum)
        except (NotImplementedError, RuntimeError, ValueError):
            return  # not the main thread (an app run inside a test) or no such signals here

    def _unwatch_terminal_signals(self) -> None:
        try:
            loop = asyncio.get_running_loop()
            for signum in self.TERMINAL_SIGNALS:
                loop.remove_signal_handler(signum)
        except (NotImplementedError, RuntimeError, ValueError):
            pass

    def _terminal_signal(self, signum: int) -> None:
        if signum == signal.SIGHUP:
            self._detach_from_terminal()
        if not self._quitting:  # a second signal must not cut the close short (ctrl+q twice does)
            self.call_later(self._quit)

    def _detach_from_terminal(self) -> None:
        """The terminal hung up: writing to it fails (EIO) and reading it returns nothing at once.
        The descriptors go to /dev/null and Textual's input thread is told to end, so that neither
        its writer thread (dead, its queue would fill and block the event loop) nor its input
        thread (spinning on end-of-file) stands in the way of closing the session."""
        try:
            quiet = os.open(os.devnull, os.O_RDWR)
            for descriptor in (0, 1, 2):
                os.dup2(quiet, descriptor)
            os.close(quiet)
        except OSError:
            return
        driver = getattr(self, "_driver", None)
        stop_input = getattr(driver, "exit_event", None)
        if isinstance(stop_input, threading.Event):
            stop_input.set()  # no key will ever come; the driver's shutdown then skips waiting for input
        # a frame written between the hang-up and now killed the writer thread: start another
        writer = getattr(driver, "_writer_thread", None)
        if writer is not None and not writer.is_alive():
            try:
                fresh = WriterThread(writer._file)  # noqa: SLF001 - the stream now writes to /dev/null
                fresh.start()
                driver._writer_thread = fresh  # noqa: SLF001
            except Exception:  # noqa: BLE001 - best effort; the session is closed in a thread regardless
                pass

    @work(thread=True, group="close")
    def _close_live(self) -> None:
        self._idle.wait(timeout=60)
        try:
            if self.live is not None:
                self.live.close()
        except Exception as error:  # noqa: BLE001
            self.call_from_thread(self.notify, f"Could not close the session: {error}", severity="error")

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.worker.group == "close" and event.state in (WorkerState.SUCCESS, WorkerState.ERROR):
            self.exit()
        elif event.state == WorkerState.ERROR and not self._quitting:
            # a worker started with exit_on_error=False failed: say so, keep the app
            error = event.worker.error
            self.notify(f"{event.worker.name or 'background work'} failed: {type(error).__name__}: {error}", severity="error", timeout=15)

    def on_unmount(self) -> None:
        # the app is going (quit above, or torn down): release the engine thread
        self._quitting = True
        self._torn_down = True
        self._unwatch_terminal_signals()
        if self.live is not None:
            self.live.cancel()
            if self._idle.is_set():
                self.live.release()  # closing a file handle; the engine is not running
        if self.reviewer is not None:
            self.reviewer.cancel()
