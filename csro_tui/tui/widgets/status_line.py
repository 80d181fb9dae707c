"""One line: background work, iteration, LLM calls, tokens and cost."""

from __future__ import annotations

from textual.reactive import reactive
from textual.widgets import Static

from csro_tui.tui.model import DashboardData


class StatusLine(Static):
    work: reactive[str] = reactive("idle")

    def __init__(self, **kwargs) -> None:
        super().__init__("", **kwargs)
        self._data = DashboardData()

    def show(self, data: DashboardData) -> None:
        self._data = data
        self._refresh_text()

    def watch_work(self, _: str) -> None:
        self._refresh_text()

    def _refresh_text(self) -> None:
        d = self._data
        parts = [
            f"⚙ {self.work}",
            f"iteration {d.iteration}",
            f"population {len(d.members)}",
            f"LLM calls {d.llm_calls}",
            f"tokens {d.tokens:,}",
            f"cost ${d.cost:.4f}",
        ]
        if d.games_played:
            parts.append(f"games played {d.games_played}")
        if d.closed:
            parts.append("closed")
        self.update("  │  ".join(parts))
