"""The review screen of issue 36: a live preview refining on screen, a compact header at
80x24 with the code scrollable from the keyboard at once, names beside ids, and a `?`
that starts with the keys of the screen it is opened on."""

from __future__ import annotations

import dataclasses

from textual.containers import VerticalScroll
from textual.widgets import Markdown, Static

from csro_tui.engine.gate import LivePreview, PreviewEstimate
from csro_tui.records import Preview
from csro_tui.tui.screens.help import HelpScreen
from csro_tui.tui.screens.review import ReviewScreen
from tests.tui.sample import ScreenApp, sample_review

LONG_SOURCE = "class Policy:\n" + "".join(f"    X{n} = {n}\n" for n in range(80)) + "    def act(self, obs):\n        return 0\n"


def _summary(app) -> str:
    return str(app.screen.query_one("#review-summary", Static).render())


def _live_review():
    live = LivePreview()
    info = dataclasses.replace(sample_review(), expected_payoff=None, per_member={}, live_preview=live,
                               measuring="measuring: the preview has started; figures come as its first matches end",
                               member_names={"p0": "always_bet", "p1": "tight_bluffer", "p2": "always_pass"})
    return info, live


def _estimate(bots_scored: int, done: bool = False) -> PreviewEstimate:
    preview = Preview(expected_payoff=0.25, per_member={"p0": 0.5, "p1": 0.0}, stderr={"p0": 0.1, "p1": 0.2},
                      expected_stderr=0.11, pairs=5,
                      population_metrics={"agg_score": -1.0 - bots_scored, "pop_return": 0.5, "pop_expl": 1.5})
    return PreviewEstimate(preview, 2, 2, bots_scored, 43, 10, done)


async def test_the_review_shows_a_live_preview_refining_until_it_ends():
    info, live = _live_review()
    app = ScreenApp(lambda: ReviewScreen(info))
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        assert "the preview has started" in _summary(app)
        live.update(_estimate(4))
        await pilot.pause(0.6)
        summary = _summary(app)
        assert "+0.2500 ± 0.1100" in summary and "scoring 43 bots" in summary and "AggScore -5" in summary
        assert "the auto reviewer would reject it so far" in summary  # provisional, and says so
        checks = str(app.screen.query_one("#review-checks", Static).render())
        assert "always_bet" in checks and "± 0.1000" in checks  # names beside ids, each member's noise
        live.update(_estimate(43, done=True))
        await pilot.pause(0.6)
        summary = _summary(app)
        assert "measuring" not in summary and "AggScore -44" in summary
        assert app.screen.info.live_preview is None  # polling stops with the final figures


async def test_at_80x24_the_header_is_compact_and_the_code_scrolls_from_the_keyboard_at_once():
    info = dataclasses.replace(sample_review(), source=LONG_SOURCE, duplicate_of="p1", duplicate_reason="same code",
                               member_names={"p1": "tight_bluffer"}, expected_stderr=0.05,
                               population_metrics={"agg_score": -3.0, "pop_return": 0.0, "pop_expl": 3.0})
    app = ScreenApp(lambda: ReviewScreen(info))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        summary = app.screen.query_one("#review-summary", Static)
        assert summary.size.height <= 5  # was 9-11 rows
        assert "duplicate of tight_bluffer (p1)" in _summary(app)  # the name beside the id
        code = app.screen.query_one("#tab-code VerticalScroll", VerticalScroll)
        assert app.screen.focused is code
        await pilot.press("down", "down", "pagedown")
        await pilot.pause()
        assert code.scroll_y > 2
        await pilot.press("pageup", "pageup")
        await pilot.pause()
        assert code.scroll_y == 0
    wide = ScreenApp(lambda: ReviewScreen(info))
    async with wide.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        assert "measured for this code: expected payoff" in _summary(wide)  # the full wording where it fits


async def test_help_starts_with_the_keys_of_the_screen_it_is_opened_on():
    app = ScreenApp(lambda: ReviewScreen(sample_review()))
    app.action_help = lambda: app.push_screen(HelpScreen(app.screen))  # what CsroApp does
    async with app.run_test(size=(100, 40)) as pilot:
        await pilot.pause()
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        source = app.screen.query_one(Markdown).source
        here = source.index("## Keys here: review")
        assert here < source.index("| review | `a` | accept the proposal |") < source.index("## Other screens")
        assert source.index("## Other screens") < source.index("| dashboard | `n` |")
        # the focused code's keys: it scrolls
        assert "### The focused VerticalScroll" in source and "Page Down" in source
