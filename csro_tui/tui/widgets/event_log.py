"""The event log: one line per engine event, newest at the bottom."""

from __future__ import annotations

from textual.widgets import RichLog


class EventLog(RichLog):
    def __init__(self, **kwargs) -> None:
        super().__init__(max_lines=2000, wrap=False, markup=False, **kwargs)
        self._shown = 0

    def show(self, lines: list[str]) -> None:
        """Append what is new; rewrite if the list shrank (timeline stepped back)."""
        if len(lines) < self._shown:
            self.clear()
            self._shown = 0
        for line in lines[self._shown :]:
            self.write(line)
        self._shown = len(lines)

    def clear(self) -> "EventLog":
        self._shown = 0
        return super().clear()
