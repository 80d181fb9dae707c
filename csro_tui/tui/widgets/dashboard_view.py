"""All dashboard panels in one container, shared by the live dashboard and the timeline."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Grid, Vertical

from csro_tui.tui.model import DashboardData
from csro_tui.tui.widgets.event_log import EventLog
from csro_tui.tui.widgets.meta_bars import MetaBars
from csro_tui.tui.widgets.metric_curve import MetricCurve
from csro_tui.tui.widgets.payoff_heatmap import PayoffHeatmap
from csro_tui.tui.widgets.population_table import PopulationTable


class DashboardView(Grid):
    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.data = DashboardData()

    def compose(self) -> ComposeResult:
        with Vertical(id="panel-population", classes="panel") as panel:
            panel.border_title = "Population"
            yield PopulationTable(id="population")
        with Vertical(id="panel-meta", classes="panel") as panel:
            panel.border_title = "Meta-strategy"
            yield MetaBars(id="meta-bars")
        with Vertical(id="panel-payoffs", classes="panel") as panel:
            panel.border_title = "Payoff matrix (row vs column, seat-averaged)"
            yield PayoffHeatmap(id="payoffs")
        with Vertical(id="panel-metric", classes="panel") as panel:
            panel.border_title = "Metric"
            yield MetricCurve(id="metric")
        with Vertical(id="panel-log", classes="panel") as panel:
            panel.border_title = "Events"
            yield EventLog(id="event-log")

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
        self.query_one(MetricCurve).show(data)
        self.query_one(EventLog).show(data.log)

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
