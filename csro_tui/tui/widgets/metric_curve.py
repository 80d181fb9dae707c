"""The metric over iterations, as a small chart of block characters."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from csro_tui.tui.model import DashboardData, block_plot


class MetricCurve(Static):
    HEIGHT = 5
    MAX_POINTS = 60

    def show(self, data: DashboardData) -> None:
        self.update(self.render_curve(data))

    def render_curve(self, data: DashboardData) -> Text:
        title = data.metric_name or "metric"
        if not data.metric_history:
            return Text(f"{title}: no values yet", style="dim")
        values = [v for _, v in data.metric_history][-self.MAX_POINTS :]
        # few points: widen each column so the curve reads as a curve
        repeat = max(1, min(4, 40 // len(values)))
        rows = block_plot([v for v in values for _ in range(repeat)], self.HEIGHT)
        high, low = f"{max(values):.4g}", f"{min(values):.4g}"
        pad = max(len(high), len(low))
        text = Text()
        text.append(f"{title}  last {values[-1]:.4g} (iteration {data.metric_history[-1][0]})\n", style="bold")
        for i, row in enumerate(rows):
            label = high if i == 0 else low if i == len(rows) - 1 else ""
            text.append(label.rjust(pad) + " │", style="dim")
            text.append(row, style="green")
            if i < len(rows) - 1:
                text.append("\n")
        return text
