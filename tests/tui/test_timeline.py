"""Recorded sessions: listing them and stepping through a timeline."""

from __future__ import annotations

from textual.widgets import DataTable, Static

from csro_tui.tui.app import CsroApp
from csro_tui.tui.screens.inspector import InspectorScreen
from csro_tui.tui.screens.sessions import SessionsScreen, TimelineScreen
from csro_tui.tui.widgets.meta_bars import MetaBars
from csro_tui.tui.widgets.population_table import PopulationTable
from tests.tui.helpers import notifications, start_screen, wait_until
from tests.tui.sample import record_sample_session


def _bar(app) -> str:
    return str(app.screen.query_one("#timeline-bar", Static).render())


def _population(app) -> list[str]:
    table = app.screen.query_one(PopulationTable)
    return [str(table.get_row_at(i)[0]) for i in range(table.row_count)]


async def test_open_recorded_session_and_step_through_timeline(tmp_path):
    events = record_sample_session(tmp_path)
    app = CsroApp(session="sample-kuhn", sessions_dir=tmp_path)
    async with app.run_test(size=(160, 48)) as pilot:
        await wait_until(pilot, lambda: _bar(app).startswith(f"step {len(events)}/{len(events)}"), "the last step")
        assert isinstance(app.screen, TimelineScreen)
        assert _population(app) == ["p1", "p0"]  # by weight: p1 has it all
        assert "100.0%" in str(app.screen.query_one(MetaBars).render())

        await pilot.press("home")
        await wait_until(pilot, lambda: _bar(app).startswith(f"step 1/{len(events)}"), "step 1")
        assert _population(app) == []

        for _ in range(3):
            await pilot.press("right")
        # after event 4: meta_solved for p0 alone
        await wait_until(pilot, lambda: "#4 meta_solved" in _bar(app), "step 4")
        assert _population(app) == ["p0"]

        await pilot.press("end")
        await pilot.press("left")  # before session_closed
        await wait_until(pilot, lambda: "#16 iteration_finished" in _bar(app), "step 16")
        table = app.screen.query_one("#payoff-table", DataTable)
        assert table.row_count == 2
        detail = str(app.screen.query_one("#payoff-detail", Static).render())
        assert "p0 always_call vs p0 always_call: 0 by symmetry" in detail  # the cursor starts on the diagonal

        # the inspector shows a policy as it was at this step
        population = app.screen.query_one(PopulationTable)
        population.move_cursor(row=population.get_row_index("p1"))
        await pilot.press("i")
        await wait_until(pilot, lambda: isinstance(app.screen, InspectorScreen), "the inspector")
        facts = str(app.screen.query_one("#inspector-text", Static).render())
        assert "p1  br_1" in facts and "└ p0 always_call (seed)" in facts
        assert "vs p0 always_call" in facts and "+0.5000 (exact)" in facts


async def test_sessions_screen_lists_and_opens(tmp_path):
    record_sample_session(tmp_path, "first")
    app = CsroApp(sessions_dir=tmp_path)
    async with app.run_test(size=(160, 48)) as pilot:
        await start_screen(pilot, app)
        app.action_sessions()
        await pilot.pause()
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert isinstance(app.screen, SessionsScreen)
        table = app.screen.query_one(DataTable)
        assert table.row_count == 1
        row = [str(cell) for cell in table.get_row_at(0)]
        assert row[1] == "completed" and "kuhn_poker" in row[2]  # the status right after the id
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(app.screen, TimelineScreen) and sorted(_population(app)) == ["p0", "p1"], "the timeline")


async def test_missing_session_is_a_notification_not_a_crash(tmp_path):
    app = CsroApp(session="nope", sessions_dir=tmp_path)
    async with app.run_test() as pilot:
        await wait_until(pilot, lambda: any("no session 'nope'" in n for n in notifications(app)), "the error")
        assert isinstance(app.screen, TimelineScreen)


async def test_the_sessions_list_at_80_columns_shows_each_summary_under_its_id(tmp_path):
    """Issue 29, item 10: at 80 columns the summary column was cut at the right edge."""
    record_sample_session(tmp_path, "first")
    app = CsroApp(sessions_dir=tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await start_screen(pilot, app)
        app.action_sessions()
        await wait_until(pilot, lambda: isinstance(app.screen, SessionsScreen)
                         and any(table.row_count == 1 for table in app.screen.query(DataTable)), "the list")
        await pilot.pause()
        table = app.screen.query_one(DataTable)
        [cell] = [str(cell) for cell in table.get_row_at(0)]
        heading, summary = cell.split("\n")
        assert heading == "first  completed" and summary.startswith("kuhn_poker") and len(summary) <= 76
        assert table.virtual_size.width <= table.size.width  # nothing past the right edge
        await pilot.resize_terminal(160, 48)
        await pilot.pause()
        await pilot.pause()
        assert [str(cell) for cell in table.get_row_at(0)][1] == "completed"  # wide again: the columns


def test_the_timeline_bar_fits_its_width():
    """Issue 29, item 10: at 80 columns the timeline's top line ran off the right edge."""
    from csro_tui.tui.screens.sessions import TIMELINE_HINT, timeline_bar

    event = "#23 proposal_decided: i2.1 reject by tui: the policy only repeats the round number modulo three"
    narrow = timeline_bar("step 23/23  iteration 2  ", event, 78)
    assert len(narrow) == 78 and narrow.endswith("…") and TIMELINE_HINT not in narrow
    wide = timeline_bar("step 23/23  iteration 2  ", event, 218)
    assert wide == "step 23/23  iteration 2  " + event + TIMELINE_HINT
