"""The meta-strategy as horizontal bars."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from csro_tui.text import one_line
from csro_tui.tui.model import DashboardData, bar


class MetaBars(Static):
    BAR_WIDTH = 24

    def show(self, data: DashboardData) -> None:
        self.update(self.render_bars(data))

    def render_bars(self, data: DashboardData) -> Text:
        if not data.members:
            return Text("No population yet.", style="dim")
        label_width = min(max(len(one_line(f"{m.id} {m.name}")) for m in data.members), 28)
        text = Text()
        for i, member in enumerate(data.members):
            label = one_line(f"{member.id} {member.name}")[:label_width].ljust(label_width)
            if i:
                text.append("\n")
            text.append(label + " ")
            text.append(bar(member.weight, self.BAR_WIDTH), style="bold cyan")
            text.append(f" {member.weight:6.1%}")
        return text
