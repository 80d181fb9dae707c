"""A DataTable that draws again once it has measured what it holds.

Textual's DataTable measures new rows (column widths, the row-label column)
only when it is idle, and caches each row's rendered lines under a key that
the measurement does not change. A frame drawn between filling the table and
that idle moment cached lines at the pre-measurement widths (no row labels,
columns as wide as their headers) and kept showing them: on opening a session
at 80x24 the payoff matrix lost its row ids and columns moved, about one start
in five, depending on whether a frame came first.
"""

from __future__ import annotations

from textual import events
from textual.widgets import DataTable


class MeasuredTable(DataTable):
    async def _on_idle(self, event: events.Idle) -> None:
        measuring = self._require_update_dimensions or bool(self._updated_cells)
        await super()._on_idle(event)
        if measuring:
            self._clear_caches()  # lines cached before the measurement have the old widths
            self.refresh()
