"""The live flow over the engine's toy parts (no processes): fast and exact.

The same flow runs on real Kuhn poker with the best-response oracle in
test_live_kuhn.py; this one pins the app's wiring: start screen, engine in a
worker, review screen per proposal, decisions back to the engine, dashboard
and session log in step.
"""

from __future__ import annotations

import asyncio

from tests.fakes import ScriptedOracle, ToyEvaluator, best_member_solve, climbing_oracle
from csro_tui.sessions.state import fold
from csro_tui.tui.app import CsroApp
from csro_tui.tui.backend import Backend
from csro_tui.tui.screens.review import ReviewScreen
from csro_tui.tui.screens.sessions import TimelineScreen
from csro_tui.tui.widgets.meta_bars import MetaBars
from csro_tui.tui.widgets.population_table import PopulationTable
from tests.tui.toy import ToySpec, toy_app
from tests.tui.helpers import engine_idle, start_screen, MAX_WAIT_STEPS, notifications, wait_until


def population(app) -> list[str]:
    """The members' names in joining order (the table lists them by weight)."""
    table = app.screen.query_one(PopulationTable)
    rows = [(str(table.get_row_at(i)[0]), str(table.get_row_at(i)[1])) for i in range(table.row_count)]
    return [name for _, name in sorted(rows, key=lambda row: int(row[0].lstrip("p")))]


async def review(pilot, app):
    await wait_until(pilot, lambda: isinstance(app.screen, ReviewScreen), "a review")
    return app.screen


async def start_and_review_first_proposal(pilot, app):
    """Start a new session from the start screen and open the review of its first proposal."""
    await start_screen(pilot, app)
    await pilot.press("ctrl+n")
    await engine_idle(pilot, app)
    await pilot.press("n")
    return await review(pilot, app)


async def test_cancel_from_the_review_stops_the_run_and_the_next_one_goes_ahead(tmp_path):
    app, oracle = toy_app(tmp_path)
    async with app.run_test(size=(160, 48)) as pilot:
        await start_screen(pilot, app)
        await pilot.press("ctrl+n")
        await engine_idle(pilot, app)
        assert population(app) == ["weak"]
        await pilot.press("n")
        await review(pilot, app)
        await pilot.press("c")  # the engine thread is released and stops; nothing joins
        await engine_idle(pilot, app)
        assert population(app) == ["weak"]
        assert "Cancelling the work in progress." in notifications(app)
        await pilot.press("n")  # a cancelled run does not stop the next one
        screen = await review(pilot, app)
        await pilot.press("a")
        await engine_idle(pilot, app)
        assert population(app) == ["weak", screen.info.name]
        bars = str(app.screen.query_one(MetaBars).render())
        assert "100.0%" in bars  # the stronger policy takes all the weight
        session_id = app.live.session_id
    state = fold(Backend(tmp_path).read_events(session_id))
    assert [m.name for m in state.population] == ["weak", screen.info.name]
    # the interrupted review left no decision behind: the same proposal came back and was accepted
    assert [p.decision.action if p.decision else None for p in state.proposals.values()] == ["accept"]


async def test_quit_closes_the_session(tmp_path):
    app, _ = toy_app(tmp_path)
    async with app.run_test(size=(160, 48)) as pilot:
        await start_and_review_first_proposal(pilot, app)  # the engine thread waits for the person
        session_id = app.live.session_id
        await app.action_quit()  # what ctrl+q does; the app exits on its own once the log is closed
        for _ in range(MAX_WAIT_STEPS):
            if app.return_code is not None:
                break
            await asyncio.sleep(0.05)  # not pilot.pause: the app is going away
        assert app.return_code is not None
    state = fold(Backend(tmp_path).read_events(session_id))
    assert state.closed is not None
    assert [m.name for m in state.population] == ["weak"]


async def test_resume_a_recorded_session_from_its_timeline(tmp_path):
    app, _ = toy_app(tmp_path)
    async with app.run_test(size=(160, 48)) as pilot:
        await start_and_review_first_proposal(pilot, app)
        await pilot.press("a")
        await engine_idle(pilot, app)
        session_id = app.live.session_id

    app, _ = toy_app(tmp_path, session=session_id)
    async with app.run_test(size=(160, 48)) as pilot:
        await wait_until(pilot, lambda: isinstance(app.screen, TimelineScreen) and app.screen.shown_step > 0, "the timeline")
        await pilot.press("R")
        await engine_idle(pilot, app)
        assert population(app) == ["weak", "climb-1"], notifications(app)
        await pilot.press("n")
        screen = await review(pilot, app)
        assert screen.info.name == "climb-2"
        await pilot.press("a")
        await engine_idle(pilot, app)
        assert population(app) == ["weak", "climb-1", "climb-2"]
    state = fold(Backend(tmp_path).read_events(session_id))
    assert [m.name for m in state.population] == ["weak", "climb-1", "climb-2"]
    assert len(state.resumes) >= 1


async def leave_after_one_accepted(pilot, app, key: str) -> str:
    """Start, run one iteration (accepted), then leave the session with `key`; its id."""
    screen = await start_and_review_first_proposal(pilot, app)
    await pilot.press("a")
    await engine_idle(pilot, app)
    assert f"iteration 1 done: {screen.info.name} accepted" in notifications(app)
    assert not any(n.startswith("completed") for n in notifications(app))  # the session goes on
    session_id = app.live.session_id
    await pilot.press(key)
    if key == "escape":
        await wait_until(pilot, lambda: app.live is None, "the session closed")
    return session_id


async def test_leaving_before_the_requested_iterations_records_stopped_whichever_key(tmp_path):
    for key in ("escape", "ctrl+q"):
        app, _ = toy_app(tmp_path)
        async with app.run_test(size=(160, 48)) as pilot:
            session_id = await leave_after_one_accepted(pilot, app, key)
            for _ in range(MAX_WAIT_STEPS):
                if key == "escape" or app.return_code is not None:
                    break
                await asyncio.sleep(0.05)
        closed = fold(Backend(tmp_path).read_events(session_id)).closed
        assert closed is not None and closed.reason == "stopped", key  # resumable, 1 of 10 done


async def test_leaving_after_the_requested_iterations_records_completed(tmp_path, monkeypatch):
    monkeypatch.setenv("CSRO_ITERATIONS", "1")
    app, _ = toy_app(tmp_path)
    async with app.run_test(size=(160, 48)) as pilot:
        session_id = await leave_after_one_accepted(pilot, app, "escape")
    closed = fold(Backend(tmp_path).read_events(session_id)).closed
    assert closed is not None and closed.reason == "completed"
    assert closed.message == "1 of 1 iteration; closed in the TUI"


def test_the_close_message_counts_iterations_past_the_request_without_a_wrong_target():
    """Issue 36: the close message's iteration target: `n` past the requested iterations
    closed with "12 of 10 iterations"."""
    from csro_tui.tui.backend import iterations_of

    assert iterations_of(2, 10) == "2 of 10 iterations"
    assert iterations_of(12, 10) == "12 iterations (10 requested)"
    assert iterations_of(1, 1) == "1 of 1 iteration"


async def test_ctrl_q_with_an_edit_not_sent_warns_first_then_quits_and_records_the_session(tmp_path):
    from textual.widgets import TextArea

    from csro_tui.tui.screens.editor import EditorScreen

    app, _ = toy_app(tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await start_and_review_first_proposal(pilot, app)
        session_id = app.live.session_id
        await pilot.press("e")
        await wait_until(pilot, lambda: isinstance(app.screen, EditorScreen), "the editor")
        app.screen.query_one(TextArea).insert("# my change\n", (0, 0))
        await pilot.press("ctrl+q")
        await pilot.pause()
        assert isinstance(app.screen, EditorScreen) and app.return_code is None
        assert any("not sent" in n for n in notifications(app))
        await pilot.press("ctrl+q")  # the person means it
        for _ in range(MAX_WAIT_STEPS):
            if app.return_code is not None:
                break
            await asyncio.sleep(0.05)
        assert app.return_code is not None
    state = fold(Backend(tmp_path).read_events(session_id))
    assert state.closed is not None and state.closed.reason == "stopped"


async def test_an_oracle_with_nothing_more_to_propose_completes_the_session_as_csro_run_says(tmp_path):
    """Issue 29, item 3: each n said "iteration N ended with nothing accepted (0 attempts used)"
    and closing recorded "stopped: left after 2 of 10 iterations"."""
    from csro_tui.oracles.registry import OracleExhausted

    climbing = climbing_oracle(0.1)
    oracle = ScriptedOracle(lambda iteration, attempt, context: climbing.make(iteration, attempt, context)
                            if iteration == 1 else OracleExhausted("every idea is in the population"))
    backend = Backend(tmp_path, engine_parts={"spec": ToySpec(), "oracle": oracle, "evaluator": ToyEvaluator(),
                                             "meta_solve": best_member_solve})
    app = CsroApp(sessions_dir=tmp_path, backend=backend)
    async with app.run_test(size=(160, 48)) as pilot:
        await start_screen(pilot, app)
        await pilot.press("ctrl+n")
        await engine_idle(pilot, app)
        await pilot.press("n")
        await review(pilot, app)
        await pilot.press("a")
        await engine_idle(pilot, app)
        session_id = app.live.session_id
        await pilot.press("n")
        await wait_until(pilot, lambda: any("has nothing more to propose" in n for n in notifications(app)), "the oracle's end")
        await engine_idle(pilot, app)
        [said] = [n for n in notifications(app) if "has nothing more to propose" in n]
        assert said.startswith("completed: oracle ") and "every idea is in the population" in said
        assert "ended with nothing accepted" not in said and "0 attempts" not in said
        assert app._work_text.startswith("completed: the oracle has nothing more to propose")  # not "idle"
        asked = len(oracle.contexts)
        await pilot.press("n")  # the oracle is not asked again, and no empty iteration is recorded
        await pilot.pause()
        assert len(oracle.contexts) == asked
        assert sum("has nothing more to propose" in n for n in notifications(app)) == 2
        await pilot.press("escape")
        await wait_until(pilot, lambda: app.live is None, "the session closed")
    state = fold(Backend(tmp_path).read_events(session_id))
    assert state.completed_iterations == 2
    assert state.closed.reason == "completed" and "has nothing more to propose" in state.closed.message


async def test_esc_on_the_review_goes_back_to_the_dashboard_and_n_opens_the_waiting_proposal(tmp_path):
    """Issue 29, item 8: esc did nothing on the review and the footer had no esc."""
    from csro_tui.tui.screens.dashboard import DashboardScreen

    app, _ = toy_app(tmp_path)
    async with app.run_test(size=(160, 48)) as pilot:
        first = await start_and_review_first_proposal(pilot, app)
        assert "review.back" in {binding.id for binding in first.BINDINGS}  # esc is in the footer
        await pilot.press("escape")
        await wait_until(pilot, lambda: isinstance(app.screen, DashboardScreen), "the dashboard")
        # the status line says so (the toast saying it too may have expired on a loaded machine)
        assert app._busy() and app._work_text == f"waiting for your review of {first.info.name} (n opens it)"
        assert population(app) == ["weak"]  # nothing decided
        await pilot.press("n")
        again = await review(pilot, app)
        assert again is first
        await pilot.press("a")
        await engine_idle(pilot, app)
        assert population(app) == ["weak", first.info.name]
