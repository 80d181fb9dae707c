"""Snapshots of the main screens at 160x48 over deterministic data.

Update with `pytest tests/tui/test_snapshots.py --snapshot-update` after a
deliberate change, and look at the report before committing.
"""

from __future__ import annotations

from csro_tui.tui.model import LaunchOptions, StartChoices
from csro_tui.tui.screens.dashboard import DashboardScreen
from csro_tui.tui.screens.help import HelpScreen
from csro_tui.tui.screens.inspector import InspectorScreen
from csro_tui.tui.screens.review import ReviewScreen
from csro_tui.tui.screens.start import StartScreen
from tests.tui.sample import ScreenApp, sample_data, sample_review

SIZE = (160, 48)


def test_dashboard(snap_compare):
    app = ScreenApp(lambda: DashboardScreen(sample_data()))

    async def select_cell(pilot):
        table = app.screen.query_one("#payoff-table")
        table.focus()
        await pilot.press("right")  # p0 vs p1
        await pilot.pause()

    assert snap_compare(app, terminal_size=SIZE, run_before=select_cell)


def test_review(snap_compare):
    app = ScreenApp(lambda: ReviewScreen(sample_review()))
    assert snap_compare(app, terminal_size=SIZE)


def test_review_diff_tab(snap_compare):
    app = ScreenApp(lambda: ReviewScreen(sample_review()))

    async def diff(pilot):
        app.screen.query_one("#review-tabs").active = "tab-diff"
        await pilot.pause()

    assert snap_compare(app, terminal_size=SIZE, run_before=diff)


def test_inspector(snap_compare):
    app = ScreenApp(lambda: InspectorScreen(sample_data(), "p1"))
    assert snap_compare(app, terminal_size=SIZE)


def test_start(snap_compare):
    choices = StartChoices(
        games=["kuhn_poker", "leduc_poker", "rrps", "repeated_leduc"],
        oracles=["best-response", "seed", "human", "llm"],
        llm_oracles={"llm"},
        solvers=["nash", "prd", "rm", "uniform"],
        sessions=[("sample-kuhn", "kuhn_poker · best-response · nash · 1 iterations · 2 policies")],
    )
    app = ScreenApp(lambda: StartScreen(choices, LaunchOptions()))
    assert snap_compare(app, terminal_size=SIZE)


def test_help(snap_compare):
    app = ScreenApp(HelpScreen)
    assert snap_compare(app, terminal_size=SIZE)
