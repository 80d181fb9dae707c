"""The live dashboard of a session."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.css.query import NoMatches
from textual.screen import Screen
from textual.widgets import Footer

from csro_tui.tui.model import DashboardData
from csro_tui.tui.widgets.dashboard_view import DashboardView
from csro_tui.tui.widgets.error_panel import ErrorPanel
from csro_tui.tui.widgets.payoff_heatmap import PayoffHeatmap
from csro_tui.tui.widgets.population_table import PopulationTable
from csro_tui.tui.widgets.status_line import StatusLine
from csro_tui.tui.widgets.title_header import TitleHeader


def session_dir(app: object, session_id: str) -> str:
    """Where a session's files are, for the error panel ("" when unknown)."""
    store = getattr(getattr(app, "backend", None), "store", None)
    if not session_id or store is None:
        return ""
    try:
        return str(store.session_dir(session_id))
    except Exception:  # noqa: BLE001 - a test backend without a store: say less
        return ""


class DashboardScreen(Screen[None]):
    BINDINGS = [
        Binding("n", "app.next_iteration", "Next iteration", id="dashboard.next"),
        Binding("N", "app.run_iterations(5)", "Run 5", id="dashboard.run5", show=False),
        Binding("c", "app.cancel_work", "Cancel work", id="dashboard.cancel", show=False),  # the status line says "c cancels" while work runs
        # the reply panel's title says "l: full view" while a call runs
        Binding("l", "app.llm_call", "LLM call", id="dashboard.llm_call", show=False, tooltip="LLM call in flight (full view)"),
        Binding("f", "app.finish_oracle", "Finish", id="dashboard.finish", show=False,
                tooltip="LLM oracle: no more calls; propose the best reply so far"),
        Binding("i", "inspect", "Inspect", id="dashboard.inspect"),
        Binding("d", "compare", "Compare", id="dashboard.compare", show=False),
        Binding("b", "diversity", "Diversity", id="dashboard.diversity", show=False),
        Binding("p", "play", "Play", id="dashboard.play"),
        Binding("s", "app.sessions", "Sessions", id="dashboard.sessions"),
        Binding("question_mark", "app.help", "Help", id="dashboard.help"),
        Binding("escape", "app.close_session", "Close", id="dashboard.close", tooltip="Close session"),
    ]

    def __init__(self, data: DashboardData | None = None) -> None:
        super().__init__()
        self._initial = data or DashboardData()
        self._pending: DashboardData | None = None
        self._work_text = "idle"
        self._error_details = ""
        self._llm: object | None = None

    def compose(self) -> ComposeResult:
        yield TitleHeader()
        yield ErrorPanel(id="error-panel")
        yield DashboardView(id="dashboard")
        yield StatusLine(id="status")
        yield Footer()

    def on_mount(self) -> None:
        if self._pending is None:  # nothing newer arrived before the screen was mounted
            self._pending = self._initial
        self._apply()
        self.query_one(StatusLine).work = self._work_text
        self.query_one(PopulationTable).focus()

    @property
    def data(self) -> DashboardData:
        return self.query_one(DashboardView).data

    def show(self, data: DashboardData) -> None:
        """Show `data` now, or when the screen is next visible (a review may be on top)."""
        self._pending = data
        if self.is_mounted and self.is_current:
            self._apply()

    def on_screen_resume(self) -> None:
        self._apply()
        self.show_llm(self._llm)

    def _apply(self) -> None:
        data, self._pending = self._pending, None
        if data is None:
            return
        try:
            view, status, panel = self.query_one(DashboardView), self.query_one(StatusLine), self.query_one(ErrorPanel)
        except NoMatches:
            return  # the screen is being torn down (the app quits): its last event has nowhere to go
        self.sub_title = " · ".join(x for x in (data.game, data.oracle, data.meta_solver) if x)
        view.show(data)
        status.show(data)
        panel.details = self._error_details
        panel.show(data, session_dir=session_dir(self.app, data.session_id), live=True)

    def show_error(self, details: str) -> None:
        """An exception the app caught from the engine's worker: shown until the session is resumed."""
        self._error_details = details
        if self.is_mounted:
            panel = self.query_one(ErrorPanel)
            panel.details = details
            panel.show(self.data, session_dir=session_dir(self.app, self.data.session_id), live=True)

    def clear_error(self) -> bool:
        """The session goes on after its error (`n` resumes it): the panel goes; True if one showed."""
        shown = bool(self._error_details) or self.data.failed
        self._error_details = ""
        if self.is_mounted:
            panel = self.query_one(ErrorPanel)
            panel.details = ""
            panel.set_class(False, "-shown")
        return shown

    def set_work(self, text: str) -> None:
        self._work_text = text
        if self.is_mounted:
            self.query_one(StatusLine).work = text

    def show_llm(self, activity: object | None) -> None:
        """The oracle's LLM calls in flight (None: none): on the status line, the reply in the events panel
        (now, or when the screen is next visible)."""
        self._llm = activity
        if self.is_mounted and self.is_current:
            try:
                self.query_one(StatusLine).show_llm(activity)
                self.query_one(DashboardView).show_llm(activity)
            except NoMatches:
                pass

    def action_inspect(self, member_id: str | None = None, against: str | None = None) -> None:
        if member_id is None:
            member_id, against = self.query_one(DashboardView).selection(self.focused)
        if member_id is None:
            self.notify("The population is empty.", severity="warning")
            return
        from csro_tui.tui.screens.inspector import InspectorScreen  # start-up time: importing it loads pygments

        self.app.push_screen(InspectorScreen(self.data, member_id, against))

    def action_compare(self) -> None:
        # imported when used, not at the top: keeps csro's start-up fast
        from csro_tui.tui.screens.compare_policies import compare_member

        member_id, _ = self.query_one(DashboardView).selection(self.focused)
        if member_id is None:
            self.notify("The population is empty.", severity="warning")
            return
        compare_member(self.app, self.data, member_id)

    def action_diversity(self) -> None:
        # imported when used, not at the top: keeps csro's start-up fast
        from csro_tui.tui.screens.compare_policies import show_diversity

        show_diversity(self.app, self.data.session_id)

    def on_population_table_inspect(self, message: PopulationTable.Inspect) -> None:
        self.action_inspect(message.member_id)

    def on_payoff_heatmap_inspect(self, message: PayoffHeatmap.Inspect) -> None:
        self.action_inspect(message.member_id, message.against)

    def action_play(self) -> None:
        self.app.action_play()  # type: ignore[attr-defined]
