"""RRPS in the TUI with the real sandbox and the real referee pool.

Inside a Textual app sys.stderr is Textual's stand-in (fileno() == -1);
starting the pool there used to fail with "bad value(s) in fds_to_keep".
multiprocessing's resource tracker is process-wide: once another test has
started it, the failing path is not taken again, so each test stops it first
and the app starts it anew, under Textual's stderr.
"""

from __future__ import annotations

import os
import subprocess
import sys
from multiprocessing import resource_tracker

from csro_tui.evaluation.runner import RefereePool
from csro_tui.sessions.state import fold
from csro_tui.tui.app import CsroApp
from csro_tui.tui.backend import Backend
from csro_tui.tui.model import LaunchOptions
from csro_tui.tui.screens.review import ReviewScreen
from csro_tui.tui.screens.sessions import TimelineScreen
from csro_tui.tui.widgets.population_table import PopulationTable
from csro_tui.tui.screens.dashboard import DashboardScreen
from tests.tui.helpers import notifications, start_screen, wait_until

GENEROUS = 12000  # x 0.05 s: rrps with its 43 bots on a loaded 2-core machine takes minutes

GAME = "rrps(num_repetitions=100)"
# Episodes per benchmark bot: the default (20) against 43 bots takes minutes here.
# 6 is about the fewest whose benchmark batch (43 bots x 6 episodes x 100 moves) is
# still above the runner's MIN_WARM_POOL_STEPS (20,000), so it still plays in the
# referee pool (pool_running checks it). Set through the environment, which the
# app's configuration and the CLI subprocess both read.
BENCHMARK_EPISODES = "6"


def _fresh_resource_tracker() -> None:
    tracker = resource_tracker._resource_tracker  # noqa: SLF001
    if tracker._fd is not None:  # noqa: SLF001 - running: let it go, the next pool starts a new one
        # Not tracker._stop(): it waits for the tracker to exit, which it does only once every
        # process holding its pipe has ended, and a pool another test in this worker left idle
        # holds it (seen under xdist after the zygote merge). Closing our end is enough.
        os.close(tracker._fd)  # noqa: SLF001
        tracker._fd, tracker._pid = None, None  # noqa: SLF001


def population(app) -> list[str]:
    table = app.screen.query_one(PopulationTable)
    return [str(table.get_row_at(i)[0]) for i in range(table.row_count)]


def pool_running(app) -> bool:
    pool = app.live.engine.evaluator._pool  # noqa: SLF001
    return isinstance(pool, RefereePool) and pool._pool is not None  # noqa: SLF001


async def engine_idle(pilot, app) -> None:
    await wait_until(
        pilot, lambda: not app._busy() and isinstance(app.screen, DashboardScreen), "the engine", GENEROUS  # noqa: SLF001
    )


async def accept_next(pilot, app) -> None:
    await pilot.press("n")
    try:
        await wait_until(pilot, lambda: isinstance(app.screen, ReviewScreen), "a review", GENEROUS)
    except AssertionError as error:
        raise AssertionError(f"{error}; work: {app._work_text}; {notifications(app)}") from None  # noqa: SLF001
    assert app.screen.info.valid, app.screen.info.failure
    await pilot.press("a")
    await engine_idle(pilot, app)


async def test_rrps_session_started_from_the_start_screen_grows(tmp_path, monkeypatch):
    monkeypatch.setenv("CSRO_BENCHMARK_EPISODES", BENCHMARK_EPISODES)
    _fresh_resource_tracker()
    app = CsroApp(LaunchOptions(game=GAME, oracle="seed"), sessions_dir=tmp_path)
    async with app.run_test(size=(160, 48)) as pilot:
        await start_screen(pilot, app)
        assert sys.stderr.fileno() == -1  # Textual's stand-in: the condition that broke the pool
        await pilot.press("ctrl+n")
        await engine_idle(pilot, app)
        assert app.live is not None, notifications(app)
        assert population(app) == ["p0"]
        await accept_next(pilot, app)
        assert sorted(population(app)) == ["p0", "p1"]  # (listed by weight)
        assert pool_running(app)  # the benchmark ran in the referee pool's worker processes
        assert not any("Error" in n for n in notifications(app)), notifications(app)
        session_id = app.live.session_id
        await app.action_quit()
    state = fold(Backend(tmp_path).read_events(session_id))
    assert state.ids == ["p0", "p1"] and set(state.benchmark) == {"p0", "p1"}
    assert state.started.config["benchmark_episodes"] == int(BENCHMARK_EPISODES)


async def test_cli_made_rrps_session_resumes_and_continues(tmp_path, monkeypatch):
    monkeypatch.setenv("CSRO_BENCHMARK_EPISODES", BENCHMARK_EPISODES)
    made = subprocess.run(
        [sys.executable, "-m", "csro_tui.cli", "run", "--game", GAME, "--oracle", "seed", "--iterations", "1",
         "--review", "auto", "--sessions-dir", str(tmp_path)],
        capture_output=True, text=True, timeout=600,
    )
    assert made.returncode == 0, made.stderr
    [info] = Backend(tmp_path).list_sessions()
    made_state = fold(Backend(tmp_path).read_events(info.id))
    assert made_state.started.config["benchmark_episodes"] == int(BENCHMARK_EPISODES)
    before = made_state.ids
    _fresh_resource_tracker()
    app = CsroApp(session=info.id, sessions_dir=tmp_path)
    async with app.run_test(size=(160, 48)) as pilot:
        await wait_until(pilot, lambda: isinstance(app.screen, TimelineScreen) and app.screen.events, "the timeline", GENEROUS)
        await pilot.press("R")
        await engine_idle(pilot, app)
        assert app.live is not None, notifications(app)
        assert population(app) == before
        await accept_next(pilot, app)
        assert population(app) == before + [f"p{len(before)}"]
        assert pool_running(app)
        await app.action_quit()
    state = fold(Backend(tmp_path).read_events(info.id))
    assert len(state.ids) == len(before) + 1 and state.resumes
