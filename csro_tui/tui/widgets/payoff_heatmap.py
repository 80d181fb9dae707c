"""The payoff matrix as a heat map; the highlighted cell's details below it."""

from __future__ import annotations

from functools import lru_cache

from rich.color import Color
from rich.style import Style
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.message import Message
from textual.widgets import DataTable, Static

from csro_tui.numbers import number
from csro_tui.text import one_line, plain
from csro_tui.tui.model import DashboardData, MemberView
from csro_tui.tui.widgets.measured_table import MeasuredTable

NEGATIVE = Color.from_rgb(190, 40, 50)
NEUTRAL = Color.from_rgb(40, 40, 48)
POSITIVE = Color.from_rgb(30, 150, 70)


HEAT_LEVELS = 64  # shades each way: the cells' styles are made once per shade, not per cell


def heat_colour(value: float, scale: float) -> Color:
    """Red for losses, green for wins, grey near zero; `scale` maps to full."""
    if scale <= 0:
        return NEUTRAL
    return _shade(round(max(-1.0, min(1.0, value / scale)) * HEAT_LEVELS))


@lru_cache(maxsize=2 * HEAT_LEVELS + 1)
def _shade(level: int) -> Color:
    target = POSITIVE if level > 0 else NEGATIVE
    t = abs(level) / HEAT_LEVELS
    a, b = NEUTRAL.triplet, target.triplet
    assert a is not None and b is not None
    return Color.from_rgb(*(round(x + (y - x) * t) for x, y in zip(a, b)))


@lru_cache(maxsize=2 * HEAT_LEVELS + 1)
def _cell_style(colour: Color) -> Style:
    return Style(bgcolor=colour, color="white")


# Members on each axis at most (the view's first: the heaviest): 200 x 200 cells took 3-6 s to
# lay out per timeline step; the `/` filter brings any other member in.
MATRIX_MEMBERS = 20


def matrix_axes(data: DashboardData, view: MemberView = MemberView()) -> tuple[list[str], list[str]]:
    """(row ids, column ids) in the view's order, MATRIX_MEMBERS at most each: every member
    both ways (one population), or seat 0's members against seat 1's (two populations: the
    meta-game is rectangular)."""
    if data.populations == 2:
        return ([m.id for m in view.members(data.seat_members(0))][:MATRIX_MEMBERS],
                [m.id for m in view.members(data.seat_members(1))][:MATRIX_MEMBERS])
    ids = [m.id for m in view.members(data.members)][:MATRIX_MEMBERS]
    return ids, ids


SAMPLED_MARK = "~"
SAMPLED_LEGEND = "~ sampled: the detail line has its ±"


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
        self._view = MemberView()
        self._fitted = (0, 0)  # the size the columns were fitted to
        self._laid_out: tuple = ()  # what the table shows now (axes, matrix, size)
        self._scale: tuple = (None, 0.0)  # (matrix, its largest |mean|): 40,000 cells are not read again per step

    def compose(self) -> ComposeResult:
        yield PayoffTable(cursor_type="cell", id="payoff-table", show_row_labels=True)
        yield Static("", id="payoff-detail")

    @staticmethod
    def _cell_text(cell) -> str:
        """A cell's figure: two decimals, "~" when sampled; "" for a missing one."""
        if cell is None:
            return ""
        return number(cell.mean, 2, signed=True) + (SAMPLED_MARK if not cell.exact and cell.stderr else "")

    @property
    def table(self) -> DataTable:
        return self.query_one("#payoff-table", DataTable)

    def show(self, data: DashboardData, view: MemberView = MemberView()) -> None:
        rows, columns = matrix_axes(data, view)
        table = self.table
        # the same cells as shown already (the matrix's cells are shared while no payoff changed)
        laid_out = (rows, columns, table.size.width, table.size.height)
        if laid_out == self._laid_out and data.payoffs is self._data.payoffs:
            self._data, self._view = data, view
            self._describe()
            return
        self._data, self._view, self._laid_out = data, view, laid_out
        selected = self.selected()
        table.clear(columns=True)
        ids = rows
        if self._scale[0] is not data.payoffs:  # the matrices are shared while unchanged (adapt.PayoffCells)
            self._scale = (data.payoffs, max((abs(c.mean) for c in data.payoffs.values()), default=0.0))
        scale = self._scale[1]
        texts = {(row_id, col_id): self._cell_text(data.cell(row_id, col_id)) for row_id in ids for col_id in columns}
        self._note(data, view, rows, columns, any(t.endswith(SAMPLED_MARK) for t in texts.values()))
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
                    Text(texts[(row_id, col_id)], justify="right", style=_cell_style(colour))
                )
            table.add_row(*cells, key=row_id, label=row_id)
        # Textual measures row labels when idle; a clear and refill while this screen was
        # under the review screen left the label column 0 wide (the row ids vanished, seen
        # in a human-oracle session), so its width is set here from the ids themselves.
        label_column = getattr(table, "_label_column", None)
        if ids and label_column is not None:
            label_column.content_width = max(label_column.content_width, *(len(i) for i in ids))
        if ids and columns:  # the cursor stays on its members where they are still shown
            row, column = selected if selected is not None else (ids[0], columns[0])
            table.move_cursor(row=ids.index(row) if row in ids else 0, column=columns.index(column) if column in columns else 0)
        self._describe()

    def _note(self, data: DashboardData, view: MemberView, rows: list[str], columns: list[str], sampled: bool) -> None:
        """The panel's bottom line: what "~" means, where it appears, and how many members are shown."""
        total = len(data.seat_members(0)) if data.populations == 2 else len(data.members)
        notes = [SAMPLED_LEGEND] if sampled else []
        if len(rows) < total:
            notes.append(f"{len(rows)} of {total} shown, {'heaviest first' if view.by_weight else 'by id'}"
                         + ("" if view.text.strip() else "; / filters"))
        if self.parent is not None and self.parent.has_class("panel"):
            self.parent.border_subtitle = " · ".join(notes)

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
            self.show(self._data, self._view)

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
