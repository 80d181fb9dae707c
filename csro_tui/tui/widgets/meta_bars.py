"""The meta-strategy as horizontal bars, one member per line."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text
from textual.widgets import Static

from csro_tui.numbers import number
from csro_tui.text import one_line
from csro_tui.tui.model import DashboardData, Member, MemberView, bar

PERCENT = 7  # " 100.0%"
SIDE_BY_SIDE_MIN = 26  # columns a seat's bars need beside the other's: "id name" + a short bar + weight
GUTTER = 2


class MetaBars(Static):
    BAR_WIDTH = 24
    MIN_BAR = 6

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._data: DashboardData | None = None
        self._view = MemberView()

    def show(self, data: DashboardData, view: MemberView = MemberView()) -> None:
        self._data, self._view = data, view
        self.update(self.render_bars(data))

    def on_resize(self) -> None:
        if self._data is not None:
            self.update(self.render_bars(self._data))

    def render_bars(self, data: DashboardData, width: int | None = None) -> Text | Table:
        """Each member on one line, label, bar and weight cut to `width` (a bar wider than the
        panel wrapped each member onto three lines at 80 columns).  Two populations: each
        seat's mixture under its seat and value, side by side where there is room, else
        seat 0's over seat 1's with the members at weight 0 folded into a count on a last
        line (stacked, every member took a line and seat 1's scrolled out of view at 80x24)."""
        if not data.members:
            return Text("No population yet.", style="dim")
        width = width if width is not None else (self.size.width or 80)
        if data.populations == 2:
            return self._seats(data, width)
        members = self._view.members(data.members)
        if not members:
            return Text(f"No member matches /{self._view.text.strip()}.", style="dim")
        weighted = [m for m in members if m.weight > 0]
        if not self._view.by_weight or not weighted or len(weighted) == len(members):
            return self._lines(members, width)
        # by weight: the members at 0 in one line (the table lists them; w lists every bar by id)
        text = self._lines(weighted, width)
        text.append(f"\nat 0%: {len(members) - len(weighted)} more (w: by id)", style="dim")
        return text

    def _seats(self, data: DashboardData, width: int) -> Text | Table:
        side_by_side = width >= 2 * SIDE_BY_SIDE_MIN + GUTTER
        column = (width - GUTTER) // 2 if side_by_side else width
        groups = []
        folded = []  # stacked: each seat's members at weight 0, as a count (seat 1's rows stay in view)
        for seat in (0, 1):
            group = Text(no_wrap=True, overflow="ellipsis")
            group.append(seat_heading(seat, data.meta_value), style="bold")
            members = self._view.members(data.seat_members(seat))
            shown = members
            if not side_by_side and any(m.weight > 0 for m in members):  # (no mixture yet: each shows)
                shown = [m for m in members if m.weight > 0]
            if len(shown) < len(members):
                folded.append(f"seat {seat}: {len(members) - len(shown)}")
            group.append("\n")
            group.append_text(self._lines(shown, column) if shown else Text("no members yet", style="dim"))
            groups.append(group)
        if not side_by_side:
            if folded:
                groups.append(Text(f"at 0%: {' · '.join(folded)}", style="dim"))
            return Text("\n", no_wrap=True, overflow="ellipsis").join(groups)
        grid = Table.grid(padding=(0, GUTTER, 0, 0))
        grid.add_column(width=column, no_wrap=True)
        grid.add_column(width=column, no_wrap=True)
        grid.add_row(*groups)
        return grid

    def _lines(self, members: list[Member], width: int) -> Text:
        label_width = min(max(len(one_line(f"{m.id} {m.name}")) for m in members), 28)
        bar_width = min(self.BAR_WIDTH, width - label_width - 1 - PERCENT)
        if bar_width < self.MIN_BAR:  # narrow: the names give way to the bars (the population table has them)
            label_width = max(4, width - 1 - PERCENT - self.MIN_BAR)
            bar_width = max(1, width - label_width - 1 - PERCENT)
        text = Text(no_wrap=True, overflow="ellipsis")
        for i, member in enumerate(members):
            label = one_line(f"{member.id} {member.name}", label_width).ljust(label_width)
            if i:
                text.append("\n")
            text.append(label + " ")
            text.append(bar(member.weight, bar_width), style="bold cyan")
            text.append(f" {member.weight:6.1%}")
        return text


def seat_heading(seat: int, seat0_value: float | None) -> str:
    """"seat 0 · value -0.0556": a seat's population and its value of the meta-game (seat 1's is
    the negation of seat 0's)."""
    if seat0_value is None:
        return f"seat {seat}"
    return f"seat {seat} · value {number(seat0_value if seat == 0 else -seat0_value, 4, signed=True)}"
