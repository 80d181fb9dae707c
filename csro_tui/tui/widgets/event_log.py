"""The event log: one entry per engine event, newest at the bottom."""

from __future__ import annotations

from textual.events import Resize
from textual.widgets import RichLog


class EventLog(RichLog):
    """Entries wrap onto the next line instead of being cut: at 80 columns the panel is ~28
    characters wide and a cut line ("#25 proposal_decided: i2.1 r") hid the decision."""

    def __init__(self, **kwargs) -> None:
        super().__init__(max_lines=2000, wrap=True, min_width=1, markup=False, **kwargs)
        self._lines: list[str] = []
        self._shown = 0
        self._width = 0

    REWRITE_AT_MOST = 60  # lines written again at once: the newest (a 2,000-event session took 1-5 s per step)

    def show(self, lines: list[str]) -> None:
        """Append what is new; rewrite if the list shrank (timeline stepped back) or grew by more
        than REWRITE_AT_MOST lines (a jump), then with the newest REWRITE_AT_MOST lines only."""
        if len(lines) < self._shown or len(lines) - self._shown > self.REWRITE_AT_MOST:
            self.clear()
            self._shown = max(len(lines) - self.REWRITE_AT_MOST, 0)
        self._lines = list(lines)
        if self._hidden:
            return  # wrapped now, each character would take a line of its own; on_resize writes them
        for line in lines[self._shown :]:
            self.write(line)
        self._shown = len(lines)

    @property
    def _hidden(self) -> bool:
        """Laid out with no room (the panel shows the LLM reply instead): a write now would
        wrap at one column, a character a line, and stay so."""
        return self.is_mounted and self._size_known and (not self.display or self.size.width <= 1)

    def on_resize(self, event: Resize) -> None:
        """Wrapped at the old width: wrap again at the new one (RichLog's own handler runs too);
        shown again, what came while hidden is written at the width it has now."""
        width = event.size.width
        if width <= 1:
            return
        if self._shown < len(self._lines) and not (width != self._width and self._width):
            self.show(self._lines)
        elif width != self._width and self._width and self._lines:
            lines = self._lines
            self.clear()
            self.show(lines)
            if self.auto_scroll:  # the newest event stays in view once the lines are laid out again
                self.call_after_refresh(self.scroll_end, animate=False)
        self._width = width

    def clear(self) -> "EventLog":
        self._shown = 0
        return super().clear()
