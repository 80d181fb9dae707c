"""Widgets of the dashboard; each renders part of a `DashboardData`."""

from csro_tui.tui.widgets.dashboard_view import DashboardView
from csro_tui.tui.widgets.event_log import EventLog
from csro_tui.tui.widgets.meta_bars import MetaBars
from csro_tui.tui.widgets.metric_curve import MetricCurve
from csro_tui.tui.widgets.payoff_heatmap import PayoffHeatmap
from csro_tui.tui.widgets.population_table import PopulationTable
from csro_tui.tui.widgets.status_line import StatusLine

__all__ = [
    "DashboardView",
    "EventLog",
    "MetaBars",
    "MetricCurve",
    "PayoffHeatmap",
    "PopulationTable",
    "StatusLine",
]
