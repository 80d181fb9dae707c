"""The population: one row per member, with its meta-strategy weight."""

from __future__ import annotations

from textual.message import Message
from textual.widgets import DataTable

from rich.text import Text

from csro_tui.text import one_line, plain
from csro_tui.tui.model import DashboardData, Member
from csro_tui.numbers import number


class PopulationTable(DataTable):
    """Rows keyed by policy id; Enter on a row asks to inspect it."""

    class Inspect(Message):
        def __init__(self, member_id: str) -> None:
            super().__init__()
            self.member_id = member_id

    def __init__(self, **kwargs) -> None:
        super().__init__(cursor_type="row", zebra_stripes=True, **kwargs)
        self._score_names: list[str] = []

    def show(self, data: DashboardData) -> None:
        score_names = sorted({name for m in data.members for name in m.scores})
        selected = self.selected_id
        self.clear(columns=score_names != self._score_names or not self.columns)
        if not self.columns:
            self.add_columns("id", "name", "oracle", "parent", "weight", *score_names)
        self._score_names = score_names
        for member in data.members:
            self.add_row(*self._cells(member, score_names), key=member.id)
        if selected is not None and selected in self.rows:
            self.move_cursor(row=self.get_row_index(selected))

    @staticmethod
    def _cells(member: Member, score_names: list[str]) -> list[Text | str]:
        scores = [
            number(member.scores[name], 3, signed=True) if name in member.scores else "–" for name in score_names
        ]
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
