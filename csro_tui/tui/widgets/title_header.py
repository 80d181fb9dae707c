"""Textual's Header, with a title watcher that survives its screen closing.

Textual's Header updates its title in a watcher that can run after a screen
popped right after it was shown (a session that fails to start) has removed
the header's children; Textual then raises NoMatches, which would crash the
app.  This header registers the same watchers and ignores that case.
"""

from __future__ import annotations

from textual.app import NoScreen
from textual.css.query import NoMatches
from textual.events import Mount
from textual.widgets import Header
from textual.widgets._header import HeaderTitle


class TitleHeader(Header):
    def _on_mount(self, event: Mount) -> None:
        event.prevent_default()  # replaces Header's own watchers, not adds to them

        async def set_title() -> None:
            try:
                self.query_one(HeaderTitle).update(self.format_title())
            except (NoScreen, NoMatches):
                pass  # the header is being removed with its screen

        self.watch(self.app, "title", set_title)
        self.watch(self.app, "sub_title", set_title)
        self.watch(self.screen, "title", set_title)
        self.watch(self.screen, "sub_title", set_title)
