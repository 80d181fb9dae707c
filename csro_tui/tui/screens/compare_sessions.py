"""Comparing recorded sessions: marks in the sessions list, and the "Compare sessions" screen.

`MarkingScreen` is the sessions list's base: `space` marks or unmarks the
session under the cursor (a ● before its id), `c` opens `CompareSessionsScreen`
over the marked ones (or the one under the cursor with nothing marked).  The
screen shows what `csro compare` prints, from the same functions
(`experiments.compare`, `commands.compare.table_rows`): per configuration the
figures across repeats with 95% intervals, and the headline figure per
iteration, one line per configuration.  Sessions are read in a worker thread.
"""

from __future__ import annotations

from typing import Any, Callable

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Static

from csro_tui.text import plain
from csro_tui.tui.widgets.title_header import TitleHeader

MARK = "● "
# One colour per configuration, in the order of the legend (as the SVG's, where a terminal has them).
SERIES_STYLES = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#F0E442", "white")


class MarkingScreen(Screen[None]):
    """Marks on a DataTable of sessions whose row keys are session ids; the screen's `_list` shows `mark(id)` before each id."""

    BINDINGS = [
        Binding("space", "toggle_mark", "Mark", tooltip="Mark or unmark the session to compare", id="sessions.mark"),
        Binding("c", "compare_marked", "Compare", tooltip="Compare the marked sessions", id="sessions.compare"),
    ]

    backend: Any

    @property
    def marked(self) -> list[str]:
        if not hasattr(self, "_marked"):
            self._marked: list[str] = []
        return self._marked

    def _sessions_table(self) -> DataTable:
        return self.query_one(DataTable)

    def _cursor_session(self) -> str | None:
        table = self._sessions_table()
        if not table.row_count:
            return None
        return table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value

    def action_toggle_mark(self) -> None:
        session_id = self._cursor_session()
        if session_id is None:
            return
        if session_id in self.marked:
            self.marked.remove(session_id)
        else:
            self.marked.append(session_id)
        self.show_marks()
        table = self._sessions_table()
        table.move_cursor(row=min(table.cursor_row + 1, table.row_count - 1))

    def mark(self, session_id: str) -> str:
        """What goes before a session's id in the list: ● when it is marked."""
        return MARK if session_id in self.marked else ""

    def show_marks(self) -> None:
        """List the rows again (the screen's `_list`, which puts `mark(id)` before each id)."""
        relist = getattr(self, "_list", None)
        if relist is not None:
            relist()

    def action_compare_marked(self) -> None:
        chosen = list(self.marked) or [s for s in [self._cursor_session()] if s]
        if not chosen:
            return
        self.app.push_screen(CompareSessionsScreen(self.backend, chosen))


def load_comparison(backend: Any, session_ids: list[str]) -> list[Any]:
    from csro_tui.experiments.compare import compare_sessions, load_summaries  # start-up time: loaded only when this runs

    return compare_sessions(load_summaries(backend.store, session_ids))


class CompareSessionsScreen(Screen[None]):
    """Compare sessions: the table per configuration and the figure per iteration."""

    BINDINGS = [
        Binding("escape", "app.pop_screen", "Back", id="compare_sessions.back"),
        Binding("question_mark", "app.help", "Help", id="compare_sessions.help"),
    ]

    def __init__(self, backend: Any, session_ids: list[str],
                 load: Callable[[Any, list[str]], list[Any]] = load_comparison) -> None:
        super().__init__()
        self.backend = backend
        self.session_ids = list(session_ids)
        self.load_rows = load
        self.rows: list[Any] | None = None

    def compose(self) -> ComposeResult:
        yield TitleHeader()
        with VerticalScroll(id="compare-sessions"):
            yield DataTable(cursor_type="row", id="compare-table", zebra_stripes=True)
            yield Static("reading the sessions…", id="compare-chart")
        yield Footer()

    def on_mount(self) -> None:
        self.sub_title = f"Compare sessions · {len(self.session_ids)} marked"
        self.load()

    @work(thread=True, exclusive=True, group="compare", exit_on_error=False)
    def load(self) -> None:
        try:
            rows = self.load_rows(self.backend, self.session_ids)
        except Exception as error:  # noqa: BLE001 - one line, the screen stays
            self.app.call_from_thread(self._failed, f"Cannot compare: {error}")
            return
        self.app.call_from_thread(self._show, rows)

    def _failed(self, message: str) -> None:
        self.query_one("#compare-chart", Static).update(plain(message, "bold red"))
        self.notify(message, severity="error")

    def _show(self, rows: list[Any]) -> None:
        from csro_tui.experiments.compare import charts_by_metric, series_letter, table_rows  # start-up time: loaded only when this runs
        from csro_tui.sessions.plot import text_chart  # start-up time: loaded only when this runs

        self.rows = rows
        table = self.query_one("#compare-table", DataTable)
        table.clear(columns=True)
        columns, cells = table_rows(rows, None)
        for name, justify in columns:
            table.add_column(name, key=name)
        for index, line in enumerate(cells):
            style = SERIES_STYLES[index % len(SERIES_STYLES)]
            table.add_row(Text(f"{series_letter(index)} ", style=f"bold {style}") + plain(line[0]),
                          *(Text(cell, justify=justify) for cell, (_, justify) in zip(line[1:], columns[1:])))
        table.styles.height = len(cells) + 2  # the header, and a sideways scrollbar in a narrow terminal
        charts = charts_by_metric(rows)
        width = max(20, min(self.size.width - 16, 100))
        # each figure on its own axis (sessions of different games: exploitability and AggScore)
        height = max(6, min(16, (self.size.height - len(cells) - 10) // max(1, len(charts))))
        chart = Text()
        if len(charts) > 1:
            chart.append(f"{len(charts)} figures ({', '.join(m for m, _ in charts)}): one chart each, "
                         "never on one axis\n", style="yellow")
        for metric, indexed in charts:
            letters = [series_letter(index) for index, _ in indexed]  # the table's letters
            lines = text_chart([(label, xs, ys) for _, (label, xs, ys, _) in indexed], width=width, height=height,
                               marks=letters)
            part = Text(f"{metric} per iteration (mean across repeats; the table's ± is a 95% interval)\n",
                        style="bold")  # the chart's base style: its lines are bold too
            for line in lines:
                styled = Text(line)
                for index, _ in indexed:
                    styled.highlight_words([series_letter(index)], style=f"bold {SERIES_STYLES[index % len(SERIES_STYLES)]}")
                part.append_text(styled)
                part.append("\n")
            if not lines:
                part.append("no figure recorded yet\n")
            chart.append_text(part)
        self.query_one("#compare-chart", Static).update(chart)
