"""The population: one row per member, with its meta-strategy weight."""

from __future__ import annotations

from rich.cells import cell_len
from rich.text import Text
from textual.message import Message
from textual.widgets import DataTable

from csro_tui.numbers import number
from csro_tui.text import one_line, plain
from csro_tui.tui.model import DashboardData, Member, MemberView
from csro_tui.tui.widgets.measured_table import MeasuredTable


NARROW_BELOW = 120  # terminal columns: the app's "-narrow" breakpoint
NARROW_NAME = 12  # characters of a name in a narrow table (the inspector has it whole)
NARROW_MIN_NAME = 8  # a name shortens this far before a column is left out
SHORT_HEADERS = {"AggScore": "Agg", "vs meta": "vsMeta"}
# Left out first when the narrow columns do not fit, as `csro sessions` drops its columns: the
# weight is in the Meta-strategy panel beside the table, and the inspector has both.
NARROW_DROP_ORDER = ("wt", "Agg")


class PopulationTable(MeasuredTable):
    """Rows keyed by policy id; Enter on a row asks to inspect it."""

    class Inspect(Message):
        def __init__(self, member_id: str) -> None:
            super().__init__()
            self.member_id = member_id

    def __init__(self, **kwargs) -> None:
        super().__init__(cursor_type="row", zebra_stripes=True, **kwargs)
        self._headers: list[str] = []
        self._narrow: bool | None = None
        self._fitted = (0, 0)  # the size the narrow columns were fitted to
        self._shown: DashboardData | None = None
        self._view = MemberView()
        self._listing: tuple = ()  # what the rows show now
        self._cells_shown: dict[str, tuple] = {}  # member id -> its row's cells as shown

    def show(self, data: DashboardData, view: MemberView = MemberView()) -> None:
        self._shown, self._view = data, view
        score_names = sorted({name for m in data.members for name in m.scores})
        # a narrow terminal (80 columns): the numbers fit; oracle and parent are in the inspector
        narrow = self.app.size.width < NARROW_BELOW
        # two populations: a seat column, seat 0's members then seat 1's (each weight is
        # within its seat's mixture; vs meta is against the other seat's)
        seats = data.populations == 2
        selected = self.selected_id
        members = view.members(data.members)
        if seats:  # seat 0's members, then seat 1's, each in the view's order
            members = sorted(members, key=lambda m: m.seat if m.seat is not None else -1)
        seat = ["seat"] if seats else []
        if narrow:
            headers, rows = self._fit(seat + ["id", "name", "wt", *(SHORT_HEADERS.get(n, n) for n in score_names)],
                                      members, score_names, seats)
        else:
            headers = seat + ["id", "name", "oracle", "parent", "weight", *score_names]
            rows = [self._row(member, score_names, False, seats) for member in members]
        # the same rows as shown already (a timeline step that changed no member): nothing to do
        listing = (tuple(headers), tuple(m.id for m in members), tuple(tuple(_plain(c) for c in row) for row in rows),
                   self.size.width, self.size.height)
        if listing == self._listing:
            return
        self._listing = listing
        if narrow or self._narrow is not False or not self._update_in_place(headers, members, rows):
            # narrow: the columns again too, else they keep the widths of longer names than now shown
            self.clear(columns=narrow or headers != self._headers or not self.columns)
            if not self.columns:
                self.add_columns(*headers)
            for member, cells in zip(members, rows):
                self.add_row(*cells, key=member.id)
            self._cells_shown = {member.id: tuple(cells) for member, cells in zip(members, rows)}
        self._headers, self._narrow, self._fitted = headers, narrow, (self.size.width, self.size.height)
        if selected is not None and selected in self.rows:
            self.move_cursor(row=self.get_row_index(selected))

    def _update_in_place(self, headers: list[str], members: list[Member], rows: list[list[Text | str]]) -> bool:
        """The same columns as shown: only the cells that changed are written, rows come and go
        by key and are put in the view's order (clearing and refilling 201 rows at each step
        of the timeline was most of its cost).  False when the table must be filled again."""
        if headers != self._headers or not self.columns or "id" not in headers:
            return False
        index = headers.index("id")
        position = {_plain(cells[index]): k for k, cells in enumerate(rows)}
        if len(position) != len(rows):
            return False
        shown, listed = self._cells_shown, {member.id for member in members}
        for gone in [member_id for member_id in shown if member_id not in listed]:
            self.remove_row(gone)
            del shown[gone]
        columns = [column.key for column in self.ordered_columns]
        for member, cells in zip(members, rows):
            before = shown.get(member.id)
            if before is None:
                self.add_row(*cells, key=member.id)
            elif before != tuple(cells):
                for column, old, new in zip(columns, before, cells):
                    if old != new:  # the column measured again only when the cell is wider (it measures all rows)
                        wider = cell_len(_plain(new)) > self.columns[column].content_width
                        self.update_cell(member.id, column, new, update_width=wider)
            shown[member.id] = tuple(cells)
        self.sort(key=lambda values: position[_plain(values[index])])
        return True

    def _row(self, member: Member, score_names: list[str], narrow: bool, seats: bool,
             name_width: int = NARROW_NAME) -> list[Text | str]:
        cells = self._cells(member, score_names, narrow, name_width)
        if seats:
            cells.insert(0, "–" if member.seat is None else str(member.seat))
        return cells

    def _fit(self, headers: list[str], members: list[Member], score_names: list[str],
             seats: bool) -> tuple[list[str], list[list[Text | str]]]:
        """80 columns: the names shorten (to NARROW_MIN_NAME), then the columns of
        NARROW_DROP_ORDER are left out, until every column fits whole (an Agg of "-135.981~"
        pushed vs meta off the panel, read as "+0.0"); the panel's bottom border says which."""
        width = self.size.width
        if len(members) + 1 > self.size.height:  # rows below: the vertical scrollbar takes its columns
            width -= self.styles.scrollbar_size_vertical
        rows = [self._row(member, score_names, True, seats) for member in members]
        dropped: list[str] = []

        def needed() -> int:
            return sum(max([cell_len(header), *(cell_len(_plain(row[i])) for row in rows)]) + 2 * self.cell_padding
                       for i, header in enumerate(headers))

        if width > 0:  # laid out (before that, on_resize shows it again)
            for name_width in range(NARROW_NAME - 1, NARROW_MIN_NAME - 1, -1):
                if needed() <= width:
                    break
                rows = [self._row(member, score_names, True, seats, name_width) for member in members]
            for header in NARROW_DROP_ORDER:
                if needed() <= width:
                    break
                if header in headers:
                    index = headers.index(header)
                    headers = headers[:index] + headers[index + 1:]
                    rows = [row[:index] + row[index + 1:] for row in rows]
                    dropped.append(header)
        if self.parent is not None and self.parent.has_class("panel"):
            self.parent.border_subtitle = f"{', '.join(dropped)} left out: i Inspect shows it" if dropped else ""
        return headers, rows

    def on_resize(self) -> None:
        if self._shown is None:
            return
        narrow = self.app.size.width < NARROW_BELOW
        if narrow != self._narrow or (narrow and (self.size.width, self.size.height) != self._fitted):
            self.show(self._shown, self._view)

    @staticmethod
    def _cells(member: Member, score_names: list[str], narrow: bool = False, name_width: int = NARROW_NAME) -> list[Text | str]:
        # a sampled score with its "±", as the review shows it; in 80 columns there is no room
        # for it: "~" marks it sampled, as in the payoff matrix (a wider terminal shows the ±)
        scores = [
            "–" if name not in member.scores
            else number(member.scores[name], 3, signed=True) + ("~" if name in member.score_stderr else "") if narrow
            else number(member.scores[name], 3, signed=True, stderr=member.score_stderr.get(name))
            for name in score_names
        ]
        if narrow:  # a person's edit still shows, after the name: "br-2 ✎" (the inspector names who)
            name = plain(one_line(member.name, name_width))
            if member.edited_by:
                name.append(" ✎", style="bold magenta")
            return [plain(one_line(member.id)), name, f"{member.weight:.3f}", *scores]
        return [
            plain(one_line(member.id)),
            plain(one_line(member.name)),
            # a person's edit shows: "best-response ✎ tui"
            Text(one_line(member.origin)) + (Text(f" ✎ {one_line(member.edited_by)}", style="bold magenta") if member.edited_by else Text()),
            plain(one_line(member.parent or "–")),
            f"{member.weight:.3f}",
            *scores,
        ]

    @property
    def selected_id(self) -> str | None:
        if not self.row_count:
            return None
        try:
            key = self.coordinate_to_cell_key(self.cursor_coordinate).row_key
        except Exception:  # noqa: BLE001 - cursor outside the table
            return None
        return key.value

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        if event.row_key.value is not None:
            self.post_message(self.Inspect(event.row_key.value))


def _plain(cell: Text | str) -> str:
    return cell.plain if isinstance(cell, Text) else cell
