"""The payoff matrix as a heat map; the highlighted cell's details below it."""

from __future__ import annotations

from rich.color import Color
from rich.style import Style
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.message import Message
from textual.widgets import DataTable, Static

from csro_tui.numbers import number
from csro_tui.text import one_line, plain
from csro_tui.tui.model import DashboardData
from csro_tui.tui.widgets.measured_table import MeasuredTable

NEGATIVE = Color.from_rgb(190, 40, 50)
NEUTRAL = Color.from_rgb(40, 40, 48)
POSITIVE = Color.from_rgb(30, 150, 70)


def heat_colour(value: float, scale: float) -> Color:
    """Red for losses, green for wins, grey near zero; `scale` maps to full."""
    if scale <= 0:
        return NEUTRAL
    t = max(-1.0, min(1.0, value / scale))
    target = POSITIVE if t > 0 else NEGATIVE
    t = abs(t)
    a, b = NEUTRAL.triplet, target.triplet
    assert a is not None and b is not None
    return Color.from_rgb(*(round(x + (y - x) * t) for x, y in zip(a, b)))


def matrix_axes(data: DashboardData) -> tuple[list[str], list[str]]:
    """(row ids, column ids): every member both ways (one population), or seat 0's members
    against seat 1's (two populations: the meta-game is rectangular)."""
    if data.populations == 2:
        return [m.id for m in data.seat_members(0)], [m.id for m in data.seat_members(1)]
    ids = [m.id for m in data.members]
    return ids, ids


def matrix_title(data: DashboardData) -> str:
    if data.populations == 2:
        return "Payoffs: seat 0 (rows) vs seat 1 (columns)"  # fits 80 columns; the detail says whose return
    return "Payoff matrix (row vs column, seat-averaged)"


class PayoffTable(MeasuredTable):
    def on_resize(self) -> None:
        if isinstance(self.parent, PayoffHeatmap):
            self.parent.refit()  # its columns fit its width


class PayoffHeatmap(Vertical):
    """A DataTable with a cell cursor; each cell coloured by its mean."""

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self._data = DashboardData()
        self._fitted = (0, 0)  # the size the columns were fitted to

    def compose(self) -> ComposeResult:
        yield PayoffTable(cursor_type="cell", id="payoff-table", show_row_labels=True)
        yield Static("", id="payoff-detail")

    @staticmethod
    def _cell_text(cell) -> str:
        """A cell's figure: two decimals, "~" when sampled; "" for a missing one."""
        if cell is None:
            return ""
        return number(cell.mean, 2, signed=True) + ("~" if not cell.exact and cell.stderr else "")

    @property
    def table(self) -> DataTable:
        return self.query_one("#payoff-table", DataTable)

    def show(self, data: DashboardData) -> None:
        self._data = data
        table = self.table
        cursor = table.cursor_coordinate
        table.clear(columns=True)
        rows, columns = matrix_axes(data)
        ids = rows
        scale = max((abs(c.mean) for c in data.payoffs.values()), default=0.0)
        texts = {(row_id, col_id): self._cell_text(data.cell(row_id, col_id)) for row_id in ids for col_id in columns}
        # as wide as the widest figure ("-13.60~" in repeated Leduc), else its "~" is cut
        natural = max([0, *(len(i) for i in columns), *(len(t) for t in texts.values() if t)])
        width = self._fit_padding(table, ids, columns, max(6, natural), natural + 1)
        for member_id in columns:
            table.add_column(member_id, key=member_id, width=width)
        for row_id in ids:
            cells = []
            for col_id in columns:
                cell = data.cell(row_id, col_id)
                if cell is None:
                    cells.append(Text("  ·  ", justify="center", style="dim"))
                    continue
                colour = heat_colour(cell.mean, scale)
                cells.append(
                    Text(texts[(row_id, col_id)], justify="right", style=Style(bgcolor=colour, color="white"))
                )
            table.add_row(*cells, key=row_id, label=row_id)
        # Textual measures row labels when idle; a clear and refill while this screen was
        # under the review screen left the label column 0 wide (the row ids vanished, seen
        # in a human-oracle session), so its width is set here from the ids themselves.
        label_column = getattr(table, "_label_column", None)
        if ids and label_column is not None:
            label_column.content_width = max(label_column.content_width, *(len(i) for i in ids))
        if ids and columns:
            table.move_cursor(
                row=min(cursor.row, len(ids) - 1), column=min(cursor.column, len(columns) - 1)
            )
        self._describe()

    def _fit_padding(self, table: DataTable, rows: list[str], columns: list[str], width: int, unpadded: int) -> int:
        """The columns' width, and the table's cell padding: where the padded columns do not fit
        (five Kuhn members at 80 columns cut the last one to "+0.0"), no padding and one column
        of space before each figure instead (`unpadded` wide; the cells' colours tell them apart)."""
        self._fitted = (table.size.width, table.size.height)
        available = table.size.width
        if len(rows) + 1 > table.size.height:  # rows below: the vertical scrollbar takes its columns
            available -= table.styles.scrollbar_size_vertical
        label = max((len(i) for i in rows), default=0)
        padded = label + 2 + len(columns) * (width + 2)
        padding = 1 if available <= 0 or padded <= available else 0
        table.cell_padding = padding
        return width if padding else unpadded

    def refit(self) -> None:
        """The table's size changed (the detail under it wraps onto more lines, the terminal)."""
        table = self.table
        if (table.size.width, table.size.height) != self._fitted:
            self.show(self._data)

    class Inspect(Message):
        """Enter on a cell: inspect the row member against the column member."""

        def __init__(self, member_id: str, against: str) -> None:
            super().__init__()
            self.member_id = member_id
            self.against = against

    def on_data_table_cell_selected(self, event: DataTable.CellSelected) -> None:
        event.stop()
        picked = self.selected()
        if picked is not None:
            self.post_message(self.Inspect(*picked))

    def on_data_table_cell_highlighted(self, event: DataTable.CellHighlighted) -> None:
        event.stop()
        self._describe()

    def selected(self) -> tuple[str, str] | None:
        table = self.table
        if not table.row_count or not table.columns:  # two populations: seat 0's first member before seat 1's
            return None
        keys = table.coordinate_to_cell_key(table.cursor_coordinate)
        return keys.row_key.value, keys.column_key.value

    def detail_text(self) -> str:
        picked = self.selected()
        if picked is None:
            return "No matchups yet."
        row, col = picked
        a, b = self._data.member(row), self._data.member(col)
        names = one_line(f"{row} {a.name if a else ''} vs {col} {b.name if b else ''}")
        cell = self._data.cell(row, col)
        if cell is None:
            return f"{names}: not evaluated yet"
        if self._data.populations == 2:  # rows are seat 0's members: the cell is their return
            return f"{names}: seat 0's return {cell.describe()}"
        return f"{names}: {cell.describe()}"

    def _describe(self) -> None:
        self.query_one("#payoff-detail", Static).update(plain(self.detail_text()))
