"""The headline metric (exploitability, AggScore, ...) per iteration, as a chart
of block characters with a value axis and an iteration axis.

The chart takes the room it is given: one column per iteration (wider
columns when there are few), as many rows as the panel has.  Values are
printed with one fixed precision (`csro_tui.numbers.number`), so the axis,
the last value and the best agree and never show `-0.0000`.
"""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from csro_tui.numbers import number
from csro_tui.tui.model import DashboardData, block_plot

DIGITS = 4
LOWER_IS_BETTER = ("exploitability", "nashconv", "expl")


class MetricCurve(Static):
    MIN_HEIGHT = 2
    MAX_COLUMN_WIDTH = 8

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._data: DashboardData | None = None

    def show(self, data: DashboardData) -> None:
        self._data = data
        self.update(self.render_curve(data))

    def on_resize(self) -> None:
        if self._data is not None:
            self.update(self.render_curve(self._data))

    def render_curve(self, data: DashboardData, width: int | None = None, height: int | None = None) -> Text:
        width = width if width is not None else max(self.size.width, 20)
        height = height if height is not None else max(self.size.height, 5)
        title = data.metric_name or "metric"
        if not data.metric_history:
            return Text(f"{title}: no values yet", style="dim")
        iterations = [i for i, _ in data.metric_history]
        values = [v for _, v in data.metric_history]
        if len(values) == 1:  # a chart of one point is a block of identical rows
            return Text(f"{title} {number(values[0], DIGITS)} (it {iterations[0]})\n", style="bold") + Text(
                "the chart starts with the next iteration", style="dim")
        # a metric that is never negative is drawn from 0: Leduc's 1.4667 against 4.7 is not a sliver
        floor = 0.0 if min(values) >= 0 else None
        labels = [number(max(values), DIGITS), number(min(values) if floor is None else floor, DIGITS)]
        pad = max(len(label) for label in labels)
        room = max(width - pad - 2, 4)
        if len(values) > room:  # the newest that fit
            iterations, values = iterations[-room:], values[-room:]
        column = max(1, min(self.MAX_COLUMN_WIDTH, room // len(values)))
        chart_height = max(self.MIN_HEIGHT, height - 3)  # title, axis line, iteration labels
        rows = block_plot([v for v in values for _ in range(column)], chart_height, floor=floor)

        lower_better = any(word in title.lower() for word in LOWER_IS_BETTER)
        best = min(values) if lower_better else max(values)
        last = f"last {number(values[-1], DIGITS)} (it {iterations[-1]})"
        header = next(
            (h for h in (f"{title} per iteration  {last}  best {number(best, DIGITS)}", f"{title}  {last}", f"{title} {number(values[-1], DIGITS)} (it {iterations[-1]})", last) if len(h) <= width),
            last,
        )
        text = Text()
        text.append(header + "\n", style="bold")
        for i, row in enumerate(rows):
            label = labels[0] if i == 0 else labels[1] if i == len(rows) - 1 else ""
            text.append(label.rjust(pad) + " ┤", style="dim")
            text.append(row, style="green")
            text.append("\n")
        text.append(" " * pad + " └" + "─" * (len(values) * column) + "\n", style="dim")
        text.append(" " * (pad + 2) + iteration_axis(iterations, column), style="dim")
        return text


def iteration_axis(iterations: list[int], column: int) -> str:
    """Iteration numbers under their columns, as many as fit without touching."""
    width = len(iterations) * column
    axis = [" "] * (width + 6)
    marks = list(range(len(iterations)))
    # always the first and the last; others where they fit
    order = [0, len(iterations) - 1] + marks[1:-1]
    placed: list[tuple[int, str]] = []
    for index in order:
        label = str(iterations[index])
        start = index * column
        cells = range(start, start + len(label))
        if any(s <= c < s + len(text) + 1 or s - 1 <= c < s for s, text in placed for c in cells):
            continue
        placed.append((start, label))
    for start, label in placed:
        for offset, char in enumerate(label):
            if start + offset < len(axis):
                axis[start + offset] = char
    return "".join(axis).rstrip()
