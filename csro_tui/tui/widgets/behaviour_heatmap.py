"""The population's behaviour distances as a heat map of coloured cells (issue 22),
ordered so clusters show, with the clusters and the effective number of strategies."""

from __future__ import annotations

from rich.text import Text

from csro_tui.text import one_line

LABEL_WIDTH = 8


def _colour(distance: float) -> str:
    shade = max(0.0, min(1.0, distance))
    red, green, blue = (int(31 + (230 - 31) * shade), int(95 + (230 - 95) * shade), int(168 + (235 - 168) * shade))
    return f"#{red:02x}{green:02x}{blue:02x}"


def heat_map_text(diversity, width: int = 80) -> Text:
    """Rows and columns in the diversity's order; each cell two or three columns wide."""
    ids = diversity.ids
    text = Text()
    if len(ids) < 2:
        text.append("Fewer than two members: nothing to compare yet.", style="dim")
        return text
    cell = 3 if LABEL_WIDTH + 3 * len(ids) <= width - 2 else 2
    shown = ids[: max(1, (width - 2 - LABEL_WIDTH) // cell)]
    text.append(" " * LABEL_WIDTH)
    for policy_id in shown:
        text.append(one_line(policy_id, cell)[-cell:].rjust(cell), style="bold")
    text.append("\n")
    for i, row_id in enumerate(shown):
        text.append(one_line(row_id, LABEL_WIDTH - 1).ljust(LABEL_WIDTH), style="bold")
        for j in range(len(shown)):
            value = float(diversity.distances[i, j])
            text.append(" " * cell, style=f"on {_colour(value)}")
        text.append("\n")
    if len(shown) < len(ids):
        text.append(f"({len(ids) - len(shown)} more members at this width)\n", style="dim")
    text.append("same ", style="dim")
    for k in range(6):
        text.append("  ", style=f"on {_colour(k / 5)}")
    text.append(" different\n", style="dim")
    for line in diversity.lines():
        text.append(one_line(line, 400) + "\n")
    return text
