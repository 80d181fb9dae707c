"""Many sessions per launch: esc from the dashboard closes the session and comes back
to the start screen, another session starts or opens; `p` plays the game of the
session on screen; ctrl+c cancels work; every screen key is in the palette."""

from __future__ import annotations

import asyncio

from csro_tui.sessions.state import fold
from csro_tui.sessions.store import SessionStore
from csro_tui.tui.model import LaunchOptions
from csro_tui.tui.screens.dashboard import DashboardScreen
from csro_tui.tui.screens.inspector import InspectorScreen
from csro_tui.tui.screens.play import PlayScreen
from csro_tui.tui.screens.sessions import TimelineScreen
from csro_tui.tui.screens.start import StartScreen
from tests.tui.helpers import engine_idle, notifications, start_screen, wait_until
from tests.tui.sample import record_sample_session
from tests.tui.toy import toy_app


async def test_two_sessions_in_one_launch(tmp_path):
    app, _ = toy_app(tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await start_screen(pilot, app)
        await pilot.press("ctrl+n")
        await engine_idle(pilot, app)
        assert isinstance(app.screen, DashboardScreen)
        first = app.live.session_id
        await pilot.press("escape")  # idle: closes at once
        await wait_until(pilot, lambda: isinstance(app.screen, StartScreen) and app.live is None, "the start screen")
        closed = fold(SessionStore(tmp_path).read(first).events)
        assert closed.closed is not None  # recorded closed, resumable
        # the list now offers the first session; start a second one
        await wait_until(pilot, lambda: first in [k for k, _ in app.screen.choices.sessions], "the list refreshed")
        await pilot.press("ctrl+n")
        await engine_idle(pilot, app)
        assert isinstance(app.screen, DashboardScreen) and app.live.session_id != first
        # the second one is closed when the app quits
        second = app.live.session_id
        await pilot.press("ctrl+q")
    assert fold(SessionStore(tmp_path).read(second).events).closed is not None


async def test_esc_while_working_warns_first(tmp_path):
    import threading

    app, _ = toy_app(tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await start_screen(pilot, app)
        await pilot.press("ctrl+n")
        await engine_idle(pilot, app)
        release = threading.Event()
        app._run_worker(release.wait, 30)  # engine work that runs until released
        await wait_until(pilot, app._busy, "the work")
        await pilot.press("escape")
        assert any("esc again cancels it" in n for n in notifications(app))
        assert app.live is not None and isinstance(app.screen, DashboardScreen)
        app.action_close_session()  # the second esc (the binding is exercised above)
        # the pilot's own pause waits for every widget while the close waits for the engine,
        # so plain sleeps here; the app keeps handling screens meanwhile (checked by hand)
        await asyncio.sleep(0.2)
        assert app._closing and app.live is not None  # waits for the work, off the event loop
        release.set()
        for _ in range(600):
            if isinstance(app.screen, StartScreen) and app.live is None:
                break
            await asyncio.sleep(0.05)
        assert isinstance(app.screen, StartScreen) and app.live is None


async def test_play_from_a_replayed_sessions_inspector_plays_that_sessions_game(tmp_path):
    record_sample_session(tmp_path)  # a kuhn_poker session
    app, _ = toy_app(tmp_path, session="sample-kuhn")
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_until(pilot, lambda: isinstance(app.screen, TimelineScreen) and app.screen.events, "the timeline")
        # another session live in this window, on another game
        app.options = LaunchOptions(game="leduc_poker")
        await pilot.pause(0.3)
        await pilot.press("i")
        await wait_until(pilot, lambda: isinstance(app.screen, InspectorScreen), "the inspector")
        await pilot.press("p")
        await wait_until(pilot, lambda: isinstance(app.screen, PlayScreen), "the play screen")
        screen = app.screen
        assert screen.game == "kuhn_poker" and screen.session_id == "sample-kuhn"
        await wait_until(pilot, lambda: screen.spec is not None, "the game")
        assert "member:p1" in screen.opponents and "bot:cfr_plus" in screen.opponents
        # esc goes back step by step, to the start screen at the bottom
        await pilot.press("escape")
        assert isinstance(app.screen, InspectorScreen)
        await pilot.press("escape")
        assert isinstance(app.screen, TimelineScreen)
        await pilot.press("escape")
        await wait_until(pilot, lambda: isinstance(app.screen, StartScreen), "the start screen")


async def test_ctrl_c_cancels_or_says_there_is_nothing(tmp_path):
    app, _ = toy_app(tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await start_screen(pilot, app)
        await pilot.press("ctrl+n")
        await engine_idle(pilot, app)
        await pilot.press("ctrl+c")
        assert any("Nothing to cancel" in n for n in notifications(app))
        titles = {c.title for c in app.get_system_commands(app.screen)}
        assert {"Next iteration", "Run 5", "Cancel work", "Inspect", "Play", "Sessions", "Close session"} <= titles


async def test_quitting_during_work_says_what_it_waits_for(tmp_path):
    app, _ = toy_app(tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await start_screen(pilot, app)
        await pilot.press("ctrl+n")
        await engine_idle(pilot, app)
        await pilot.press("n")  # the engine waits for a review
        await wait_until(pilot, lambda: not isinstance(app.screen, DashboardScreen), "the review")
        session_id = app.live.session_id
        await pilot.press("ctrl+q")
        await pilot.pause()
        assert any(n.startswith("Quitting once the engine stops (now: waiting for your review") for n in notifications(app))
    assert fold(SessionStore(tmp_path).read(session_id).events).closed is not None


async def test_p_on_a_replayed_sessions_timeline_plays_its_game(tmp_path):
    from textual.widgets import Footer

    record_sample_session(tmp_path)  # a kuhn_poker session
    app, _ = toy_app(tmp_path, session="sample-kuhn")
    async with app.run_test(size=(160, 48)) as pilot:
        await wait_until(pilot, lambda: isinstance(app.screen, TimelineScreen) and app.screen.events, "the timeline")

        def footer() -> list[tuple[str, str]]:
            return [(key.key, key.description) for key in app.screen.query_one(Footer).query("FooterKey")]

        # The footer fills in after the screen's first refresh (slower on a loaded machine).
        await wait_until(pilot, lambda: bool(footer()), "the footer's keys")
        assert ("p", "Play") in footer()
        await pilot.press("p")
        await wait_until(pilot, lambda: isinstance(app.screen, PlayScreen), "the play screen")
        assert app.screen.game == "kuhn_poker" and app.screen.session_id == "sample-kuhn"


async def test_the_start_screen_shown_again_focuses_the_sessions_list_so_question_mark_is_help(tmp_path):
    from textual.widgets import DataTable, Input

    from csro_tui.tui.screens.help import HelpScreen

    app, _ = toy_app(tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await start_screen(pilot, app)
        assert isinstance(app.focused, DataTable)
        app.screen.query_one("#seed", Input).focus()  # the last text field
        await pilot.press("ctrl+n")
        await engine_idle(pilot, app)
        await pilot.press("escape")
        await wait_until(pilot, lambda: isinstance(app.screen, StartScreen) and app.live is None, "the start screen")
        await pilot.pause()
        assert isinstance(app.focused, DataTable) and app.focused.id == "session-list"
        await pilot.press("question_mark")
        await wait_until(pilot, lambda: isinstance(app.screen, HelpScreen), "the help screen")
