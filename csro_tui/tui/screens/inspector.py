"""One policy: its code, scores, row of the payoff matrix, origin and lineage."""

from __future__ import annotations

from rich.syntax import Syntax
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.screen import Screen
from textual.widgets import Footer, Static

from csro_tui.tui.model import DashboardData
from csro_tui.numbers import number


def facts_text(data: DashboardData, member_id: str) -> Text:
    member = data.member(member_id)
    text = Text()
    if member is None:
        return Text(f"No policy {member_id} in this population.", style="red")
    text.append(f"{member.id}  {member.name}\n", style="bold")
    text.append(f"origin {member.origin}  iteration {member.iteration}  weight {member.weight:.3f}\n")
    for name, value in sorted(member.scores.items()):
        text.append(f"{name} {number(value, 4, signed=True)}\n")
    text.append("\nLineage\n", style="bold underline")
    for depth, ancestor in enumerate(data.lineage(member_id)):
        text.append("  " * depth + ("└ " if depth else "") + f"{ancestor.id} {ancestor.name} ({ancestor.origin})\n")
    children = data.children(member_id)
    if children:
        text.append("Derived: " + ", ".join(f"{c.id} {c.name}" for c in children) + "\n")
    text.append("\nAgainst each member (its row)\n", style="bold underline")
    for other, cell in data.row(member_id):
        label = f"  vs {other.id} {other.name}"[:30].ljust(30)
        if cell is None:
            text.append(f"{label} not evaluated\n", style="dim")
        else:
            style = "green" if cell.mean > 0 else "red" if cell.mean < 0 else ""
            text.append(f"{label} {cell.describe()}\n", style=style)
    return text


class InspectorScreen(Screen[None]):
    BINDINGS = [
        Binding("escape,q", "app.pop_screen", "Back", id="inspector.back"),
        Binding("p", "play", "Play against it", id="inspector.play"),
    ]

    def __init__(self, data: DashboardData, member_id: str) -> None:
        super().__init__()
        self.data = data
        self.member_id = member_id

    def compose(self) -> ComposeResult:
        member = self.data.member(self.member_id)
        with Horizontal(id="inspector"):
            with VerticalScroll(id="inspector-code", classes="panel") as code:
                code.border_title = "Code"
                yield Static(
                    Syntax(member.source if member else "", "python", line_numbers=True, theme="monokai"),
                )
            with VerticalScroll(id="inspector-facts", classes="panel") as facts:
                facts.border_title = "Scores and lineage"
                yield Static(facts_text(self.data, self.member_id), id="inspector-text")
        yield Footer()

    def action_play(self) -> None:
        self.app.action_play(self.member_id)  # type: ignore[attr-defined]
