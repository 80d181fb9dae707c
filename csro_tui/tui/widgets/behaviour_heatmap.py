"""The population's behaviour distances as a heat map of coloured cells (issue 22),
ordered so clusters show, with the clusters and the effective number of strategies;
a cursor cell whose distance and both members' names are given under the map."""

from __future__ import annotations

from rich.text import Text

from csro_tui.text import one_line

LABEL_WIDTH = 8
NAMED_LABEL_WIDTH = 18  # "p123 br-123" beside each row where the terminal has room


def _colour(distance: float) -> str:
    shade = max(0.0, min(1.0, distance))
    red, green, blue = (int(31 + (230 - 31) * shade), int(95 + (230 - 95) * shade), int(168 + (235 - 168) * shade))
    return f"#{red:02x}{green:02x}{blue:02x}"


def map_layout(count: int, width: int, names: bool = True) -> tuple[int, int, int]:
    """(row label width, cell width, columns that fit) for `count` members in `width` columns."""
    label = NAMED_LABEL_WIDTH if names and width >= 100 else LABEL_WIDTH
    cell = 3 if label + 3 * count <= width - 2 else 2
    return label, cell, max(1, (width - 2 - label) // cell)


def column_window(count: int, fit: int, cursor: int) -> range:
    """The members whose columns are shown: `fit` of them, the cursor's column among them."""
    first = min(max(cursor - fit // 2, 0), max(count - fit, 0))
    return range(first, min(first + fit, count))


def heat_map_text(diversity, width: int = 80, cursor: tuple[int, int] | None = None,
                  names: dict[str, str] | None = None) -> Text:
    """Every member a row (in the diversity's order) and as many columns as fit, around the
    cursor's (row, column), which is marked; column ids written downwards (cut to two
    characters they read "p…p…")."""
    ids = diversity.ids
    names = names or {}
    text = Text()
    if len(ids) < 2:
        text.append("Fewer than two members: nothing to compare yet.", style="dim")
        return text
    label, cell, fit = map_layout(len(ids), width, bool(names))
    row_cursor, column_cursor = cursor if cursor is not None else (-1, -1)
    columns = column_window(len(ids), fit, max(column_cursor, 0))
    tall = max(len(ids[j]) for j in columns)
    for k in range(tall):  # the column ids, one character per line, bottom-aligned
        text.append(" " * label)
        for j in columns:
            policy_id = ids[j].rjust(tall)
            text.append(policy_id[k].rjust(cell), style="bold reverse" if j == column_cursor else "bold")
        text.append("\n")
    for i, row_id in enumerate(ids):
        name = names.get(row_id, "")
        row_label = one_line(f"{row_id} {name}" if name and label > LABEL_WIDTH else row_id, label - 1).ljust(label)
        text.append(row_label, style="bold reverse" if i == row_cursor else "bold")
        for j in columns:
            value = float(diversity.distances[i, j])
            mark = "◆".center(cell) if (i, j) == (row_cursor, column_cursor) else " " * cell
            text.append(mark, style=f"black on {_colour(value)}")
        text.append("\n")
    hidden = len(ids) - len(columns)
    if hidden:
        text.append(f"(columns {columns.start + 1}-{columns.stop} of {len(ids)}: ←/→ moves along)\n", style="dim")
    text.append("same ", style="dim")
    for k in range(6):
        text.append("  ", style=f"on {_colour(k / 5)}")
    text.append(" different\n", style="dim")
    for line in diversity.lines():
        text.append(one_line(line, 400) + "\n")
    return text


def cursor_line(diversity, cursor: tuple[int, int], names: dict[str, str]) -> str:
    """The cursor cell in words: both members with their names, and their distance."""
    i, j = cursor
    a, b = diversity.ids[i], diversity.ids[j]
    distance = float(diversity.distances[i, j])
    error = float(diversity.errors[i, j]) if getattr(diversity, "errors", None) is not None else 0.0
    noise = f" ± {error:.3f}" if error else ""
    same = " (the same behaviour)" if distance == 0 and i != j else ""
    return one_line(f"{a} {names.get(a, '')} vs {b} {names.get(b, '')}: behaviour distance {distance:.3f}{noise}{same}")
