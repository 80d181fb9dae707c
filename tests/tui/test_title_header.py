"""The header's title watcher must not crash the app while its screen closes."""

from __future__ import annotations

from textual.app import App
from textual.widgets._header import HeaderTitle

from csro_tui.tui.widgets.title_header import TitleHeader


class HeaderApp(App):
    def compose(self):
        yield TitleHeader()


async def test_title_follows_the_sub_title():
    app = HeaderApp()
    async with app.run_test() as pilot:
        app.sub_title = "kuhn_poker"
        await pilot.pause()
        assert "kuhn_poker" in str(app.query_one(HeaderTitle).render())


async def test_title_change_after_the_header_lost_its_children_is_ignored():
    app = HeaderApp()
    async with app.run_test() as pilot:
        await app.query_one(HeaderTitle).remove()  # as when its screen is being closed
        app.sub_title = "changed while closing"
        await pilot.pause()
    assert app.return_code in (0, None)
