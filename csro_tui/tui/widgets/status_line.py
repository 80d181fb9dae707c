"""One line: background work (with a spinner and elapsed time), iteration, and LLM calls, tokens and cost once there are any."""

from __future__ import annotations

import time

from textual.reactive import reactive
from textual.timer import Timer
from textual.widgets import Static

from csro_tui.text import plain
from csro_tui.tui.model import DashboardData

SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
RESTING = ("idle", "replay")


def work_heading(spinner: str, work: str, elapsed: int) -> str:
    """The running work and one time figure: its time left when the work says it, else the elapsed time."""
    if work.endswith(" left"):
        return f"{spinner} {work} (c cancels)"
    return f"{spinner} {work} · {elapsed} s (c cancels)"


class StatusLine(Static):
    work: reactive[str] = reactive("idle")

    def __init__(self, **kwargs) -> None:
        super().__init__("", **kwargs)
        self._data = DashboardData()
        self._since: float | None = None
        self._frame = 0
        self._timer: Timer | None = None
        self.llm = None  # the oracle's LLM calls in flight (backend.LLMActivity), which lead the line

    def show_llm(self, activity: object | None) -> None:
        self.llm = activity
        self._refresh_text()

    def show(self, data: DashboardData) -> None:
        self._data = data
        self._refresh_text()

    def watch_work(self, work: str) -> None:
        busy = work not in RESTING and not work.startswith(("waiting", "completed"))
        if busy and self._since is None:
            self._since = time.monotonic()
            self._timer = self.set_interval(0.25, self._tick)
        elif not busy and self._since is not None:
            self._since = None
            if self._timer is not None:
                self._timer.stop()
                self._timer = None
        self._refresh_text()

    def on_resize(self) -> None:
        self._refresh_text()  # the line's short forms depend on the width

    def _tick(self) -> None:
        self._frame += 1
        self._refresh_text()

    def _refresh_text(self) -> None:
        d = self._data
        width = self.size.width or 80
        if self._since is not None and self.llm is not None:
            spinner, now = SPINNER[self._frame % len(SPINNER)], time.monotonic()
            head = f"{spinner} {self.llm.line(now)} (c cancels, f finishes)"
            if len(head) > width - 36:
                head = f"{spinner} {self.llm.line(now)} (c cancels)"
            if len(head) > width - 36:  # room for the session's figures
                head = f"{spinner} {self.llm.line(now, short=True)} (c cancels)"
        elif self._since is not None:
            head = work_heading(SPINNER[self._frame % len(SPINNER)], self.work, int(time.monotonic() - self._since))
        else:
            head = f"⚙ {self.work}"
        parts = [head, f"iteration {d.iteration}", f"population {len(d.members)}"]
        # LLM figures once there are any: an offline oracle's zeros only crowd an 80-column line,
        # and a local model has no price.
        if d.llm_calls:
            parts += [f"LLM calls {d.llm_calls}", f"tokens {d.tokens:,}"]
        if d.cost:
            parts.append(f"cost ${d.cost:.4f}")
        if d.games_played:
            parts.append(f"games played {d.games_played}")
        if d.closed:
            parts.append("closed")
        line = "  │  ".join(parts)
        if len(line) > width - 2:  # padding: the session's figures in short, whole ones only
            parts[1:3] = [f"it {d.iteration}", f"pop {len(d.members)}"]
            while len(parts) > 1 and len(" │ ".join(parts)) > width - 2:
                parts.pop()
            line = " │ ".join(parts)
        self.update(plain(line))
