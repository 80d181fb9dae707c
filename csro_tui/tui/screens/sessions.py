"""Recorded sessions, and stepping through one session's timeline."""

from __future__ import annotations

from typing import Any

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.worker import get_current_worker
from textual.widgets import DataTable, Footer, Static

from csro_tui.tui.backend import session_summary
from csro_tui.tui.widgets.dashboard_view import DashboardView
from csro_tui.tui.widgets.population_table import PopulationTable
from csro_tui.tui.widgets.status_line import StatusLine
from csro_tui.tui.widgets.title_header import TitleHeader


class SessionsScreen(Screen[None]):
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
        yield DataTable(cursor_type="row", id="sessions-list")
        yield Footer()

    def on_mount(self) -> None:
        self.sub_title = "Recorded sessions"
        self.query_one(DataTable).add_columns("session", "summary")
        self.load()

    @work(thread=True, exclusive=True, group="sessions")
    def load(self) -> None:
        try:
            rows = [(info.id, session_summary(info)) for info in self.backend.list_sessions()]
        except Exception as error:  # noqa: BLE001
            self.app.call_from_thread(self.notify, f"Cannot list sessions: {error}", severity="error")
            return
        self.app.call_from_thread(self._show, rows)

    def _show(self, rows: list[tuple[str, str]]) -> None:
        table = self.query_one(DataTable)
        table.clear()
        for session_id, summary in rows:
            table.add_row(session_id, summary, key=session_id)
        if not rows:
            self.notify(f"No recorded sessions under {self.backend.store.root}.")
        table.focus()

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


class TimelineScreen(Screen[None]):
    """The dashboard as it was after each event: left/right step through them."""

    BINDINGS = [
        Binding("left", "step(-1)", "Back a step", id="timeline.back", priority=True),
        Binding("right", "step(1)", "Forward", id="timeline.forward", priority=True),
        Binding("shift+left", "step(-10)", "Back 10", id="timeline.back10", show=False, priority=True),
        Binding("shift+right", "step(10)", "Forward 10", id="timeline.forward10", show=False, priority=True),
        Binding("home", "first", "First", id="timeline.first", priority=True, show=False),
        Binding("end", "last", "Last", id="timeline.last", priority=True, show=False),
        Binding("i", "inspect", "Inspect", id="timeline.inspect"),
        Binding("R", "resume", "Resume session", id="timeline.resume"),
        Binding("escape", "app.pop_screen", "Back", id="timeline.close"),
        Binding("question_mark", "app.help", "Help", id="timeline.help"),
    ]

    def __init__(self, backend: Any, session_id: str) -> None:
        super().__init__()
        self.backend = backend
        self.session_id = session_id
        self.events: list[Any] = []
        self.step = 0

    def compose(self) -> ComposeResult:
        yield TitleHeader()
        yield Static("loading…", id="timeline-bar")
        yield DashboardView(id="dashboard")
        yield StatusLine(id="timeline-status")
        yield Footer()

    def on_mount(self) -> None:
        self.sub_title = self.session_id
        self.load()

    @work(thread=True, exclusive=True, group="timeline")
    def load(self) -> None:
        try:
            events = self.backend.read_events(self.session_id)
        except Exception as error:  # noqa: BLE001 - a corrupt or missing session
            self.app.call_from_thread(self.notify, str(error), severity="error", timeout=10)
            self.app.call_from_thread(self._set_bar, f"cannot open {self.session_id}")
            return
        self.app.call_from_thread(self._loaded, events)

    def _set_bar(self, text: str) -> None:
        self.query_one("#timeline-bar", Static).update(text)

    def _loaded(self, events: list[Any]) -> None:
        self.events = events
        self.go(len(events))

    def go(self, step: int) -> None:
        """Show the dashboard after event `step`; the fold runs in a worker."""
        if not self.events:
            return
        self.step = max(1, min(step, len(self.events)))
        self._fold(self.step)

    @work(thread=True, exclusive=True, group="timeline-step")
    def _fold(self, step: int) -> None:
        from csro_tui.tui.adapt import event_line

        try:
            data = self.backend.dashboard_at(self.events, step)
            line = event_line(self.events[step - 1])
        except Exception as error:  # noqa: BLE001 - a log the fold rejects
            self.app.call_from_thread(self.notify, f"Cannot replay to step {step}: {error}", severity="error", timeout=10)
            return
        if not get_current_worker().is_cancelled:
            self.app.call_from_thread(self._show_step, step, data, line)

    def _show_step(self, step: int, data: Any, line: str) -> None:
        if step != self.step:
            return  # a newer step was asked for meanwhile
        self.query_one(DashboardView).show(data)
        status = self.query_one(StatusLine)
        status.show(data)
        status.work = "replay"
        self._set_bar(f"step {step}/{len(self.events)}  {line}")

    def action_step(self, delta: int) -> None:
        self.go(self.step + delta)

    def action_inspect(self, member_id: str | None = None) -> None:
        view = self.query_one(DashboardView)
        member_id = member_id or view.selected_member
        if member_id is None:
            self.notify("No policy at this step.", severity="warning")
            return
        from csro_tui.tui.screens.inspector import InspectorScreen

        self.app.push_screen(InspectorScreen(view.data, member_id))

    def on_population_table_inspect(self, message: PopulationTable.Inspect) -> None:
        self.action_inspect(message.member_id)

    def action_resume(self) -> None:
        self.app.resume_session(self.session_id)  # type: ignore[attr-defined]

    def action_first(self) -> None:
        self.go(1)

    def action_last(self) -> None:
        self.go(len(self.events))
