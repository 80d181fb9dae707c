"""The curation workbench: untrusted text shown literally, a person's edit kept
and shown, regenerate's cost said first, duplicates named, errors persistent,
timeline drill-down, the focused widget's selection."""

from __future__ import annotations

import io
from dataclasses import replace

from rich.console import Console
from textual.widgets import DataTable, Static

from csro_tui.config import RunConfig
from csro_tui.engine import Engine
from tests.fakes import ToyEvaluator, best_member_solve, climbing_oracle, toy_policy
from csro_tui.records import Decision, Preview
from csro_tui.sessions.export import export_session
from csro_tui.sessions.state import fold
from csro_tui.sessions.store import SessionStore
from csro_tui.sessions.summary import member_rows
from csro_tui.tui import adapt
from csro_tui.tui.model import Member
from csro_tui.tui.screens.dashboard import DashboardScreen
from csro_tui.tui.screens.inspector import InspectorScreen
from csro_tui.tui.screens.proposal import ProposalScreen
from csro_tui.tui.screens.review import ReviewScreen
from csro_tui.tui.screens.sessions import TimelineScreen
from csro_tui.tui.widgets.error_panel import ErrorPanel
from tests.tui.sample import ScreenApp, record_sample_session, sample_data, sample_review
from tests.tui.helpers import notifications, wait_until

HOSTILE = "[/oops] \x1b]2;pwned\x07[bold]x\x1b[2J"


def rendered(widget) -> str:
    console = Console(file=io.StringIO(), width=200, color_system=None, force_terminal=False)
    console.print(widget.render())
    return console.file.getvalue()


def screen_text(app) -> str:
    return "\n".join(rendered(w) for w in app.screen.query(Static))


# --- untrusted text ---------------------------------------------------------------


async def test_review_shows_markup_and_escapes_literally():
    info = sample_review()
    info.name = HOSTILE
    info.rationale = HOSTILE
    info.failure = HOSTILE
    info.validation = [f"line 3: {HOSTILE}"]
    info.llm_calls[0]["response"] = HOSTILE
    app = ScreenApp(lambda: ReviewScreen(info))
    async with app.run_test(size=(160, 48)) as pilot:
        for tab in ("tab-rationale", "tab-llm", "tab-checks", "tab-diff"):
            app.screen.query_one("#review-tabs").active = tab
            await pilot.pause()
        text = screen_text(app)
    assert "[/oops]" in text and "[bold]x" in text
    assert "\x1b" not in text and "\\x1b]2;pwned\\x07" in text  # the OSC title sequence shown visibly (issue 35)


async def test_dashboard_and_inspector_show_hostile_names_literally():
    data = sample_data()
    data.members[1] = replace(data.members[1], name=HOSTILE, origin=HOSTILE)
    app = ScreenApp(lambda: DashboardScreen(data))
    async with app.run_test(size=(160, 48)) as pilot:
        table = app.screen.query_one("#payoff-table", DataTable)
        table.focus()
        await pilot.press("down")  # the detail line names the hostile member
        await pilot.pause()
        text = screen_text(app)
        assert "[/oops]" in text and "\x1b" not in text
    app = ScreenApp(lambda: InspectorScreen(data, data.members[1].id))
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        text = screen_text(app)
    assert "[/oops]" in text and "\x1b" not in text


# --- a person's edit ----------------------------------------------------------------


class EditingReviewer:
    """Edits the first proposal (a person's hand), accepts whatever comes next."""

    name = "alice"

    def __init__(self) -> None:
        self.requests = []

    def decide(self, review):
        self.requests.append(review)
        if len(self.requests) == 1:
            return Decision.edit(toy_policy(0.05, extra="# changed by hand\n"))
        return Decision.accept()


def edited_session(tmp_path):
    store = SessionStore(tmp_path, fsync=False)
    reviewer = EditingReviewer()
    writer = store.create("edited")
    engine = Engine(
        config=RunConfig(game="toy", oracle="scripted", iterations=1),
        spec=None,
        oracle=climbing_oracle(),
        reviewer=reviewer,
        evaluator=ToyEvaluator(),
        meta_solve=best_member_solve,
        seed_sources={"zero": toy_policy(0.0)},
        writer=writer,
    )
    engine.run()
    writer.close()
    return store, reviewer


def test_an_edit_keeps_the_oracles_original_and_marks_the_member(tmp_path):
    store, reviewer = edited_session(tmp_path)
    original, edit = reviewer.requests[:2]
    assert original.history == [] and original.edited_by is None
    [version] = edit.history
    assert version.source == original.proposal.source and version.edited_by is None
    assert version.expected_payoff == original.preview.expected_payoff  # measured for the original
    assert edit.edited_by == "alice" and "# changed by hand" in edit.proposal.source

    info = adapt.review_info(edit)
    assert info.original_source == original.proposal.source and info.edited_by == "alice"
    assert info.expected_payoff == edit.preview.expected_payoff != version.expected_payoff

    state = fold(store.read("edited").events)
    [member] = [m for m in state.population if m.origin != "seed"]
    assert "# changed by hand" in member.source
    assert state.edited_by(member.id) == "alice"
    assert [p.id for p in state.edit_chain(state.policy_proposal[member.id])] == [version.proposal_id, edit.proposal_id]
    data = adapt.dashboard_data(state)
    assert data.member(member.id).edited_by == "alice"
    assert [row.origin_text for row in member_rows(state)] == ["seed", "scripted ✎ alice"]
    written = export_session(state, tmp_path / "export")
    report = next(p for p in written if p.name == "report.md").read_text()
    assert "scripted ✎ alice" in report


async def test_review_of_an_edit_shows_both_diffs_and_the_measured_numbers(tmp_path):
    _, reviewer = edited_session(tmp_path)
    info = adapt.review_info(reviewer.requests[1])
    app = ScreenApp(lambda: ReviewScreen(info))
    async with app.run_test(size=(160, 48)) as pilot:
        app.screen.query_one("#review-tabs").active = "tab-diff"
        await pilot.pause()
        diff = rendered(app.screen.query_one("#review-diff"))
        summary = rendered(app.screen.query_one("#review-summary"))
        note = rendered(app.screen.query_one("#review-edit-note"))
    assert "the oracle's original → this code" in diff and "+# changed by hand" in diff
    assert "✎ edited by alice" in summary
    assert f"measured for this code: expected payoff vs meta-strategy {info.expected_payoff:+.4f}" in summary
    assert f"before the edit {info.history[0][3]:+.4f}" in summary
    assert "not a measurement of this code" in note


async def test_population_table_and_inspector_mark_a_hand_edit():
    data = sample_data()
    data.members[1] = replace(data.members[1], edited_by="tui")
    app = ScreenApp(lambda: DashboardScreen(data))
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        row = [str(c) for c in app.screen.query_one("#population", DataTable).get_row(data.members[1].id)]
        assert row[2] == f"{data.members[1].origin} ✎ tui"
    app = ScreenApp(lambda: InspectorScreen(data, data.members[1].id))
    async with app.run_test(size=(160, 48)) as pilot:
        text = rendered(app.screen.query_one("#inspector-text"))
    assert "✎ edited by tui" in text and "edited by tui)" in text  # the facts and the lineage


# --- regenerate, duplicates ---------------------------------------------------------


async def test_regenerate_says_what_it_costs_before_it_costs_it():
    info = sample_review()
    info.attempt, info.max_attempts = 3, 3
    app = ScreenApp(lambda: ReviewScreen(info))
    async with app.run_test() as pilot:
        await pilot.press("g")
        await pilot.pause()
        assert app.results == []
        assert any("iteration 3 then ends with nothing accepted" in n for n in notifications(app))
        await pilot.press("g")
        await pilot.pause()
    assert [d.kind for d in app.results] == ["regenerate"]


def test_an_iteration_that_accepted_nothing_is_said():
    from csro_tui.tui.backend import iterations_outcome

    reviewer = type("Rejecting", (), {"name": "r", "decide": lambda self, review: Decision.reject("no")})()
    engine = Engine(
        config=RunConfig(game="toy", oracle="scripted", iterations=0, max_attempts=2),
        spec=None, oracle=climbing_oracle(), reviewer=reviewer, evaluator=ToyEvaluator(),
        meta_solve=best_member_solve, seed_sources={"zero": toy_policy(0.0)},
    )
    engine.run(0, close=False)
    before = engine.snapshot()
    outcome = engine.run(1, close=False)
    after = engine.snapshot()
    assert iterations_outcome(before, after, outcome, 1) == "iteration 1 ended with nothing accepted (2 attempts used)"
    assert iterations_outcome(after, after, outcome, 1) == "no iteration finished"


async def test_review_names_the_duplicate_the_gate_found():
    from csro_tui.records import Proposal, ReviewRequest, ValidationResult

    request = ReviewRequest(
        proposal_id="3.1", proposal=Proposal("class Policy: ...", "best-response", "br_3"), iteration=3, attempt=1,
        validation=ValidationResult(True),
        preview=Preview(0.0, {"p0": 0.0}, duplicate_of="p1", duplicate_reason="same code as p1 (docstrings and comments aside)"),
    )
    info = adapt.review_info(request)
    assert (info.duplicate_of, info.duplicate_reason) == ("p1", "same code as p1 (docstrings and comments aside)")
    app = ScreenApp(lambda: ReviewScreen(info))
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        summary = rendered(app.screen.query_one("#review-summary"))
    assert "⚠ duplicate of p1: same code as p1 (docstrings and comments aside)" in summary


# --- errors ------------------------------------------------------------------------------


async def test_a_session_closed_with_an_error_keeps_a_panel(tmp_path):
    data = sample_data()
    data.session_id, data.closed, data.closed_reason, data.closed_event = "s1", True, "error", 42
    data.closed_message = f"ValueError: bad value(s) in fds_to_keep {HOSTILE}"
    app = ScreenApp(lambda: DashboardScreen(data))
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        panel = app.screen.query_one(ErrorPanel)
        assert panel.display
        text = rendered(panel)
        assert "The session closed with an error: ValueError: bad value(s) in fds_to_keep [/oops]" in text
        assert "event #42" in text and "csro run --resume s1" in text and "\x1b" not in text
    data.closed_reason = "completed"
    app = ScreenApp(lambda: DashboardScreen(data))
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        assert not app.screen.query_one(ErrorPanel).display


async def test_an_engine_exception_lands_in_the_panel_not_a_crash(tmp_path):
    from csro_tui.tui.app import CsroApp
    from csro_tui.tui.backend import Backend
    from tests.tui.helpers import start_screen
    from tests.tui.toy import ToySpec

    class Exploding:
        name = "scripted"

        def propose(self, context):
            raise RuntimeError(f"the oracle fell over {HOSTILE}")

    parts = {"spec": ToySpec(), "oracle": Exploding(), "evaluator": ToyEvaluator(), "meta_solve": best_member_solve}
    app = CsroApp(sessions_dir=tmp_path, backend=Backend(tmp_path, engine_parts=parts))
    async with app.run_test(size=(160, 48)) as pilot:
        await start_screen(pilot, app)
        await pilot.press("ctrl+n")
        await wait_until(pilot, lambda: app.live is not None and not app._busy(), "the session")
        await pilot.press("n")
        await wait_until(pilot, lambda: app.dashboard.query_one(ErrorPanel).display, "the error panel")
        text = rendered(app.dashboard.query_one(ErrorPanel))
        assert "the oracle fell over [/oops]" in text and "Traceback" in text
        assert any("error panel" in n for n in notifications(app))
        await pilot.press("p")  # the app is still up: another screen and back
        await pilot.press("escape")
        await pilot.pause()
        assert app.dashboard.query_one(ErrorPanel).display


# --- the timeline drills down -------------------------------------------------------------


async def test_timeline_jumps_by_iteration_and_proposal_and_opens_one(tmp_path):
    record_sample_session(tmp_path, "first")
    from csro_tui.tui.app import CsroApp

    app = CsroApp(session="first", sessions_dir=tmp_path)
    async with app.run_test(size=(160, 48)) as pilot:
        await wait_until(pilot, lambda: isinstance(app.screen, TimelineScreen) and app.screen.shown_step > 0, "the timeline")
        timeline = app.screen
        await pilot.press("home")
        await pilot.press("pagedown")  # iteration 0 started (event 2)
        await wait_until(pilot, lambda: timeline.shown_step == 2, "iteration 0")
        await pilot.press("pagedown")
        await wait_until(pilot, lambda: timeline.events[timeline.shown_step - 1].TYPE == "iteration_started"
                         and timeline.events[timeline.shown_step - 1].iteration == 1, "iteration 1")
        await pilot.press("right_square_bracket")
        await wait_until(pilot, lambda: timeline.events[timeline.shown_step - 1].TYPE == "proposal_created", "the proposal")
        await pilot.press("o")
        await wait_until(pilot, lambda: isinstance(app.screen, ProposalScreen), "the proposal view")
        decision = rendered(app.screen.query_one("#proposal-decision-body"))
        assert "accept by tui" in decision and "joined the population as p1" in decision
        await pilot.press("escape")
        # i on the focused payoff matrix inspects its cursor's row against its column
        await wait_until(pilot, lambda: app.screen is timeline, "back")
        await pilot.press("end")
        await wait_until(pilot, lambda: timeline.shown_step == len(timeline.events), "the end")
        await pilot.pause()
        table = timeline.query_one("#payoff-table", DataTable)
        table.focus()
        table.move_cursor(row=table.get_row_index("p1"), column=table.get_column_index("p0"))
        await pilot.pause()
        await pilot.press("i")
        await wait_until(pilot, lambda: isinstance(app.screen, InspectorScreen), "the inspector")
        assert (app.screen.member_id, app.screen.against) == ("p1", "p0")
        assert "Matchup p1 vs p0" in rendered(app.screen.query_one("#inspector-text"))


async def test_the_timeline_of_a_session_that_died_shows_the_panel(tmp_path):
    from csro_tui.sessions import events as ev
    from csro_tui.tui.app import CsroApp

    events = record_sample_session(tmp_path / "made", "made")
    store = SessionStore(tmp_path)
    with store.create("died") as writer:
        for event in events[:-1]:
            writer.append(replace(event, seq=0))
        writer.append(ev.SessionClosed(reason="error", message="ValueError: bad value(s) in fds_to_keep"))
    app = CsroApp(session="died", sessions_dir=tmp_path)
    async with app.run_test(size=(160, 48)) as pilot:
        await wait_until(pilot, lambda: isinstance(app.screen, TimelineScreen) and app.screen.shown_step == len(events), "the end")
        await pilot.pause()
        panel = app.screen.query_one(ErrorPanel)
        assert panel.display and "ValueError: bad value(s) in fds_to_keep" in rendered(panel)
        assert f"event #{len(events)}" in rendered(panel)
        await pilot.press("left")  # one step earlier the session had not died yet
        await wait_until(pilot, lambda: app.screen.shown_step == len(events) - 1, "a step back")
        await pilot.pause()
        assert not panel.display


def test_csro_replay_marks_the_edit_and_prints_a_hostile_name_literally(tmp_path, capsys):
    from csro_tui.cli import main

    store, _ = edited_session(tmp_path)
    # a member named like markup (the oracle names its policies) must not break the table
    log = tmp_path / "edited" / "events.jsonl"
    assert '"name": "climb-1"' in log.read_text()
    log.write_text(log.read_text().replace('"name": "climb-1"', '"name": "[/oops]"'))
    assert main(["replay", "edited", "--sessions-dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "✎ alice" in out
    assert "[/oops]" in out


async def test_the_apps_toasts_are_cleaned_and_never_markup(tmp_path):
    from csro_tui.tui.app import CsroApp

    app = CsroApp(sessions_dir=tmp_path)
    async with app.run_test() as pilot:
        app.notify(f"ValueError: {HOSTILE}", severity="error")
        await pilot.pause()
        toast = list(app._notifications)[-1]  # noqa: SLF001
    from textual.content import Content

    shown = Content.from_markup(toast.message).plain if toast.markup else toast.message
    assert shown == "ValueError: [/oops] \\x1b]2;pwned\\x07[bold]x\\x1b[2J"  # literal, escapes shown visibly


async def test_a_dashboard_update_before_the_panels_are_mounted_is_shown_once_they_are():
    from textual.screen import Screen

    from csro_tui.tui.widgets.dashboard_view import DashboardView
    from csro_tui.tui.widgets.population_table import PopulationTable

    data = sample_data()
    view = DashboardView(id="dashboard")
    view.show(data)  # before mounting: used to raise NoMatches

    class Holder(Screen):
        def compose(self):
            yield view

    app = ScreenApp(Holder)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        await pilot.pause()
        assert app.screen.query_one(PopulationTable).row_count == len(data.members) > 0


def test_a_policy_against_itself_is_said_to_be_zero_by_symmetry(tmp_path):
    record_sample_session(tmp_path)
    state = fold(SessionStore(tmp_path).read("sample-kuhn").events)
    data = adapt.dashboard_data(state)
    member = data.members[0].id
    assert data.cell(member, member).describe() == "0 by symmetry (against itself)"
    other = data.members[1].id
    assert "symmetry" not in data.cell(member, other).describe()


async def test_at_80_columns_the_population_table_fits_its_panel():
    from csro_tui.tui.widgets.population_table import PopulationTable

    app = ScreenApp(lambda: DashboardScreen(sample_data()))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        table = app.screen.query_one(PopulationTable)
        headers = [str(column.label) for column in table.columns.values()]
        assert headers[:3] == ["id", "name", "wt"]
        assert table.virtual_size.width <= table.content_region.width, (table.virtual_size, table.content_region)
    app = ScreenApp(lambda: DashboardScreen(sample_data()))
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        headers = [str(column.label) for column in app.screen.query_one(PopulationTable).columns.values()]
        assert headers[:5] == ["id", "name", "oracle", "parent", "weight"]
