"""All dashboard panels in one container, shared by the live dashboard and the timeline."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.css.query import NoMatches
from textual.widgets import Static

from csro_tui.text import clean_text, one_line, plain
from csro_tui.tui.model import DashboardData
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


class DashboardView(Horizontal):
    """Two columns that size their panels independently (app.tcss): population and payoff
    matrix on the left; meta-strategy (as tall as it needs, up to a cap), metric and events on
    the right, the events taking what is left (at 80x24 a shared grid row left them 2 lines)."""

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.data = DashboardData()

    def compose(self) -> ComposeResult:
        with Vertical(id="dashboard-left"):
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

    def show(self, data: DashboardData) -> None:
        self.data = data
        if not self.query(PopulationTable):
            return  # not composed yet (or torn down): on_mount shows self.data
        self.query_one(PopulationTable).show(data)
        self.query_one(MetaBars).show(data)
        self.query_one(PayoffHeatmap).show(data)
        self.query_one("#panel-payoffs").border_title = matrix_title(data)
        self.query_one("#panel-population").border_title = "Populations (seat 0, seat 1)" if data.populations == 2 else "Population"
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
