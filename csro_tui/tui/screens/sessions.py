"""Recorded sessions, and stepping through one session's timeline."""

from __future__ import annotations

import gc

from typing import Any

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Static

from csro_tui.text import one_line, plain
from csro_tui.tui.adapt import dashboard_data, event_line, member_seats
from csro_tui.tui.backend import session_summary
from csro_tui.tui.behaviour import deliver
from csro_tui.tui.screens.compare_sessions import MarkingScreen
from csro_tui.tui.screens.dashboard import session_dir
from csro_tui.tui.timeline import TimelineFolds
from csro_tui.tui.widgets.dashboard_view import DashboardView
from csro_tui.tui.widgets.error_panel import ErrorPanel
from csro_tui.tui.widgets.measured_table import MeasuredTable
from csro_tui.tui.widgets.payoff_heatmap import PayoffHeatmap
from csro_tui.tui.widgets.population_table import PopulationTable
from csro_tui.tui.widgets.status_line import StatusLine
from csro_tui.tui.widgets.title_header import TitleHeader


STATUS_STYLES = {"error": "bold red", "stopped": "yellow", "completed": "green", "open": "cyan", "unreadable": "bold red"}


def session_status(info: Any) -> Text:
    """error / stopped / completed, "open" for a session that never closed (running, or killed)."""
    status = "unreadable" if info.error else (info.closed or "open")
    return Text(status, style=STATUS_STYLES.get(status, ""))


NARROW_BELOW = 120  # terminal columns: the app's "-narrow" breakpoint


class SessionsScreen(MarkingScreen):  # space marks, c compares (compare_sessions.py)
    BINDINGS = [
        Binding("escape", "app.pop_screen", "Back", id="sessions.back"),
        Binding("enter", "open", "Open timeline", id="sessions.open", show=True),
        Binding("question_mark", "app.help", "Help", id="sessions.help"),
    ]

    def __init__(self, backend: Any) -> None:
        super().__init__()
        self.backend = backend

    def compose(self) -> ComposeResult:
        yield TitleHeader()
        yield MeasuredTable(cursor_type="row", id="sessions-list")
        yield Footer()

    def on_mount(self) -> None:
        self.sub_title = "Recorded sessions"
        self._rows: list[tuple[str, Text, str]] | None = None
        self.load()

    @work(thread=True, exclusive=True, group="sessions", exit_on_error=False)
    def load(self) -> None:
        try:
            rows = [(info.id, session_status(info), session_summary(info, status=False)) for info in self.backend.list_sessions()]
        except Exception as error:  # noqa: BLE001
            self.app.call_from_thread(self.notify, f"Cannot list sessions: {error}", severity="error")
            return
        self.app.call_from_thread(self._show, rows)

    def _show(self, rows: list[tuple[str, Text, str]]) -> None:
        first = self._rows is None
        self._rows = rows
        self._list()
        if first and not rows:
            self.notify(f"No recorded sessions under {self.backend.store.root}.")
        self.query_one(DataTable).focus()

    def _list(self) -> None:
        """One row per session; below 120 columns two lines (id and status, then the summary
        cut to the screen) instead of a summary cut at the right edge."""
        table = self.query_one(DataTable)
        narrow = self.app.size.width < NARROW_BELOW
        selected = table.cursor_row
        table.clear(columns=True)
        if narrow:
            table.add_column("session · status", key="session")
            for session_id, status, summary in self._rows or []:
                line = plain(self.mark(session_id) + session_id, style="bold") + Text("  ") + status
                table.add_row(line + Text("\n") + plain(one_line(summary, max(self.app.size.width - 4, 20))), key=session_id, height=2)
        else:
            table.add_columns("session", "status", "summary")
            for session_id, status, summary in self._rows or []:
                # the id is never cut (the table scrolls sideways); the status comes right after it
                table.add_row(plain(self.mark(session_id) + session_id), status, plain(summary), key=session_id)
        self._listed_narrow = narrow
        if table.row_count:
            table.move_cursor(row=min(selected, table.row_count - 1))

    def on_resize(self) -> None:
        if getattr(self, "_rows", None) is not None and (self.app.size.width < NARROW_BELOW) != self._listed_narrow:
            self._list()

    def action_open(self) -> None:
        table = self.query_one(DataTable)
        if table.row_count:
            key = table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value
            if key is not None:
                self.app.push_screen(TimelineScreen(self.backend, key))

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        if event.row_key.value is not None:
            self.app.push_screen(TimelineScreen(self.backend, event.row_key.value))


TIMELINE_HINT = "   (pgup/pgdn iteration, [ ] proposal, o opens it)"


def timeline_bar(head: str, event_line: str, width: int) -> str:
    """The timeline's top line within `width`: the step and its event whole when they fit,
    the keys' hint only if there is room for it (the footer has the keys), else the event cut
    with "…" (at 80 columns the line ran off the right edge)."""
    event_line = one_line(event_line)
    if len(head) + len(event_line) + len(TIMELINE_HINT) <= width:
        return head + event_line + TIMELINE_HINT
    return head + one_line(event_line, max(width - len(head), 10))


class TimelineScreen(Screen[None]):
    """The dashboard as it was after each event: left/right step through events,
    page up/down through iterations, [ ] through proposals; o opens a proposal."""

    BINDINGS = [
        Binding("left", "step(-1)", "Prev", tooltip="Back a step", id="timeline.back", priority=True),
        Binding("right", "step(1)", "Next", tooltip="Forward a step", id="timeline.forward", priority=True),
        Binding("shift+left", "step(-10)", "Back 10", id="timeline.back10", show=False, priority=True),
        Binding("shift+right", "step(10)", "Forward 10", id="timeline.forward10", show=False, priority=True),
        Binding("pageup", "jump('iteration_started', -1)", "Previous iteration", id="timeline.iteration_back", priority=True, show=False),
        Binding("pagedown", "jump('iteration_started', 1)", "Next iteration", id="timeline.iteration_forward", priority=True, show=False),
        Binding("left_square_bracket", "jump('proposal_created', -1)", "Previous proposal", id="timeline.proposal_back", show=False),
        Binding("right_square_bracket", "jump('proposal_created', 1)", "Next proposal", id="timeline.proposal_forward", show=False),
        Binding("o", "open_proposal", "Proposal", tooltip="Open proposal", id="timeline.open_proposal"),
        Binding("home", "first", "First", id="timeline.first", priority=True, show=False),
        Binding("end", "last", "Last", id="timeline.last", priority=True, show=False),
        Binding("i", "inspect", "Inspect", id="timeline.inspect"),
        Binding("d", "compare", "Compare", id="timeline.compare", show=False),
        Binding("b", "diversity", "Diversity", id="timeline.diversity", show=False),
        Binding("p", "app.play", "Play", id="timeline.play"),
        Binding("R", "resume", "Resume", tooltip="Resume session", id="timeline.resume"),
        Binding("escape", "app.pop_screen", "Back", id="timeline.close"),
        Binding("question_mark", "app.help", "Help", id="timeline.help"),
    ]

    def __init__(self, backend: Any, session_id: str) -> None:
        super().__init__()
        self.backend = backend
        self.session_id = session_id
        self.events: list[Any] = []
        self.state: Any = None  # the whole session folded, for opening proposals
        self.step = 0  # the step asked for (the newest key's); the dashboard follows when folded
        self.shown_step = 0  # the step the dashboard shows
        self._folds: TimelineFolds | None = None
        self._folding = False  # a worker is folding: the step asked for meanwhile waits for it
        self._frozen = False  # the objects alive when the session was loaded are out of the collector's scans

    def compose(self) -> ComposeResult:
        yield TitleHeader()
        yield Static("loading…", id="timeline-bar")
        yield ErrorPanel(id="error-panel")
        yield DashboardView(id="dashboard")
        yield StatusLine(id="timeline-status")
        yield Footer()

    def on_mount(self) -> None:
        self.sub_title = self.session_id
        self.load()

    @work(thread=True, exclusive=True, group="timeline", exit_on_error=False)
    def load(self) -> None:
        try:
            folds = TimelineFolds(self.backend.read_events(self.session_id))
        except Exception as error:  # noqa: BLE001 - a corrupt or missing session
            self.app.call_from_thread(self.notify, str(error), severity="error", timeout=10)
            self.app.call_from_thread(self._set_bar, f"cannot open {self.session_id}: {one_line(error, 200)}")
            return
        self.app.call_from_thread(self._loaded, folds)

    def on_unmount(self) -> None:
        if self._frozen:
            gc.unfreeze()

    def _set_bar(self, text: str) -> None:
        self.query_one("#timeline-bar", Static).update(plain(one_line(text)))

    def _loaded(self, folds: TimelineFolds) -> None:
        # The session's events and states (300,000 objects for 201 Leduc members) live as long
        # as this screen: left out of the cyclic collector's scans, whose full passes took
        # ~0.3 s of CPU in a step (they are freed by reference counting all the same).
        gc.freeze()
        self._frozen = True
        self._folds = folds
        self.events = folds.events
        self.state = folds.final
        self.go(len(self.events))

    def go(self, step: int) -> None:
        """Show the dashboard after event `step`. Keys only move `self.step`; one worker at a
        time folds to it, and when it is done the next folds to wherever the keys pressed
        meanwhile left it (a burst of 140 PgUp folds a few times, not 140)."""
        if not self.events:
            return
        self.step = max(1, min(step, len(self.events)))
        if self.step != self.shown_step:  # at once: where the keys are, before the dashboard catches up
            self.query_one(StatusLine).work = f"replaying to step {self.step}…"
        if not self._folding:
            self._folding = True
            self._fold(self.step)

    @work(thread=True, group="timeline-step", exit_on_error=False)
    def _fold(self, step: int) -> None:
        folds = self._folds
        try:
            assert folds is not None
            data = folds.dashboard_at(step)
        except Exception as error:  # noqa: BLE001 - a log the fold rejects
            deliver(self, self._fold_failed, step, error)
            return
        deliver(self, self._show_step, step, data)

    def _fold_failed(self, step: int, error: Exception) -> None:
        self._folding = False
        self.notify(f"Cannot replay to step {step}: {error}", severity="error", timeout=10)

    def _show_step(self, step: int, data: Any) -> None:
        self._folding = False
        if step != self.step:  # keys moved on meanwhile: fold to where they are now
            self.go(self.step)
            return
        self.shown_step = step
        self.query_one(DashboardView).show(data)
        status = self.query_one(StatusLine)
        status.show(data)
        status.work = "replay"
        self.query_one(ErrorPanel).show(data, session_dir=session_dir(self.app, self.session_id))
        self._show_bar()

    def _show_bar(self) -> None:
        step = self.step
        iteration = self._iteration_at(step)
        where = f"iteration {iteration}  " if iteration is not None else ""
        line = event_line(self.events[step - 1], member_seats(self.state) if self.state is not None else None)
        self._set_bar(timeline_bar(f"step {step}/{len(self.events)}  {where}", line, self.app.size.width - 2))

    def action_step(self, delta: int) -> None:
        self.go(self.step + delta)

    def action_inspect(self, member_id: str | None = None, against: str | None = None) -> None:
        view = self.query_one(DashboardView)
        if member_id is None:
            member_id, against = view.selection(self.focused)
        if member_id is None:
            self.notify("No policy at this step.", severity="warning")
            return
        from csro_tui.tui.screens.inspector import InspectorScreen  # start-up time: importing it loads pygments

        self.app.push_screen(InspectorScreen(view.data, member_id, against))

    def on_population_table_inspect(self, message: PopulationTable.Inspect) -> None:
        self.action_inspect(message.member_id)

    def action_compare(self) -> None:
        """The selected member against the others as they were at this step (issue 22)."""
        # imported when used, not at the top: keeps csro's start-up fast
        from csro_tui.tui.screens.compare_policies import compare_member

        view = self.query_one(DashboardView)
        member_id, _ = view.selection(self.focused)
        if member_id is None:
            self.notify("No policy at this step.", severity="warning")
            return
        compare_member(self.app, view.data, member_id, self.events[: self.shown_step])

    def action_diversity(self) -> None:
        # imported when used, not at the top: keeps csro's start-up fast
        from csro_tui.tui.screens.compare_policies import show_diversity

        show_diversity(self.app, events=self.events[: self.shown_step])

    def on_payoff_heatmap_inspect(self, message: PayoffHeatmap.Inspect) -> None:
        self.action_inspect(message.member_id, message.against)

    # --- drilling down ---------------------------------------------------------
    def _iteration_at(self, step: int) -> int | None:
        return self._folds.iteration_at(step) if self._folds is not None else None

    def action_jump(self, kind: str, direction: int) -> None:
        """To the previous / next event of `kind` (an iteration's or a proposal's start)."""
        if not self.events:
            return
        indices = range(self.step, len(self.events)) if direction > 0 else range(self.step - 2, -1, -1)
        target = next((i for i in indices if self.events[i].TYPE == kind), None)
        if target is None:
            what = "iteration" if kind == "iteration_started" else "proposal"
            self.notify(f"No {'later' if direction > 0 else 'earlier'} {what}.", timeout=3)
            return
        self.go(target + 1)

    def proposal_at(self, step: int) -> str | None:
        """The proposal the event at `step` is about, else the last one before it."""
        for event in reversed(self.events[:step]):
            proposal_id = getattr(event, "proposal_id", None)
            if proposal_id is not None and self.state is not None and proposal_id in self.state.proposals:
                return proposal_id
        return None

    def action_open_proposal(self) -> None:
        proposal_id = self.proposal_at(self.step)
        if proposal_id is None:
            self.notify("No proposal yet at this step; ] jumps to the next one.", severity="warning")
            return
        # start-up time: importing it loads pygments, tree_sitter
        from csro_tui.tui.screens.proposal import ProposalScreen

        self.app.push_screen(ProposalScreen(self.state, proposal_id))

    def action_resume(self) -> None:
        recorded = None
        if self.events and self.shown_step == len(self.events):
            recorded = self.query_one(DashboardView).data  # the last step: what the session resumes from
        elif self.state is not None:
            recorded = dashboard_data(self.state, log=self._folds.lines if self._folds is not None else None)
        self.app.resume_session(self.session_id, recorded)  # type: ignore[attr-defined]

    def action_first(self) -> None:
        self.go(1)

    def action_last(self) -> None:
        self.go(len(self.events))
