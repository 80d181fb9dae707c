"""The population: one row per member, with its meta-strategy weight."""

from __future__ import annotations

from rich.text import Text
from textual.message import Message
from textual.widgets import DataTable

from csro_tui.numbers import number
from csro_tui.text import one_line, plain
from csro_tui.tui.model import DashboardData, Member
from csro_tui.tui.widgets.measured_table import MeasuredTable


NARROW_BELOW = 120  # terminal columns: the app's "-narrow" breakpoint
NARROW_NAME = 12  # characters of a name in a narrow table (the inspector has it whole)
SHORT_HEADERS = {"AggScore": "Agg", "vs meta": "vsMeta"}


class PopulationTable(MeasuredTable):
    """Rows keyed by policy id; Enter on a row asks to inspect it."""

    class Inspect(Message):
        def __init__(self, member_id: str) -> None:
            super().__init__()
            self.member_id = member_id

    def __init__(self, **kwargs) -> None:
        super().__init__(cursor_type="row", zebra_stripes=True, **kwargs)
        self._score_names: list[str] = []
        self._narrow: bool | None = None
        self._seats = False
        self._shown: DashboardData | None = None

    def show(self, data: DashboardData) -> None:
        self._shown = data
        score_names = sorted({name for m in data.members for name in m.scores})
        # a narrow terminal (80 columns): the numbers fit; oracle and parent are in the inspector
        narrow = self.app.size.width < NARROW_BELOW
        # two populations: a seat column, seat 0's members then seat 1's (each weight is
        # within its seat's mixture; vs meta is against the other seat's)
        seats = data.populations == 2
        selected = self.selected_id
        self.clear(columns=score_names != self._score_names or narrow != self._narrow or seats != self._seats
                   or not self.columns)
        if not self.columns:
            seat = ["seat"] if seats else []
            if narrow:
                self.add_columns(*seat, "id", "name", "wt", *(SHORT_HEADERS.get(name, name) for name in score_names))
            else:
                self.add_columns(*seat, "id", "name", "oracle", "parent", "weight", *score_names)
        self._score_names, self._narrow, self._seats = score_names, narrow, seats
        members = sorted(data.members, key=lambda m: m.seat if m.seat is not None else -1) if seats else data.members
        for member in members:
            cells = self._cells(member, score_names, narrow)
            if seats:
                cells.insert(0, "–" if member.seat is None else str(member.seat))
            self.add_row(*cells, key=member.id)
        if selected is not None and selected in self.rows:
            self.move_cursor(row=self.get_row_index(selected))

    def on_resize(self) -> None:
        if self._shown is not None and (self.app.size.width < NARROW_BELOW) != self._narrow:
            self.show(self._shown)

    @staticmethod
    def _cells(member: Member, score_names: list[str], narrow: bool = False) -> list[Text | str]:
        # a sampled score with its "±", as the review shows it; in 80 columns there is no room
        # for it: "~" marks it sampled, as in the payoff matrix (a wider terminal shows the ±)
        scores = [
            "–" if name not in member.scores
            else number(member.scores[name], 3, signed=True) + ("~" if name in member.score_stderr else "") if narrow
            else number(member.scores[name], 3, signed=True, stderr=member.score_stderr.get(name))
            for name in score_names
        ]
        if narrow:  # a person's edit still shows, after the name: "br-2 ✎" (the inspector names who)
            name = plain(one_line(member.name, NARROW_NAME))
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
