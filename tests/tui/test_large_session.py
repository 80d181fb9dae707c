"""The workbench on a 200-member Leduc session (issue 36): the timeline folds to any step
as the whole fold does, a burst of keys ends where its last key says, ctrl+q goes ahead of
queued keys, the population views list the members with weight first (w: by id), `/`
filters them, the matrix says what "~" means, the diversity view has a cursor with names.
Behaviour only: the times are bench/tui_scale.py's."""

from __future__ import annotations

import asyncio
import random

import pytest
from textual import events as key_events
from textual.widgets import Static

from csro_tui.sessions.state import fold
from csro_tui.sessions.store import SessionStore
from csro_tui.tui import adapt
from csro_tui.tui.app import CsroApp
from csro_tui.tui.model import Cell, MemberView
from csro_tui.tui.screens.dashboard import DashboardScreen
from csro_tui.tui.screens.sessions import TimelineScreen
from csro_tui.tui.timeline import CHECKPOINT_EVERY, TimelineFolds
from csro_tui.tui.widgets.meta_bars import MetaBars
from csro_tui.tui.widgets.payoff_heatmap import MATRIX_MEMBERS, SAMPLED_LEGEND, PayoffHeatmap
from csro_tui.tui.widgets.population_table import PopulationTable
from tests.tui.helpers import wait_until
from tests.tui.large_session import write_large_session
from tests.tui.sample import ScreenApp, record_sample_session, sample_data

MEMBERS = 200


@pytest.fixture(scope="module")
def large(tmp_path_factory):
    root = tmp_path_factory.mktemp("large")
    session_id = write_large_session(root, MEMBERS)
    return root, session_id, SessionStore(root).read(session_id).events


def _rows(app) -> list[str]:
    table = app.screen.query_one(PopulationTable)
    return [str(table.get_row_at(i)[0]) for i in range(table.row_count)]


async def _open(pilot, app, events) -> TimelineScreen:
    await wait_until(pilot, lambda: isinstance(app.screen, TimelineScreen) and app.screen.shown_step == len(events),
                     "the timeline's last step")
    return app.screen


def test_the_generated_session_is_what_the_engine_records(large):
    _, _, events = large
    state = fold(events)
    assert len(state.population) == MEMBERS + 1
    assert len(state.payoffs) == MEMBERS * (MEMBERS + 1) // 2  # every pair once, as the engine evaluates them
    assert state.closed is not None and state.closed.reason == "completed"
    assert 1 < sum(1 for w in state.meta_strategy.values() if w > 0) < 50


def test_the_timeline_at_any_step_is_the_fold_of_its_events_in_any_order(large):
    _, _, events = large
    folds = TimelineFolds(events)
    rng = random.Random(3)
    steps = [len(events), 1, len(events) - 1, CHECKPOINT_EVERY, CHECKPOINT_EVERY + 1, CHECKPOINT_EVERY - 1]
    steps += [rng.randrange(1, len(events) + 1) for _ in range(8)]
    for step in steps:
        expected = adapt.dashboard_data(fold(events[:step]))
        shown = folds.dashboard_at(step)
        assert [(m.id, m.weight, m.scores) for m in shown.members] == [(m.id, m.weight, m.scores) for m in expected.members], step
        assert shown.payoffs == expected.payoffs, step
        assert shown.log == expected.log and shown.metric_history == expected.metric_history, step


def test_steps_back_and_forth_between_iterations_find_their_matrix_made(large):
    _, _, events = large
    folds = TimelineFolds(events)
    last = folds.dashboard_at(len(events)).payoffs
    earlier = folds.dashboard_at(len(events) // 2).payoffs
    assert earlier != last  # another iteration's payoffs
    assert folds.dashboard_at(len(events)).payoffs is last and folds.dashboard_at(len(events) // 2).payoffs is earlier


async def test_a_burst_of_page_ups_ends_at_the_iteration_its_last_key_names(large):
    root, session_id, events = large
    app = CsroApp(session=session_id, sessions_dir=root)
    async with app.run_test(size=(160, 48)) as pilot:
        screen = await _open(pilot, app, events)
        starts = [i + 1 for i, event in enumerate(events) if event.TYPE == "iteration_started"]
        for _ in range(40):  # typed faster than any step is shown
            app.post_message(key_events.Key("pageup", None))
        expected = starts[-40]  # each PgUp: the previous iteration's start
        await wait_until(pilot, lambda: screen.shown_step == expected, f"step {expected}")
        await pilot.pause(0.3)
        assert screen.shown_step == screen.step == expected
        shown = screen.query_one("#timeline-bar", Static).render()
        assert str(shown).startswith(f"step {expected}/{len(events)}")
        assert len(screen.query_one(PopulationTable).rows) == len(adapt.dashboard_data(fold(events[:expected])).members)


async def test_ctrl_q_goes_ahead_of_140_queued_keys(large):
    root, session_id, events = large
    app = CsroApp(session=session_id, sessions_dir=root)
    async with app.run_test(size=(160, 48)) as pilot:
        screen = await _open(pilot, app, events)
        for _ in range(140):
            app.post_message(key_events.Key("pageup", None))
        app.post_message(key_events.Key("ctrl+q", None))
        for _ in range(400):  # bounded: the app ends, not a measure of how fast
            if not app.is_running:
                break
            await asyncio.sleep(0.05)
        assert not app.is_running
        # the keys queued before ctrl+q were dropped, not folded one after another
        assert screen.shown_step == len(events)


async def test_population_views_list_the_members_with_weight_first_and_w_lists_them_by_id(large):
    root, session_id, events = large
    app = CsroApp(session=session_id, sessions_dir=root)
    async with app.run_test(size=(160, 48)) as pilot:
        screen = await _open(pilot, app, events)
        data = screen.query_one("#dashboard").data
        weights = {m.id: m.weight for m in data.members}
        weighted = sorted((m for m in data.members if m.weight > 0), key=lambda m: -m.weight)
        rows = _rows(app)
        assert rows[: len(weighted)] == [m.id for m in weighted]
        assert all(weights[r] == 0 for r in rows[len(weighted):])
        bars = str(screen.query_one(MetaBars).render())
        assert bars.splitlines()[0].startswith(f"{weighted[0].id} {weighted[0].name}")
        assert f"at 0%: {len(data.members) - len(weighted)} more" in bars
        table = screen.query_one("#payoff-table")
        assert [str(key.value) for key in table.rows][:MATRIX_MEMBERS] == [m.id for m in weighted][:MATRIX_MEMBERS]
        assert len(table.rows) == MATRIX_MEMBERS and len(table.columns) == MATRIX_MEMBERS
        assert f"{MATRIX_MEMBERS} of {MEMBERS + 1} shown" in str(screen.query_one("#panel-payoffs").border_subtitle)

        await pilot.press("w")
        assert _rows(app)[:12] == [f"p{i}" for i in range(12)]
        assert "by id" in str(screen.query_one("#panel-population").border_title)


async def test_the_population_table_updated_in_place_at_each_step_is_the_one_filled_anew(large):
    """Steps write only the cells that changed and reorder the rows: what shows is what a
    table filled from nothing shows at that step (members come and go, weights change)."""
    root, session_id, events = large
    app = CsroApp(session=session_id, sessions_dir=root)
    async with app.run_test(size=(160, 48)) as pilot:
        screen = await _open(pilot, app, events)
        table = screen.query_one(PopulationTable)
        for key in ("pageup", "pageup", "home", "end", "left", "pageup"):
            await pilot.press(key)
            await wait_until(pilot, lambda: screen.shown_step == screen.step, f"the step after {key}")
            data = screen.query_one("#dashboard").data
            members = MemberView().members(data.members)
            expected = [[str(c) for c in table._row(m, sorted({n for x in data.members for n in x.scores}), False, False)]
                        for m in members]
            assert [[str(c) for c in table.get_row_at(i)] for i in range(table.row_count)] == expected, key
            assert table.row_count == len(members) and (not members or str(table.get_row_at(0)[0]) == members[0].id)


async def test_slash_filters_the_members_by_name_and_esc_clears_it(large):
    root, session_id, events = large
    app = CsroApp(session=session_id, sessions_dir=root)
    async with app.run_test(size=(160, 48)) as pilot:
        screen = await _open(pilot, app, events)
        await pilot.press("slash", *"br-19")
        expected = {"p19", *(f"p{i}" for i in range(190, 200))}
        await wait_until(pilot, lambda: set(_rows(app)) == expected, "the filtered rows")
        assert set(str(key.value) for key in screen.query_one("#payoff-table").rows) == expected
        await pilot.press("enter")  # kept, back in the table
        assert isinstance(app.focused, PopulationTable)
        assert set(_rows(app)) == expected
        await pilot.press("escape")  # clears the filter; the timeline stays open
        await wait_until(pilot, lambda: len(_rows(app)) == MEMBERS + 1, "every member again")
        assert app.screen is screen
        await pilot.press("escape")  # no filter: the screen's esc
        await wait_until(pilot, lambda: app.screen is not screen, "the timeline closed")


def test_member_view_orders_and_filters():
    data = sample_data()  # p0 0.25, p1 0.5, p2 0.25
    assert [m.id for m in MemberView().members(data.members)] == ["p1", "p0", "p2"]
    assert [m.id for m in MemberView(by_weight=False).members(data.members)] == ["p0", "p1", "p2"]
    assert [m.id for m in MemberView(text="BR_").members(data.members)] == ["p1", "p2"]
    assert [m.id for m in MemberView(text="p0").members(data.members)] == ["p0"]


async def test_the_matrix_says_what_its_tilde_means_where_a_cell_has_one():
    data = sample_data()
    data.payoffs[("p0", "p1")] = Cell(-0.5, 0.1, 20, False)
    app = ScreenApp(lambda: DashboardScreen(data))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        panel = app.screen.query_one("#panel-payoffs")
        assert SAMPLED_LEGEND in str(panel.border_subtitle)
        assert "~" in SAMPLED_LEGEND
    exact = sample_data()
    app = ScreenApp(lambda: DashboardScreen(exact))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        assert "~" not in str(app.screen.query_one("#panel-payoffs").border_subtitle)
        assert isinstance(app.screen.query_one("#payoffs"), PayoffHeatmap)


async def test_the_diversity_view_has_a_cursor_naming_both_members(tmp_path):
    events = record_sample_session(tmp_path)
    app = CsroApp(session="sample-kuhn", sessions_dir=tmp_path)
    async with app.run_test(size=(160, 48)) as pilot:
        await _open(pilot, app, events)
        await pilot.press("b")
        await wait_until(pilot, lambda: "Behaviour distance" in str(app.screen.query_one("#diversity-header").render()),
                         "the distances")
        cursor = lambda: str(app.screen.query_one("#diversity-cursor").render())  # noqa: E731
        ids = app.screen.diversity.ids
        names = {"p0": "always_call", "p1": "br_1"}
        assert cursor().startswith(f"{ids[0]} {names[ids[0]]} vs {ids[0]} {names[ids[0]]}: behaviour distance 0.000")
        await pilot.press("right")
        assert cursor().startswith(f"{ids[0]} {names[ids[0]]} vs {ids[1]} {names[ids[1]]}: behaviour distance")
        heat_map = str(app.screen.query_one("#diversity-map").render())
        assert "…" not in heat_map.split("\n")[0]  # column ids written whole (downwards), not "p…p…"
        assert f"{ids[1]} {names[ids[1]]}" in heat_map  # rows are named
