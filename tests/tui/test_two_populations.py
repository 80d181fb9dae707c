"""Two populations (issue 23) in the workbench: a recorded two-population Kuhn session shows
both seats' populations, their meta-strategies and the rectangular seat-0 x seat-1 payoff
matrix at 80x24 and 160x48; a proposal's review names its seat; playing a seat-1 member puts
the person in seat 0; the start form sets `populations`."""

from __future__ import annotations

import io

import pytest
from rich.console import Console
from textual.widgets import DataTable, OptionList, Select, Static

from csro_tui.sessions.state import fold
from csro_tui.sessions.store import SessionStore
from csro_tui.tui.adapt import dashboard_data, proposal_info, seat_view
from csro_tui.tui.app import CsroApp
from csro_tui.tui.backend import Backend
from csro_tui.tui.model import LaunchOptions
from csro_tui.tui.screens.inspector import InspectorScreen
from csro_tui.tui.screens.play import PlayScreen
from csro_tui.tui.screens.review import ReviewScreen, checks_text, summary_text
from csro_tui.tui.screens.sessions import TimelineScreen
from csro_tui.tui.screens.start import StartScreen
from tests.tui.helpers import wait_until
from tests.tui.sample import CHOICES, ScreenApp, record_sample_session, record_two_population_session

SIZES = [pytest.param((80, 24), id="80x24"), pytest.param((160, 48), id="160x48")]


def screen_lines(app) -> str:
    """The screen as a terminal shows it, as plain text."""
    width, height = app.size
    console = Console(width=width, height=height, file=io.StringIO(), force_terminal=True, record=True,
                      legacy_windows=False, safe_box=False)
    console.print(app.screen._compositor.render_update(full=True))  # noqa: SLF001 - what export_screenshot draws
    return console.export_text()


def _state(root, session_id="kuhn-2pop"):
    return fold(SessionStore(root).read(session_id).events)


def _bar(app) -> str:
    return str(app.screen.query_one("#timeline-bar", Static).render())


async def _open_at_last_step(pilot, app, events) -> None:
    await wait_until(pilot, lambda: isinstance(app.screen, TimelineScreen) and _bar(app).startswith(
        f"step {len(events)}/{len(events)}"), "the last step")
    await pilot.pause()


# ---------------------------------------------------------------------- the adapter


def test_the_dashboard_data_of_two_populations(tmp_path):
    record_two_population_session(tmp_path)
    data = dashboard_data(_state(tmp_path))
    assert data.populations == 2 and data.meta_value == pytest.approx(0.05)
    assert "#6 meta_solved: nash seat 0: p0=1.00 · seat 1: p1=1.00" in data.log
    assert [(m.id, m.seat, m.weight) for m in data.members] == [("p0", 0, 0.4), ("p1", 1, 0.4), ("p2", 0, 0.6), ("p3", 1, 0.6)]
    # a member plays the other seat's population only; the seat-1 member's return is the negation
    assert [m.id for m, _ in data.row("p0")] == ["p1", "p3"]
    assert [(m.id, c.mean) for m, c in data.row("p3")] == [("p0", 0.25), ("p2", -0.25)]
    assert data.cell("p0", "p2") is None  # same seat: never evaluated, and no "0 by symmetry"
    # vs meta: against the other seat's mixture, from its own seat (both seats at the value)
    assert data.member("p0").scores["vs meta"] == pytest.approx(0.05)
    assert data.member("p3").scores["vs meta"] == pytest.approx(-0.05)


def test_one_population_is_unchanged(tmp_path):
    record_sample_session(tmp_path)
    data = dashboard_data(_state(tmp_path, "sample-kuhn"))
    assert data.populations == 1 and data.meta_value is None
    assert all(m.seat is None for m in data.members)
    assert [m.id for m, _ in data.row("p1")] == ["p0", "p1"]
    assert data.cell("p1", "p1").self_play


def test_the_behaviour_views_see_one_seats_population(tmp_path):
    record_two_population_session(tmp_path)
    state = _state(tmp_path)
    seat1 = seat_view(state, 1)
    assert [m.id for m in seat1.population] == ["p1", "p3"]
    assert seat1.meta_strategy == {"p1": 0.4, "p3": 0.6}  # the seat's own mixture (diversity's effective number)
    assert seat_view(state, 1, keep_meta=False).meta is None
    assert [m.id for m in state.population] == ["p0", "p1", "p2", "p3"]  # the state itself is untouched
    record_sample_session(tmp_path)
    one = _state(tmp_path, "sample-kuhn")
    assert seat_view(one, 1) is one


# ---------------------------------------------------------------------- the screens


@pytest.mark.parametrize("size", SIZES)
async def test_a_recorded_two_population_session_shows_both_seats_and_the_rectangular_matrix(tmp_path, size):
    events = record_two_population_session(tmp_path)
    app = CsroApp(session="kuhn-2pop", sessions_dir=tmp_path)
    async with app.run_test(size=size) as pilot:
        await _open_at_last_step(pilot, app, events)
        text = screen_lines(app)
        # the population table: a seat column, seat 0's members first (each seat's by weight), each
        # weight within its seat
        table = app.screen.query_one("#population", DataTable)
        assert [str(table.get_row_at(i)[0]) + str(table.get_row_at(i)[1]) for i in range(4)] == ["0p2", "0p0", "1p3", "1p1"]
        assert "seat" in text and "0.400" in text and "0.600" in text
        # each seat's mixture under its value of the meta-game
        assert "seat 0 · value +0.0500" in text and "seat 1 · value -0.0500" in text
        assert text.count("40.0%") + text.count("60.0%") == 4  # both seats, both members each
        # the rectangular matrix: seat 0's members as rows, seat 1's as columns
        matrix = app.screen.query_one("#payoff-table", DataTable)
        assert matrix.row_count == 2 and [c.label.plain for c in matrix.columns.values()] == ["p3", "p1"]  # by weight
        assert "Payoffs: seat 0 (rows) vs seat 1 (columns)" in text
        assert "+0.50" in text and "-0.25" in text and "+0.25" in text
        detail = str(app.screen.query_one("#payoff-detail", Static).render())  # wraps between borders at 80x24
        assert "p2 br_seat0 vs p3 br_seat1: seat 0's return +0.2500 (exact)" in detail  # the heaviest of each seat


async def test_the_matrix_cell_opens_the_seat_1_members_row_from_its_seat(tmp_path):
    events = record_two_population_session(tmp_path)
    app = CsroApp(session="kuhn-2pop", sessions_dir=tmp_path)
    async with app.run_test(size=(160, 48)) as pilot:
        await _open_at_last_step(pilot, app, events)
        table = app.screen.query_one("#population", DataTable)
        table.move_cursor(row=table.get_row_index("p3"))  # seat 1
        await pilot.press("i")
        await wait_until(pilot, lambda: isinstance(app.screen, InspectorScreen), "the inspector")
        facts = str(app.screen.query_one("#inspector-text", Static).render())
        assert "seat 1: in seat 1's population" in facts
        assert "Against seat 0's members (its return in seat 1)" in facts
        assert "vs p0 always_bet" in facts and "+0.2500 (exact)" in facts and "vs p1" not in facts


async def test_the_timeline_names_each_policys_and_proposals_seat(tmp_path):
    events = record_two_population_session(tmp_path)
    app = CsroApp(session="kuhn-2pop", sessions_dir=tmp_path)
    async with app.run_test(size=(160, 48)) as pilot:
        await _open_at_last_step(pilot, app, events)
        text = " ".join(screen_lines(app).split())
        assert "policy_added: p3 br_seat1 (best-response, seat 1)" in text
        app.screen.go(13)
        await wait_until(pilot, lambda: "#13 proposal_created" in _bar(app), "step 13")
        assert "#13 proposal_created: i1a2 br_seat1 by best-response for seat 1" in _bar(app)
        app.screen.go(21)
        await wait_until(pilot, lambda: "#21 meta_solved" in _bar(app), "step 21")
        assert "#21 meta_solved: nash seat 0: p0=0.40 p2=0.60 · seat 1: p1=0.40 p3=0.60" in _bar(app)


def test_the_review_of_a_seat_1_proposal_names_seat_1_and_previews_against_seat_0(tmp_path):
    record_two_population_session(tmp_path)
    info, _ = proposal_info(_state(tmp_path), "i1a2")
    assert info.seat == 1
    summary = summary_text(info).plain
    assert "br_seat1  for seat 1  by best-response" in summary
    assert "expected payoff vs seat 0's meta-strategy +0.2500" in summary
    checks = checks_text(info).plain
    assert "Preview against each seat 0 member (its opponents)" in checks and "vs p0" in checks
    record_sample_session(tmp_path)
    one, _ = proposal_info(_state(tmp_path, "sample-kuhn"), "i1a1")
    assert one.seat is None and "for seat" not in summary_text(one).plain
    assert "expected payoff vs meta-strategy +0.5000" in summary_text(one).plain


def test_a_recorded_proposal_shows_the_seat_value_it_was_measured_against(tmp_path):
    """Opened from the timeline after the meta-game moved on (seat 1's value -0.5 when
    i1a2 was previewed, -0.05 at the end), the bar is the one of its time, as its live
    review showed it, not the session's latest value."""
    record_two_population_session(tmp_path)
    info, _ = proposal_info(_state(tmp_path), "i1a2")
    assert info.seat_value == pytest.approx(-0.5)
    assert "to beat: seat 1's value -0.5000" in summary_text(info).plain
    first, _ = proposal_info(_state(tmp_path), "i1a1")
    assert first.seat_value == pytest.approx(0.5)


@pytest.mark.parametrize("size", SIZES)
async def test_the_review_screen_says_which_seat(tmp_path, size):
    record_two_population_session(tmp_path)
    info, _ = proposal_info(_state(tmp_path), "i1a2")
    app = ScreenApp(lambda: ReviewScreen(info))
    async with app.run_test(size=size) as pilot:
        await pilot.pause()
        assert "for seat 1" in screen_lines(app)


async def test_playing_a_seat_1_member_puts_the_person_in_seat_0(tmp_path):
    record_two_population_session(tmp_path)
    data = dashboard_data(_state(tmp_path))
    screen = PlayScreen(Backend(tmp_path), "kuhn_poker", data, preselect="p3")
    app = ScreenApp(lambda: screen)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_until(pilot, lambda: screen.spec is not None, "the game to load")
        screen.seat = 1  # the person's own choice, for seat-less opponents
        await pilot.press("t")  # refused: p3 plays seat 1 only
        assert screen.seat == 1
        await pilot.press("enter")  # the preselected p3
        await wait_until(pilot, lambda: screen.session is not None, "the game")
        assert screen.session.seat == 0 and screen.session.host is not None  # its code in its sandbox
        assert "you seat 0" in str(screen.query_one("#play-match", Static).render())
        options = screen.query_one(OptionList)
        headings = [str(options.get_option_at_index(i).prompt) for i in range(options.option_count)]
        assert "Seat 0 (you: 1)" in headings and "Seat 1 (you: 0)" in headings
        await pilot.press("escape")


async def test_playing_a_seat_0_member_puts_the_person_in_seat_1_and_bots_keep_the_choice(tmp_path):
    record_two_population_session(tmp_path)
    data = dashboard_data(_state(tmp_path))
    screen = PlayScreen(Backend(tmp_path), "kuhn_poker", data, preselect="p0")
    app = ScreenApp(lambda: screen)
    async with app.run_test(size=(160, 48)) as pilot:
        await wait_until(pilot, lambda: screen.spec is not None, "the game to load")
        assert screen.seat_against("member:p0") == 1 and screen.seat_against("member:p3") == 0
        assert screen.seat_against("bot:always_call") == screen.seat == 0
        await pilot.press("enter")
        await wait_until(pilot, lambda: screen.session is not None, "the game")
        assert screen.session.seat == 1
        await pilot.press("escape")


async def test_the_start_form_sets_two_populations():
    app = ScreenApp(lambda: StartScreen(CHOICES, LaunchOptions()))
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_until(pilot, lambda: app.screen.checked_game == "kuhn_poker", "the default game checked")
        assert app.screen.query_one("#populations", Select).value == "1"  # the default
        app.screen.query_one("#populations", Select).value = "2"
        await pilot.pause()
        await pilot.press("ctrl+n")
        await pilot.pause()
    assert app.results == [LaunchOptions(game="kuhn_poker", oracle="best-response", populations=2)]
    assert app.results[0].flags()["populations"] == 2


async def test_the_start_form_shows_a_configured_two():
    app = ScreenApp(lambda: StartScreen(CHOICES, LaunchOptions(populations=2)))
    async with app.run_test(size=(160, 48)) as pilot:
        await wait_until(pilot, lambda: app.screen.checked_game == "kuhn_poker", "the default game checked")
        assert app.screen.query_one("#populations", Select).value == "2"


@pytest.mark.parametrize("size", SIZES)
def test_two_population_dashboard_snapshot(snap_compare, tmp_path, size):
    """The dashboard of the recorded two-population session (update with --snapshot-update after a
    deliberate change, and look at the report first)."""
    from csro_tui.tui.screens.dashboard import DashboardScreen

    record_two_population_session(tmp_path)
    data = dashboard_data(_state(tmp_path))
    assert snap_compare(ScreenApp(lambda: DashboardScreen(data)), terminal_size=size)


def test_the_review_judges_a_seat_proposal_against_its_seats_value():
    """Kuhn's seat 0 is worth -1/18: a seat-0 proposal at -0.03 beats it (the engine's
    ReviewRequest.seat_value), where the one-population bar 0 would call it no improvement."""
    from csro_tui.records import Preview, Proposal, ReviewRequest, ValidationResult
    from csro_tui.tui.adapt import review_info

    request = ReviewRequest("i2a1", Proposal("", "best-response", "br", seat=0), 2, 1, ValidationResult(valid=True),
                            Preview(-0.03, {"p1": -0.03}))
    assert review_info(request).shortfall is not None  # no seat value known: the bar is 0
    request.seat_value = -1 / 18  # set by the two-population engine (a field of ReviewRequest there)
    info = review_info(request)
    assert info.shortfall is None and info.seat_value == pytest.approx(-1 / 18)
    assert "(to beat: seat 0's value -0.0556)" in summary_text(info).plain


@pytest.mark.parametrize("step", [3, 4])
async def test_the_dashboard_while_only_seat_0_has_a_member(tmp_path, step):
    """Live, seat 0's seed joins before seat 1's: a matrix with a row and no column yet (it raised
    CellDoesNotExist and took the app down in a live --populations 2 run)."""
    from csro_tui.tui.screens.dashboard import DashboardScreen

    events = record_two_population_session(tmp_path)
    data = dashboard_data(fold(events[:step]))
    app = ScreenApp(lambda: DashboardScreen(data))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        detail = str(app.screen.query_one("#payoff-detail", Static).render())
        assert detail == ("No matchups yet." if step == 3 else "p0 always_bet vs p1 always_bet: not evaluated yet")


async def test_the_engines_refusal_of_two_populations_shows_under_the_field(monkeypatch):
    """The engine's one line (engine.setup.populations_refusal, pop2-core) under the field, and
    the start refused with it, before anything is recorded; a choice it accepts starts."""
    from csro_tui.tui.backend import Backend

    asked = []

    def refusal(populations, oracle, solver):
        asked.append((populations, oracle, solver))
        return f"--populations 2: meta-solver {solver} cannot solve it" if solver == "uniform" else None

    monkeypatch.setattr(Backend, "populations_refusal", staticmethod(refusal))
    app = ScreenApp(lambda: StartScreen(CHOICES, LaunchOptions(populations=2)))
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_until(pilot, lambda: app.screen.checked_game == "kuhn_poker", "the default game checked")
        app.screen.query_one("#solver", Select).value = "uniform"
        error = app.screen.query_one("#populations-error", Static)
        await wait_until(pilot, lambda: error.display, "the refusal")
        assert "✗ --populations 2: meta-solver uniform cannot solve it" in str(error.render())
        await pilot.press("ctrl+n")
        await pilot.pause()
        assert app.results == []
        assert "--populations 2: meta-solver uniform cannot solve it" in [n.message for n in app._notifications]
        app.screen.query_one("#populations", Select).value = "1"  # one population: nothing to refuse
        await wait_until(pilot, lambda: not error.display, "the refusal gone")
        await pilot.press("ctrl+n")
        await pilot.pause()
    assert app.results == [LaunchOptions(game="kuhn_poker", oracle="best-response", meta_solver="uniform")]
    assert (2, "best-response", "uniform") in asked and all(p == 2 for p, _, _ in asked)


def test_the_iterations_toast_names_both_seats_joined(tmp_path):
    """The event names one joined member (the last); the toast names each seat's."""
    from types import SimpleNamespace

    from csro_tui.tui.backend import iterations_outcome

    events = record_two_population_session(tmp_path)
    before = fold(events[:8])  # after iteration 0
    after = fold(events[:-1])
    outcome = SimpleNamespace(reason="completed", message="", oracle_finished=None)
    assert iterations_outcome(before, after, outcome, 1) == "iteration 1 done: br_seat0 (seat 0), br_seat1 (seat 1) accepted"


def _two_population_engine() -> bool:
    from csro_tui.engine import setup

    return hasattr(setup, "populations_refusal")  # the engine that runs them (pop2-core)


@pytest.mark.skipif(not _two_population_engine(), reason="needs the two-population engine (branch pop2-core)")
async def test_a_live_two_population_kuhn_session(tmp_path):
    """Started on the form with Populations 2: each iteration reviews seat 0's proposal, then seat
    1's, each saying its seat; the dashboard then shows both seats and the rectangular matrix, and
    playing the newest seat-1 member puts the person in seat 0."""
    from csro_tui.tui.screens.dashboard import DashboardScreen
    from tests.tui.helpers import engine_idle, start_screen

    app = CsroApp(sessions_dir=tmp_path)
    async with app.run_test(size=(160, 48)) as pilot:
        await start_screen(pilot, app)
        app.screen.query_one("#populations", Select).value = "2"
        await pilot.pause()
        await pilot.press("ctrl+n")
        await engine_idle(pilot, app)
        await pilot.press("n")
        for seat in (0, 1):
            await wait_until(pilot, lambda: isinstance(app.screen, ReviewScreen) and app.screen.info.seat == seat,
                             f"the review of seat {seat}'s proposal")
            assert f"for seat {seat}" in screen_lines(app)
            await pilot.press("a")
        await engine_idle(pilot, app)
        assert isinstance(app.screen, DashboardScreen)
        data = app.screen.data
        assert data.populations == 2 and [len(data.seat_members(s)) for s in (0, 1)] == [2, 2]
        matrix = app.screen.query_one("#payoff-table", DataTable)
        assert matrix.row_count == 2 and len(matrix.columns) == 2
        text = screen_lines(app)
        assert "seat 0 · value" in text and "seat 1 · value" in text
        newest = data.seat_members(1)[-1].id
        app.action_play(newest)
        await wait_until(pilot, lambda: isinstance(app.screen, PlayScreen) and app.screen.spec is not None, "play")
        await pilot.press("enter")  # the preselected member
        await wait_until(pilot, lambda: app.screen.session is not None, "the game")
        assert app.screen.session.seat == 0


async def test_a_two_population_timeline_compares_and_clusters_within_each_seat(tmp_path):
    """Profiles run (sandboxed, exact Kuhn tables): `b` gives each seat's diversity apart, `d` on a
    seat-1 member ranks seat 1's other member only, with no head-to-head (same-seat members never meet)."""
    from csro_tui.tui.screens.compare_policies import ComparePoliciesScreen, DiversityScreen

    events = record_two_population_session(tmp_path)
    app = CsroApp(session="kuhn-2pop", sessions_dir=tmp_path)
    async with app.run_test(size=(160, 48)) as pilot:
        await _open_at_last_step(pilot, app, events)
        await pilot.press("b")
        await wait_until(pilot, lambda: isinstance(app.screen, DiversityScreen), "the diversity view")
        screen = app.screen
        await wait_until(pilot, lambda: screen.diversity is not None, "the diversity")
        assert [(seat, sorted(each.ids)) for seat, each in screen.diversity] == [(0, ["p0", "p2"]), (1, ["p1", "p3"])]
        text = screen_lines(app)
        assert "Seat 0's population" in text and "Seat 1's population" in text
        await pilot.press("escape")
        await wait_until(pilot, lambda: isinstance(app.screen, TimelineScreen), "back")
        population = app.screen.query_one("#population", DataTable)
        population.move_cursor(row=population.get_row_index("p3"))  # seat 1
        await pilot.press("d")
        await wait_until(pilot, lambda: isinstance(app.screen, ComparePoliciesScreen), "the comparison")
        compare = app.screen
        await wait_until(pilot, lambda: compare.review is not None, "the profiles")
        assert [member for member, _ in compare.review.ranked] == ["p1"]
        await pilot.pause()
        text = screen_lines(app)
        assert "Compare p3 with seat 1's members" in text and "head to head: none (both play seat 1)" in text
    assert len(SessionStore(tmp_path).read("kuhn-2pop").events) == len(events)  # nothing written


def test_the_sessions_list_says_two_populations(tmp_path):
    """The start screen's recorded sessions told one population from two nowhere."""
    from csro_tui.tui.backend import session_summary

    record_two_population_session(tmp_path)
    record_sample_session(tmp_path)
    two = session_summary(_state(tmp_path).summary(tmp_path / "kuhn-2pop"))
    one = session_summary(_state(tmp_path, "sample-kuhn").summary(tmp_path / "sample-kuhn"))
    assert two.startswith("completed · kuhn_poker · 2 populations · best-response"), two
    assert "population" not in one.replace("policies", ""), one


def _after_iteration_2(root):
    """The recorded session as a Kuhn run with the best-response oracle stands after iteration
    2: seat 1 has a third member, each seat's mixture is one member at 100%, the rest at 0."""
    from dataclasses import replace

    from csro_tui.tui.model import Member

    record_two_population_session(root)
    data = dashboard_data(_state(root))
    weights = {"p0": 0.0, "p1": 0.0, "p2": 1.0, "p3": 0.0}
    data.members = [replace(m, weight=weights[m.id]) for m in data.members]
    data.members.append(Member("p4", "br_seat1_2", "best-response", "p3", 1.0, iteration=2, seat=1))
    return data


async def test_at_80x24_both_seats_meta_strategies_show_every_member_with_weight(tmp_path):
    """Stacked at 80 columns, seat 1's member at 100% scrolled out of the Meta-strategies panel
    (a newcomer's Kuhn run after iteration 2); members at weight 0 fold into a count."""
    from csro_tui.tui.screens.dashboard import DashboardScreen

    data = _after_iteration_2(tmp_path)
    app = ScreenApp(lambda: DashboardScreen(data))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        await pilot.pause()
        shown = [line for line in screen_lines(app).splitlines() if "%" in line]  # the meta panel's lines
        for member in (m for m in data.members if m.weight > 0):
            assert any(f"{member.id} " in line and f"{member.weight:.1%}" in line for line in shown), (member.id, shown)
        text = screen_lines(app)
        assert "seat 0 · value" in text and "seat 1 · value" in text
        assert "at 0%: seat 0: 1 · seat 1: 2" in text
