"""The meta-strategy as horizontal bars, one member per line."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from csro_tui.text import one_line
from csro_tui.tui.model import DashboardData, bar

PERCENT = 7  # " 100.0%"


class MetaBars(Static):
    BAR_WIDTH = 24
    MIN_BAR = 6

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._data: DashboardData | None = None

    def show(self, data: DashboardData) -> None:
        self._data = data
        self.update(self.render_bars(data))

    def on_resize(self) -> None:
        if self._data is not None:
            self.update(self.render_bars(self._data))

    def render_bars(self, data: DashboardData, width: int | None = None) -> Text:
        """Each member on one line, label, bar and weight cut to `width` (a bar wider than the
        panel wrapped each member onto three lines at 80 columns)."""
        if not data.members:
            return Text("No population yet.", style="dim")
        width = width if width is not None else (self.size.width or 80)
        label_width = min(max(len(one_line(f"{m.id} {m.name}")) for m in data.members), 28)
        bar_width = min(self.BAR_WIDTH, width - label_width - 1 - PERCENT)
        if bar_width < self.MIN_BAR:  # narrow: the names give way to the bars (the population table has them)
            label_width = max(4, width - 1 - PERCENT - self.MIN_BAR)
            bar_width = max(1, width - label_width - 1 - PERCENT)
        text = Text(no_wrap=True, overflow="ellipsis")
        for i, member in enumerate(data.members):
            label = one_line(f"{member.id} {member.name}", label_width).ljust(label_width)
            if i:
                text.append("\n")
            text.append(label + " ")
            text.append(bar(member.weight, bar_width), style="bold cyan")
            text.append(f" {member.weight:6.1%}")
        return text
