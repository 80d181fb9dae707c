"""One policy: its code, scores, row of the payoff matrix, origin and lineage."""

from __future__ import annotations

from rich.syntax import Syntax
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.screen import Screen
from textual.widgets import Footer, Static

from csro_tui.text import clean_text, one_line
from csro_tui.tui.model import DashboardData
from csro_tui.numbers import number


def facts_text(data: DashboardData, member_id: str, against: str | None = None) -> Text:
    member = data.member(member_id)
    text = Text()
    if member is not None and against is not None:
        cell = data.cell(member_id, against)
        opponent = data.member(against)
        matchup = one_line(f"{member_id} vs {against} {opponent.name if opponent else ''}")
        text.append(f"Matchup {matchup}: " + (cell.describe() if cell else "not evaluated yet") + "\n\n", style="bold")
    if member is None:
        return Text(f"No policy {one_line(member_id)} in this population.", style="red")
    text.append(one_line(f"{member.id}  {member.name}") + "\n", style="bold")
    text.append(one_line(f"origin {member.origin}  iteration {member.iteration}  weight {member.weight:.3f}") + "\n")
    if member.seat is not None:  # two populations: it plays only its seat
        text.append(f"seat {member.seat}: in seat {member.seat}'s population, its weight within that seat's "
                    f"mixture; it plays seat {1 - member.seat}'s members\n")
    if member.edited_by:
        text.append(f"✎ edited by {one_line(member.edited_by)} before it was accepted: "
                    "the oracle's original and the diff are in the session's timeline\n", style="magenta")
    for name, value in sorted(member.scores.items()):
        text.append(f"{name} {number(value, 4, signed=True)}\n")
    text.append("\nLineage\n", style="bold underline")
    for depth, ancestor in enumerate(data.lineage(member_id)):
        edited = f", edited by {ancestor.edited_by}" if ancestor.edited_by else ""
        text.append("  " * depth + ("└ " if depth else "") + one_line(f"{ancestor.id} {ancestor.name} ({ancestor.origin}{edited})") + "\n")
    children = data.children(member_id)
    if children:
        text.append("Derived: " + one_line(", ".join(f"{c.id} {c.name}" for c in children)) + "\n")
    if member.seat is not None:
        text.append(f"\nAgainst seat {1 - member.seat}'s members (its return in seat {member.seat})\n", style="bold underline")
    else:
        text.append("\nAgainst each member (its row)\n", style="bold underline")
    for other, cell in data.row(member_id):
        label = ("  " + one_line(f"vs {other.id} {other.name}"))[:30].ljust(30)
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
        Binding("d", "compare", "Compare", id="inspector.compare", show=False),
    ]

    def __init__(self, data: DashboardData, member_id: str, against: str | None = None) -> None:
        super().__init__()
        self.data = data
        self.member_id = member_id
        self.against = against  # the column of the payoff matrix's cursor, when opened from there

    def compose(self) -> ComposeResult:
        member = self.data.member(self.member_id)
        with Horizontal(id="inspector"):
            with VerticalScroll(id="inspector-code", classes="panel") as code:
                code.border_title = "Code"
                yield Static(
                    Syntax(clean_text(member.source) if member else "", "python", line_numbers=True, theme="monokai"),
                )
            with VerticalScroll(id="inspector-facts", classes="panel") as facts:
                facts.border_title = "Scores and lineage"
                yield Static(facts_text(self.data, self.member_id, self.against), id="inspector-text")
        yield Footer()

    def action_compare(self) -> None:
        # imported when used, not at the top: keeps csro's start-up fast
        from csro_tui.tui.screens.compare_policies import compare_member

        compare_member(self.app, self.data, self.member_id)

    def action_play(self) -> None:
        self.app.action_play(self.member_id)  # type: ignore[attr-defined]
