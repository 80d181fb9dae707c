"""Snapshots at the smallest supported terminal (80x24) and a large one (220x60).

At 80x24 nothing essential may be cut: the footer keeps `?` and `^q`, the
population shows its rows, the matrix its row labels, the play screen its
table, buttons and history.  At 220x60 the panels use the room.  Update with
`pytest tests/tui/test_snapshots_sizes.py --snapshot-update` after a
deliberate change, and look at the report before committing.
"""

from __future__ import annotations

import itertools

import pytest

from csro_tui.tui.backend import Backend
from csro_tui.tui.model import DashboardData, LaunchOptions, StartChoices
from csro_tui.tui.screens.dashboard import DashboardScreen
from csro_tui.tui.screens.play import PlayScreen
from csro_tui.tui.screens.start import StartScreen
from tests.tui.helpers import wait_until
from tests.tui.sample import ScreenApp, sample_data

SIZES = [pytest.param((80, 24), id="80x24"), pytest.param((220, 60), id="220x60")]

CHOICES = StartChoices(
    games=["kuhn_poker", "leduc_poker", "rrps", "repeated_leduc"],
    oracles=["best-response", "seed", "human", "llm"],
    llm_oracles={"llm"},
    file_oracles={"human"},
    solvers=["nash", "prd", "rm", "uniform"],
    sessions=[("sample-kuhn", "kuhn_poker · best-response · nash · 1 iteration · 2 policies")],
)


def _with_history(data: DashboardData) -> DashboardData:
    data.metric_history = [(0, 0.5), (1, 0.3333), (2, 0.25), (3, 0.2), (4, 0.125)]
    return data


@pytest.mark.parametrize("size", SIZES)
def test_dashboard(snap_compare, size):
    app = ScreenApp(lambda: DashboardScreen(_with_history(sample_data())))
    assert snap_compare(app, terminal_size=size)


@pytest.mark.parametrize("size", SIZES)
def test_start(snap_compare, size):
    app = ScreenApp(lambda: StartScreen(CHOICES, LaunchOptions(seed=7)))

    async def checked(pilot):
        await wait_until(pilot, lambda: app.screen.checked_game == "kuhn_poker", "the game checked")
        await pilot.pause()

    assert snap_compare(app, terminal_size=size, run_before=checked)


def _play_app(tmp_path, game: str):
    seeds = itertools.count(1)
    screen = PlayScreen(Backend(tmp_path), game, DashboardData(game=game), new_seed=lambda: next(seeds))
    return ScreenApp(lambda: screen), screen


async def _pick(pilot, screen, option_id: str) -> None:
    await wait_until(pilot, lambda: screen.spec is not None, "the game")
    options = screen.query_one("#opponents")
    options.highlighted = options.get_option_index(option_id)
    options.action_select()
    await wait_until(pilot, lambda: screen.session is not None and len(screen.query("#play-actions Button")) > 0, "the deal")


@pytest.mark.parametrize("size", SIZES)
def test_play_rrps_rounds(snap_compare, tmp_path, size):
    app, screen = _play_app(tmp_path, "rrps(num_repetitions=10)")

    async def four_throws(pilot):
        await _pick(pilot, screen, "bot:rotatebot")
        for n, key in enumerate("rpsr", start=1):
            await wait_until(pilot, lambda: len(screen.query("#play-actions Button")) == 3, "a throw")
            await pilot.press(key)
            await wait_until(pilot, lambda: len([m for m in screen.session.moves if m.who == "you"]) == n, "played")
        await wait_until(pilot, lambda: len(screen.query("#play-actions Button")) == 3, "the board")

    assert snap_compare(app, terminal_size=size, run_before=four_throws)


@pytest.mark.parametrize("size", SIZES)
def test_play_kuhn_match(snap_compare, tmp_path, size):
    app, screen = _play_app(tmp_path, "kuhn_poker")

    async def two_games(pilot):
        await _pick(pilot, screen, "bot:always_call")
        for game in (1, 2):
            while not screen.session.finished:
                await wait_until(pilot, lambda: len(screen.query("#play-actions Button")) > 0 or screen.session.finished, "a move")
                if screen.session.finished:
                    break
                before = len(screen.session.moves)
                await pilot.press("2")  # bet, then the call
                await wait_until(pilot, lambda: len(screen.session.moves) > before, "the move")
            await wait_until(pilot, lambda: screen.match is not None and len(screen.match.games) == game, f"game {game}")
            if game == 1:
                session = screen.session
                await pilot.press("n")
                await wait_until(pilot, lambda: screen.session is not session and screen.session is not None, "game 2")
        await pilot.pause()

    assert snap_compare(app, terminal_size=size, run_before=two_games)
