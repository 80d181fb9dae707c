"""All dashboard panels in one container, shared by the live dashboard and the timeline."""

from __future__ import annotations

from rich.text import Text
from dataclasses import replace

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.css.query import NoMatches
from textual.widgets import Input, Static

from csro_tui.text import clean_text, one_line, plain
from csro_tui.tui.model import DashboardData, MemberView
from csro_tui.tui.widgets.event_log import EventLog
from csro_tui.tui.widgets.meta_bars import MetaBars
from csro_tui.tui.widgets.metric_curve import MetricCurve
from csro_tui.tui.widgets.payoff_heatmap import PayoffHeatmap, matrix_title
from csro_tui.tui.widgets.population_table import PopulationTable


def reply_tail(reply: str, lines: int, width: int, *, streamed: bool = True, scored: tuple[str, ...] = ()) -> Text:
    """The last `lines` lines of an LLM reply (untrusted: cleaned, never markup), each on one
    row of `width`, under one row on the replies scored before it in this proposal (newest first)."""
    text = Text()
    if scored:  # the newest first: a narrow panel cuts the oldest
        text.append_text(plain(one_line(" · ".join(reversed(scored)), max(width, 1)) + "\n", style="dim"))
        lines = max(lines - 1, 1)
    if reply:
        text.append_text(plain("\n".join(clean_text(reply).splitlines()[-lines:])))
        text.no_wrap, text.overflow = True, "ellipsis"
    elif streamed:
        text.append("(nothing yet: the model reads the prompt first; minutes on a small local model)", style="dim")
    else:
        text.append("(the reply arrives whole when the call ends: streaming is off for this server)", style="dim")
    return text


class MemberFilter(Input):
    """`/`: type to keep the members whose id or name contains the text (as lazygit's and
    k9s's `/`); enter goes back to the table with the filter kept, esc clears it."""

    BINDINGS = [Binding("escape", "clear", "Clear filter", id="dashboard.filter_clear")]

    def open(self, opened: bool) -> None:
        """Shown and in the focus chain only while open (else a screen's first focus lands in it)."""
        self.set_class(opened, "-open")
        self.can_focus = opened

    def on_mount(self) -> None:
        self.open(False)

    def action_clear(self) -> None:
        self.value = ""
        self.post_message(self.Submitted(self, ""))


class DashboardView(Horizontal):
    """Two columns that size their panels independently (app.tcss): population and payoff
    matrix on the left; meta-strategy (as tall as it needs, up to a cap), metric and events on
    the right, the events taking what is left (at 80x24 a shared grid row left them 2 lines).
    The population views list the members in one `MemberView` (w: by weight / by id; /: filter)."""

    BINDINGS = [
        Binding("slash", "filter", "Filter", id="dashboard.filter", tooltip="Filter members by id or name"),
        Binding("w", "order", "By weight/id", id="dashboard.order", show=False),
        Binding("escape", "clear_filter", "Clear filter", id="dashboard.filter_off", show=False),
    ]

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.data = DashboardData()
        self.view = MemberView()

    def compose(self) -> ComposeResult:
        with Vertical(id="dashboard-left"):
            yield MemberFilter(placeholder="filter members by id or name (enter keeps, esc clears)", id="member-filter")
            with Vertical(id="panel-population", classes="panel") as panel:
                panel.border_title = "Population"
                yield PopulationTable(id="population")
            with Vertical(id="panel-payoffs", classes="panel") as panel:
                panel.border_title = "Payoff matrix (row vs column, seat-averaged)"
                yield PayoffHeatmap(id="payoffs")
        with Vertical(id="dashboard-right"):
            with Vertical(id="panel-meta", classes="panel") as panel:
                panel.border_title = "Meta-strategy"
                yield MetaBars(id="meta-bars")
            with Vertical(id="panel-metric", classes="panel") as panel:
                panel.border_title = "Metric"
                yield MetricCurve(id="metric")
            with Vertical(id="panel-log", classes="panel") as panel:
                panel.border_title = "Events"
                yield EventLog(id="event-log")
                yield Static(id="llm-reply")  # while an LLM call runs: its reply as it streams in

    def on_mount(self) -> None:
        # an update that came before the panels were mounted (the newest, read when it runs)
        self.call_after_refresh(lambda: self.show(self.data))

    # --- the members' order and filter -------------------------------------------------
    def action_filter(self) -> None:
        field = self.query_one(MemberFilter)
        field.open(True)
        field.focus()

    def action_order(self) -> None:
        self.view = replace(self.view, by_weight=not self.view.by_weight)
        self.show(self.data)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "clear_filter":  # esc clears a filter first; with none, the screen's esc runs
            return bool(self.view.text)
        return True

    def action_clear_filter(self) -> None:
        self.query_one(MemberFilter).action_clear()

    def on_input_changed(self, event: Input.Changed) -> None:
        if isinstance(event.input, MemberFilter):
            event.stop()
            self.view = replace(self.view, text=event.value)
            self.show(self.data)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if isinstance(event.input, MemberFilter):
            event.stop()
            self.view = replace(self.view, text=event.value)
            event.input.open(bool(event.value.strip()))
            self.show(self.data)
            self.query_one(PopulationTable).focus()

    def show(self, data: DashboardData) -> None:
        self.data = data
        if not self.query(PopulationTable):
            return  # not composed yet (or torn down): on_mount shows self.data
        view = self.view
        self.query_one(PopulationTable).show(data, view)
        self.query_one(MetaBars).show(data, view)
        self.query_one(PayoffHeatmap).show(data, view)
        self.query_one("#panel-payoffs").border_title = matrix_title(data)
        heading = "Populations (seat 0, seat 1)" if data.populations == 2 else "Population"
        shown = len(view.members(data.members))
        self.query_one("#panel-population").border_title = f"{heading} · {view.describe(shown, len(data.members))}"
        meta = self.query_one("#panel-meta")
        meta.border_title = "Meta-strategies" if data.populations == 2 else "Meta-strategy"
        meta.set_class(data.populations == 2, "-seats")  # two headings more: a taller cap (app.tcss)
        self.query_one(MetricCurve).show(data)
        self.query_one(EventLog).show(data.log)

    def show_llm(self, activity: object | None) -> None:
        """While the oracle waits for an LLM call (`backend.LLMActivity`), the events panel
        shows the reply as it arrives (its last lines); None brings the events back."""
        try:
            panel, log, reply = self.query_one("#panel-log"), self.query_one(EventLog), self.query_one("#llm-reply", Static)
        except NoMatches:
            return
        if activity is None:
            if reply.display:
                reply.display, log.display = False, True
                panel.border_title = "Events"
            return
        call = activity.calls[0]
        panel.border_title = f"LLM reply {call.number} · l: full view"
        reply.display, log.display = True, False
        reply.update(reply_tail(activity.reply, max(reply.size.height, 1), reply.size.width, streamed=call.streamed, scored=activity.scored))

    @property
    def selected_member(self) -> str | None:
        return self.query_one(PopulationTable).selected_id

    def selection(self, focused: object) -> tuple[str | None, str | None]:
        """(member, opponent) that `i`/Enter act on: the payoff matrix's cursor
        cell (row member against column member) when the matrix has focus, else
        the population table's row."""
        heatmap = self.query_one(PayoffHeatmap)
        if focused is heatmap.table:
            picked = heatmap.selected()
            if picked is not None:
                return picked
        return self.selected_member, None
