"""Playing by hand: RRPS throws by key against a benchmark bot, Kuhn against a sandboxed policy."""

from __future__ import annotations

from textual.widgets import OptionList, Static

from csro_tui.evaluation.participants import CodePolicy
from csro_tui.games.registry import get_game
from csro_tui.tui.backend import Backend
from csro_tui.tui.model import DashboardData, Member
from csro_tui.play import PlaySession
from csro_tui.tui.screens.play import PlayScreen
from tests.tui.helpers import wait_until
from tests.tui.sample import ScreenApp

RRPS = "rrps(num_repetitions=5)"


def _text(app, selector: str) -> str:
    return str(app.screen.query_one(selector, Static).render())


def _pick(app, option_id: str) -> None:
    options = app.screen.query_one(OptionList)
    options.highlighted = options.get_option_index(option_id)
    options.action_select()


async def test_rrps_match_against_a_bot_by_keys(tmp_path):
    screen = PlayScreen(Backend(tmp_path), RRPS, DashboardData())
    app = ScreenApp(lambda: screen)
    async with app.run_test(size=(160, 48)) as pilot:
        await wait_until(pilot, lambda: screen.spec is not None, "the game to load")
        _pick(app, "bot:rotatebot")
        await wait_until(pilot, lambda: screen.session is not None and not screen.session.finished, "the game")
        throws = "rpsrp"
        for n, key in enumerate(throws, start=1):
            await wait_until(pilot, lambda: len(screen.query("#play-actions Button")) == 3, f"throw {n}")
            await pilot.press(key)
            await wait_until(pilot, lambda: len([m for m in screen.session.moves if m.who == "you"]) == n, f"throw {n} played")
        session = screen.session
        await wait_until(pilot, lambda: "Game over" in _text(app, "#play-board"), "the end of the match")
        mine = [m.action_name for m in session.moves if m.who == "you"]
        assert mine == ["Rock", "Paper", "Scissors", "Rock", "Paper"]
        bot = [m.action_name for m in session.opponent_moves()]
        assert len(bot) == 5
        board = _text(app, "#play-board")
        score = session.my_return()
        assert f"Score: you {score:+g}" in board
        history = _text(app, "#play-log")
        assert "What rotatebot saw and did" in history
        assert f"→ {bot[0]}" in history
        # the bot's own view: after round 1 it saw our Rock
        assert "opp_moves: [Rock]" in history


async def test_kuhn_against_a_population_member_in_its_sandbox(tmp_path):
    spec = get_game("kuhn_poker")
    source = spec.seed_policies()["always_bet"]
    data = DashboardData(game="kuhn_poker", members=[Member("p0", "always_bet", "seed", source=source)])
    screen = PlayScreen(Backend(tmp_path), "kuhn_poker", data, preselect="p0")
    app = ScreenApp(lambda: screen)
    async with app.run_test(size=(160, 48)) as pilot:
        await wait_until(pilot, lambda: screen.spec is not None, "the game to load")
        await pilot.press("enter")  # the preselected member
        await wait_until(pilot, lambda: screen.session is not None, "the game")
        assert screen.session.host is not None  # a sandboxed host, not in-process
        while not screen.session.finished:
            await wait_until(pilot, lambda: len(screen.query("#play-actions Button")) > 0 or screen.session.finished, "our turn")
            if screen.session.finished:
                break
            before = len(screen.session.moves)
            await pilot.press("1")  # Pass / Fold: the first legal action
            await wait_until(pilot, lambda: len(screen.session.moves) > before, "the move")
        await wait_until(pilot, lambda: "Game over" in _text(app, "#play-board"), "the end")
        assert screen.session.host is None  # closed at the end
        assert "What p0 saw and did" in _text(app, "#play-log")


def test_play_session_records_what_the_opponent_saw():
    spec = get_game(RRPS)
    session = PlaySession(spec, CodePolicy("cycle", spec.seed_policies()["cycle"]), seat=1, seed=3)
    try:
        while not session.finished:
            session.play(0)
    finally:
        session.close()
    record = session.record()
    assert record["seat"] == 1 and record["opponent"] == "cycle"
    seen = [m["obs"]["my_moves"] for m in record["transcript"] if m["who"] == "cycle"]
    # each observation is what the policy saw then, not the final history
    assert [len(s) for s in seen] == [0, 1, 2, 3, 4]
    assert sum(record["returns"]) == 0
