"""Playing by hand: a match (running total, games, rounds) against bots and sandboxed members, recorded in the session."""

from __future__ import annotations

import itertools
import random
import re

import pytest
from textual.widgets import OptionList, Static

from csro_tui.evaluation.participants import BotPolicy, CodePolicy
from csro_tui.games.registry import get_game
from csro_tui.play import Match, PlaySession, fresh_seed, opponent_decisions, rounds, showdown, table
from csro_tui.sessions.state import fold
from csro_tui.sessions.store import SessionStore
from csro_tui.sessions.summary import game_records
from csro_tui.tui.backend import Backend
from csro_tui.tui.model import DashboardData, Member
from csro_tui.tui.screens.play import PlayScreen
from tests.tui.helpers import wait_until
from tests.tui.sample import ScreenApp, record_sample_session

RRPS = "rrps(num_repetitions=5)"


def _text(app, selector: str) -> str:
    return str(app.screen.query_one(selector, Static).render())


def _pick(app, option_id: str) -> None:
    options = app.screen.query_one(OptionList)
    options.highlighted = options.get_option_index(option_id)
    options.action_select()


def _play_out(session: PlaySession, rng: random.Random) -> None:
    while not session.finished:
        session.play(rng.choice(session.legal_actions())[0])


class FakeLive:
    """The live run as the play screen sees it: a session id and record_game."""

    def __init__(self, session_id: str) -> None:
        self.session_id = session_id
        self.records: list[dict] = []

    def record_game(self, record: dict) -> None:
        self.records.append(record)


# ---------------------------------------------------------------------- the core


def test_kuhn_actions_are_named_as_a_poker_player_names_them():
    spec = get_game("kuhn_poker")
    # seat 1 against always_call: it checks first, so we may check or bet
    session = PlaySession(spec, BotPolicy("always_call"), seat=1, seed=5)
    assert [m.label for m in session.moves] == ["Check"]
    assert [label for _, label in session.legal_actions()] == ["Check", "Bet 1"]
    assert dict(table(session))["To call"] == "0"
    session.play(1)  # bet; always_call calls
    assert [m.label for m in session.moves] == ["Check", "Bet 1", "Call 1"]
    hand = showdown(session)
    assert hand is not None and hand.folded is None and hand.their_card in ("J", "Q", "K")
    # seat 0 against an always-betting member: facing a bet we may fold or call
    session = PlaySession(spec, BotPolicy("uniform_random"), seat=0, seed=1)
    session.play(0)  # check
    if not session.finished:
        assert [label for _, label in session.legal_actions()] == ["Fold", "Call 1"]
        session.play(0)
        assert showdown(session).folded == "you" and showdown(session).their_card is None


def test_leduc_check_is_not_called_call_and_bets_have_sizes():
    spec = get_game("leduc_poker")
    session = PlaySession(spec, BotPolicy("always_call"), seat=0, seed=2)
    assert [label for _, label in session.legal_actions()] == ["Check", "Bet 2"]
    session.play(2)  # bet 2; always_call calls
    assert [m.label for m in session.moves[:2]] == ["Bet 2", "Call 2"]
    rows = dict(table(session))
    assert rows["Round"].startswith("2 of 2") and rows["Board"] in ("J", "Q", "K")
    assert [label for _, label in session.legal_actions()] == ["Check", "Bet 4"]
    assert rows["Betting"] == "r1: you Bet 2, them Call 2"


def test_rrps_lists_your_throw_before_the_bots_with_a_result_per_round():
    spec = get_game(RRPS)
    session = PlaySession(spec, BotPolicy("rotatebot"), seat=0, seed=3)
    assert dict(table(session))["Round"] == "1 of 5"
    for action in (0, 1, 2):
        session.play(action)
    assert [m.who for m in session.moves] == ["you", "rotatebot"] * 3
    done = rounds(session)
    assert [r.mine for r in done] == ["Rock", "Paper", "Scissors"]
    assert [r.theirs for r in done] == [m.action_name for m in session.opponent_moves()]
    # each round's result is the throw's: +1 a win, -1 a loss, 0 a tie; totals run on
    beats = {("Paper", "Rock"), ("Scissors", "Paper"), ("Rock", "Scissors")}
    for row in done:
        expected = 1 if (row.mine, row.theirs) in beats else -1 if (row.theirs, row.mine) in beats else 0
        assert row.result == expected
    assert done[-1].total == sum(r.result for r in done)
    assert dict(table(session))["Round"] == "4 of 5"


def test_repeated_leduc_lists_hands_with_cards_shown_only_at_showdown():
    spec = get_game("repeated_leduc(num_hands=4)")
    session = PlaySession(spec, BotPolicy("cfr_plus"), seat=1, seed=fresh_seed())
    assert dict(table(session))["Hand"] == "1 of 4"
    _play_out(session, random.Random(0))
    hands = rounds(session)
    assert [h.number for h in hands] == [1, 2, 3, 4]
    assert sum(h.result for h in hands) == session.my_return()
    for hand in hands:
        assert (hand.theirs == "?") == ("folded" in hand.detail)


def test_fresh_deals_every_game_and_a_running_total():
    spec = get_game("kuhn_poker")
    seeds = {fresh_seed() for _ in range(20)}
    assert len(seeds) > 15  # from the OS, not a counter restarting at 0
    match = Match("cfr_plus")
    cards = []
    rng = random.Random(4)
    for seed in sorted(seeds)[:12]:
        session = PlaySession(spec, BotPolicy("cfr_plus"), seat=len(match.games) % 2, seed=seed)
        cards.append(dict(table(session))["Your card"] if not session.finished else None)
        _play_out(session, rng)
        match.add(session)
    assert len(set(c for c in cards if c)) > 1
    assert match.total == sum(g.result for g in match.games)
    wins, losses, ties = match.tally()
    assert wins + losses + ties == 12
    assert [g.seat for g in match.games] == [0, 1] * 6


MIXED_KUHN = '''
class Policy:
    def __init__(self, player, game):
        pass

    def act(self, obs):
        first, second = obs["legal_actions"]
        return {first: 0.4, second: 0.6}
'''


def test_what_the_opponent_saw_and_did_is_told_in_poker_terms():
    spec = get_game("kuhn_poker")
    session = PlaySession(spec, CodePolicy("mixer", MIXED_KUHN), seat=0, seed=11)
    try:
        session.play(0)  # Check
        while not session.finished:
            session.play(session.legal_actions()[-1][0])  # call a bet
    finally:
        session.close()
    first = opponent_decisions(session)[0]
    card = session.moves[1].observation["card"]
    assert first.saw == f"held {card}, pot 2, nothing to call, after r1: you Check"
    assert first.did == session.moves[1].label and first.did in ("Check", "Bet 1")
    assert first.policy == "Check 0.40, Bet 1 0.60"  # the choices named as at that moment, not Pass/Bet
    spec = get_game("leduc_poker")
    session = PlaySession(spec, CodePolicy("mixer", MIXED_KUHN.replace("first, second", "*_, first, second")), seat=1, seed=5)
    try:
        while not session.finished:
            session.play(session.legal_actions()[1][0] if len(session.legal_actions()) > 1 else session.legal_actions()[0][0])
    finally:
        session.close()
    first = opponent_decisions(session)[0]
    assert first.saw.startswith("held ") and ", board not dealt, pot 2, nothing to call, first to act" in first.saw
    assert first.policy == "Check 0.40, Bet 2 0.60"


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


# ---------------------------------------------------------------------- recording


def test_games_are_appended_to_a_closed_session_and_counted_per_opponent(tmp_path):
    record_sample_session(tmp_path)
    backend = Backend(tmp_path)
    spec = get_game("kuhn_poker")
    results = []
    for seed in (11, 12, 13):
        session = PlaySession(spec, BotPolicy("always_fold"), seat=0, seed=seed)
        session.play(1)  # bet: always_fold folds
        results.append(session.my_return())
        assert backend.record_played_game(None, "sample-kuhn", session.record()) is True
    state = fold(SessionStore(tmp_path).read("sample-kuhn").events)
    assert len(state.games) == 3 and [g.seed for g in state.games] == [11, 12, 13]
    (record,) = game_records(state)
    assert (record.opponent, record.games, record.wins, record.total) == ("always_fold", 3, 3, sum(results)) == (
        "always_fold", 3, 3, 3.0)


def test_a_session_that_is_not_closed_is_not_written_from_outside(tmp_path):
    from csro_tui.errors import SessionError
    from csro_tui.sessions.events import GamePlayed

    events = record_sample_session(tmp_path)
    store = SessionStore(tmp_path)
    path = store.resolve("sample-kuhn") / "events.jsonl"
    lines = path.read_text().splitlines(keepends=True)
    path.write_text("".join(lines[:-1]))  # as if still running: no session_closed
    with pytest.raises(SessionError, match="not closed"):
        store.append_to_closed("sample-kuhn", GamePlayed(policy_id=None, opponent="x", seat=0, transcript=[], returns=[1, -1]))
    assert len(store.read("sample-kuhn").events) == len(events) - 1


def test_the_live_session_records_through_its_engine(tmp_path):
    live = FakeLive("live-1")
    assert Backend(tmp_path).record_played_game(live, "live-1", {"opponent": "x"}) is True
    assert live.records == [{"opponent": "x"}]
    assert Backend(tmp_path).record_played_game(None, None, {"opponent": "x"}) is False


def test_export_and_replay_show_the_persons_record(tmp_path, capsys):
    from csro_tui.cli import main
    from csro_tui.sessions.export import report_markdown

    record_sample_session(tmp_path)
    backend = Backend(tmp_path)
    spec = get_game("kuhn_poker")
    for seed, action in ((1, 1), (2, 1)):
        session = PlaySession(spec, BotPolicy("always_fold"), seat=0, seed=seed)
        session.play(action)
        backend.record_played_game(None, "sample-kuhn", session.record())
    report = report_markdown(fold(SessionStore(tmp_path).read("sample-kuhn").events))
    assert "| always_fold | 2 | 2 | 0 | 0 | 2.0000 |" in report
    assert main(["replay", "sample-kuhn", "--sessions-dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "games played by hand (2)" in out and "always_fold" in out


# ---------------------------------------------------------------------- the screen


async def test_rrps_match_against_a_bot_by_keys(tmp_path):
    seeds = itertools.count(100)
    screen = PlayScreen(Backend(tmp_path), RRPS, DashboardData(game=RRPS), new_seed=lambda: next(seeds))
    app = ScreenApp(lambda: screen)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_until(pilot, lambda: screen.spec is not None, "the game to load")
        _pick(app, "bot:rotatebot")
        await wait_until(pilot, lambda: screen.session is not None and not screen.session.finished, "the game")
        for n, key in enumerate("rpsrp", start=1):
            await wait_until(pilot, lambda: len(screen.query("#play-actions Button")) == 3, f"throw {n}")
            assert re.search(rf"Round\s+{n} of 5", _text(app, "#play-board"))
            await pilot.press(key)
            await wait_until(pilot, lambda: len([m for m in screen.session.moves if m.who == "you"]) == n, f"throw {n} played")
        session = screen.session
        await wait_until(pilot, lambda: "Game 1 over" in _text(app, "#play-board"), "the end of the game")
        assert [m.action_name for m in session.moves if m.who == "you"] == ["Rock", "Paper", "Scissors", "Rock", "Paper"]
        history = _text(app, "#play-log")
        first = rounds(session)[0]
        assert f"1  you Rock     them {first.theirs:<8}" in history
        assert "Games of this match" in history and "5 rounds: won" in history
        # the next game: a new seed, the total runs on
        await pilot.press("n")
        await wait_until(pilot, lambda: screen.session is not session and screen.session is not None, "game 2")
        assert screen.session.seed == 101
        assert "1 game · total" in _text(app, "#play-match")


async def test_leaving_mid_game_says_the_game_was_not_recorded(tmp_path):
    from tests.tui.helpers import notifications

    screen = PlayScreen(Backend(tmp_path), RRPS, DashboardData(game=RRPS), new_seed=lambda: 7)
    app = ScreenApp(lambda: screen)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_until(pilot, lambda: screen.spec is not None, "the game to load")
        _pick(app, "bot:rotatebot")
        await wait_until(pilot, lambda: len(screen.query("#play-actions Button")) == 3, "the first throw")
        await pilot.press("r")
        await wait_until(pilot, lambda: screen.session is not None and screen.session.moves, "the throw played")
        # issue 36: one esc threw the game away without asking; it asks first, another key stays
        await pilot.press("escape")
        await pilot.pause()
        assert app.screen is screen
        assert any("Leaving abandons the game under way" in n for n in notifications(app))
        await pilot.press("left")  # any other key: the next esc asks again
        await pilot.press("escape")
        await pilot.pause()
        assert app.screen is screen
        await pilot.press("escape")
        await wait_until(pilot, lambda: app.screen is not screen, "the screen left")
        assert "The unfinished game was abandoned (not recorded)." in notifications(app)


async def test_liars_dice_calls_liar_with_a_key_of_its_own_at_80x24(tmp_path):
    """Issue 36: "Call liar" is the last move, beyond the digit keys once there are nine bids."""
    screen = PlayScreen(Backend(tmp_path), "liars_dice", DashboardData(game="liars_dice"), new_seed=lambda: 7)
    app = ScreenApp(lambda: screen)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_until(pilot, lambda: screen.spec is not None, "the game to load")
        _pick(app, "bot:uniform_random")
        liar = screen.spec.liar_action

        def liar_on_offer() -> bool:
            return screen.session is not None and not screen.moving and any(a == liar for a, _ in screen.offered)

        for _ in range(20):  # bid the lowest until calling liar is on offer (after the opponent's bid)
            if liar_on_offer() or (screen.session is not None and screen.session.finished):
                break
            await wait_until(pilot, lambda: screen.session is not None and not screen.moving and screen.offered, "a bid")
            if not liar_on_offer():
                await pilot.press("1")
                await pilot.pause(0.2)
        await wait_until(pilot, liar_on_offer, "calling liar on offer")
        assert "l Call liar" in _text(app, "#play-status")
        assert any("Call liar (l)" in str(button.label) for button in screen.query("#play-actions Button"))
        await pilot.press("l")
        await wait_until(pilot, lambda: screen.session.finished, "the game over")
        assert [m for m in screen.session.moves if m.who == "you"][-1].action == liar


async def test_kuhn_against_a_population_member_in_its_sandbox_is_recorded(tmp_path):
    spec = get_game("kuhn_poker")
    source = spec.seed_policies()["always_bet"]
    data = DashboardData(game="kuhn_poker", members=[Member("p0", "always_bet", "seed", source=source)])
    live = FakeLive("live-kuhn")
    screen = PlayScreen(Backend(tmp_path), "kuhn_poker", data, preselect="p0", live=live)
    app = ScreenApp(lambda: screen)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_until(pilot, lambda: screen.spec is not None, "the game to load")
        await pilot.press("enter")  # the preselected member
        await wait_until(pilot, lambda: screen.session is not None, "the game")
        assert screen.session.host is not None  # a sandboxed host, not in-process
        while not screen.session.finished:
            await wait_until(pilot, lambda: len(screen.query("#play-actions Button")) > 0 or screen.session.finished, "our turn")
            if screen.session.finished:
                break
            before = len(screen.session.moves)
            await pilot.press("2")  # Bet / Call: the second legal action
            await wait_until(pilot, lambda: len(screen.session.moves) > before, "the move")
        await wait_until(pilot, lambda: len(live.records) == 1, "the game recorded")
        assert screen.session.host is None  # closed at the end
        assert live.records[0]["policy_id"] == "p0" and live.records[0]["seat"] == 0
        assert "showdown: you" in _text(app, "#play-board")  # both called: the cards are shown
        assert "What p0 always_bet saw and did" in _text(app, "#play-log")  # a member by id and name
        assert "vs p0 always_bet · you seat 0" in _text(app, "#play-match")
        assert re.search(r"held [JQK], pot \d", _text(app, "#play-log"))  # in poker terms, not the raw observation
        assert "1 recorded in the session" in _text(app, "#play-status")


async def test_after_a_fold_what_the_opponent_saw_keeps_its_card_hidden(tmp_path):
    data = DashboardData(game="kuhn_poker", members=[])
    screen = PlayScreen(Backend(tmp_path), "kuhn_poker", data)
    app = ScreenApp(lambda: screen)
    async with app.run_test(size=(160, 48)) as pilot:
        await wait_until(pilot, lambda: screen.spec is not None, "the game to load")
        _pick(app, "bot:always_fold")
        await wait_until(pilot, lambda: screen.session is not None, "the hand")
        assert screen.session.seat == 0  # we act first: a bet, which always_fold folds to
        await wait_until(pilot, lambda: len(screen.query("#play-actions Button")) > 0, "our turn")
        await pilot.press("2")  # Bet
        await wait_until(pilot, lambda: screen.session.finished, "the fold")
        await pilot.pause()
        assert showdown(screen.session).folded == "them"
        log = _text(app, "#play-log")
        assert "What always_fold saw and did" in log and "→ Fold" in log
        assert "held ? (hidden: the hand ended in a fold), pot 3, 1 to call, after r1: you Bet 1" in log
        assert not re.search(r"held [JQK]\b", log), log
        assert "betting" not in log and "[[" not in log  # no raw observation


async def test_the_session_id_the_games_go_to_is_never_cut(tmp_path):
    long_id = "20261202-205821-rrps_num_repetitions_100-seed"
    screen = PlayScreen(Backend(tmp_path), RRPS, DashboardData(game=RRPS), session_id=long_id)
    app = ScreenApp(lambda: screen)
    app.title = "csro"  # as the real app's header reads
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_until(pilot, lambda: screen.spec is not None, "the game to load")
        assert screen.sub_title == f"Play · {long_id}"
        assert long_id in app.export_screenshot()  # drawn whole in the header, not cut with "…"
        await pilot.resize_terminal(160, 48)
        await pilot.pause()
        assert screen.sub_title == f"Play {RRPS} · records to {long_id}"


async def test_each_opponent_takes_one_row_of_the_list_at_80_columns(tmp_path):
    spec = get_game("kuhn_poker")
    source = spec.seed_policies()["always_bet"]
    data = DashboardData(game="kuhn_poker", members=[Member("p1", "fold_exploiter_long_name", "seed", source=source)])
    screen = PlayScreen(Backend(tmp_path), "kuhn_poker", data)
    app = ScreenApp(lambda: screen)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_until(pilot, lambda: screen.spec is not None, "the game to load")
        await pilot.pause()
        shot = app.export_screenshot().replace("&#160;", " ")
        assert "p1 fold_exploit" in shot and "…" in shot  # cut on its row, not wrapped under 'p1'
        assert "long_name" not in shot


async def test_repeated_leduc_hands_keep_one_row_each_at_80_columns_result_first(tmp_path):
    game = "repeated_leduc(num_hands=6)"
    screen = PlayScreen(Backend(tmp_path), game, DashboardData(game=game))
    app = ScreenApp(lambda: screen)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_until(pilot, lambda: screen.spec is not None, "the game to load")
        _pick(app, "bot:always_fold")
        await wait_until(pilot, lambda: screen.session is not None, "the match")
        for hand in range(3):  # bet each hand: always_fold folds, which the row says last
            await wait_until(pilot, lambda: len(screen.query("#play-actions Button")) > 0, "our turn")
            before = len(rounds(screen.session))
            await pilot.press(str(len(screen.session.legal_actions())))  # the last button: Bet
            await wait_until(pilot, lambda: len(rounds(screen.session)) > before, "the hand over")
        await pilot.pause()
        rows = [line for line in _text(app, "#play-log").splitlines() if re.match(r"\s+\d+  (won|lost|tied)", line)]
        assert len(rows) == 3, _text(app, "#play-log")
        width = screen.query_one("#play-log", Static).size.width
        for row in rows:
            assert len(row) <= width and re.search(r"(won|lost|tied)\s+[+-]?\d+  total [ +-]*\d+  you [JQK] them", row), row


async def test_a_generic_games_board_keeps_its_lines_and_every_move_shows_at_80_columns(tmp_path):
    """Tic-tac-toe through the generic adapter: nine moves, the board on three lines."""
    screen = PlayScreen(Backend(tmp_path), "tic_tac_toe", DashboardData(game="tic_tac_toe"))
    app = ScreenApp(lambda: screen)

    def board_rows() -> list[str]:
        lines = _text(app, "#play-board").splitlines()
        first = next(i for i, line in enumerate(lines) if line.strip().startswith("observation"))
        return [lines[first].split()[-1], lines[first + 1].strip(), lines[first + 2].strip()]

    async with app.run_test(size=(80, 24)) as pilot:
        await wait_until(pilot, lambda: screen.spec is not None, "the game to load")
        _pick(app, "bot:uniform_random")
        await wait_until(pilot, lambda: len(screen.query("#play-actions Button")) == 9, "our first move")
        await pilot.pause()
        table_panel = screen.query_one("#play-table").content_region
        buttons = list(screen.query("#play-actions Button"))
        # every move is on screen (one row ran the last four off the panel at 80 columns)
        for button in buttons:
            region = button.region
            assert region.width > 0 and table_panel.x <= region.x and region.right <= table_panel.right, (button.label, region)
        assert len({button.region.y for button in buttons}) == 2  # wrapped onto a second row
        assert board_rows() == ["...", "...", "..."]  # not "... ... ..." on one line
        await pilot.press("5")  # the fifth move, x(1,1): the centre
        await wait_until(pilot, lambda: any(m.who == "you" for m in screen.session.moves), "the move")
        await wait_until(pilot, lambda: screen.session.finished or len(screen.query("#play-actions Button")) == 7, "their reply")
        assert board_rows()[1][1] == "x"


def test_a_generic_games_moves_are_named_as_the_game_names_them_not_by_id(tmp_path):
    """liars_dice_ir names its bids only in a state ("1-1" ... "2-6"); the play table named them 0..11."""
    session = PlaySession(get_game("liars_dice_ir"), BotPolicy("uniform_random"), seat=0, seed=3)
    try:
        legal = session.legal_actions()
        assert len(legal) > 9
        assert [name for _, name in legal][:3] == ["1-1", "1-2", "1-3"]
        assert all(not name.isdigit() for _, name in legal)
    finally:
        session.close()


def test_a_leduc_showdown_says_why_the_winner_won():
    """`you K, they Q, board Q` -> lost said nothing of their pair: the line now says it."""
    spec = get_game("leduc_poker")
    reasons = {}
    for seed in range(200):
        session = PlaySession(spec, BotPolicy("always_call"), seat=0, seed=seed)
        while not session.finished:
            session.play(1)  # check / call to the showdown
        hand = showdown(session)
        assert hand.folded is None and hand.board is not None
        line = hand.describe()
        if hand.their_card == hand.board:
            assert line.endswith(": they paired the board") and session.my_return() < 0, line
            reasons["theirs"] = line
        elif hand.my_card == hand.board:
            assert line.endswith(": you paired the board") and session.my_return() > 0, line
            reasons["mine"] = line
        elif hand.my_card == hand.their_card:
            assert line.endswith(": equal cards split the pot") and session.my_return() == 0, line
        else:
            won = session.my_return() > 0
            assert line.endswith(f": your {hand.my_card} beats their {hand.their_card}" if won
                                 else f": their {hand.their_card} beats your {hand.my_card}"), line
        if len(reasons) == 2:
            break
    assert set(reasons) == {"theirs", "mine"}
    # repeated Leduc says it on the hand's row
    session = PlaySession(get_game("repeated_leduc(num_hands=30)"), BotPolicy("always_call"), seat=0, seed=4)
    while not session.finished:
        session.play(1)
    details = {row.detail for row in rounds(session)}
    assert "showdown: they paired the board" in details or "showdown: you paired the board" in details, details


def _gate_moves(screen):
    """Hold the person's moves in the worker until the test opens the gate: keys typed meanwhile
    arrive while the opponent is answering, deterministically (no race with a fast bot)."""
    import threading

    gate = threading.Event()
    session = screen.session
    play = session.play

    def gated(action):
        gate.wait(10)
        play(action)

    session.play = gated
    return gate


async def test_throws_typed_while_the_bot_answers_are_all_played_in_order(tmp_path):
    """90 keys 0.12 s apart in rrps(100) registered 78: keys typed while the bot answered were dropped."""
    game = "rrps(num_repetitions=30)"
    live = FakeLive("live-rrps")
    screen = PlayScreen(Backend(tmp_path), game, DashboardData(game=game), live=live, new_seed=lambda: 5)
    app = ScreenApp(lambda: screen)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_until(pilot, lambda: screen.spec is not None, "the game to load")
        _pick(app, "bot:rotatebot")
        await wait_until(pilot, lambda: len(screen.query("#play-actions Button")) == 3, "the first throw")
        gate = _gate_moves(screen)
        keys = "".join(random.Random(1).choice("rps123") for _ in range(30))
        await pilot.press(*keys)  # the first is being played (held at the gate); the rest arrive meanwhile
        assert len(screen.typed) == 29
        gate.set()
        await wait_until(pilot, lambda: screen.session.finished, "all 30 throws")
        names = {"r": "Rock", "p": "Paper", "s": "Scissors", "1": "Rock", "2": "Paper", "3": "Scissors"}
        assert [m.action_name for m in screen.session.moves if m.who == "you"] == [names[k] for k in keys]
        assert not screen.typed
        await wait_until(pilot, lambda: len(live.records) >= 1, "the game recorded")
        await pilot.pause(0.3)
        # once: the worker of the second-to-last throw must not also see the game end (it did, and
        # the game was recorded twice, when the queued last throw ran while that worker still ran)
        assert len(live.records) == 1 and len(screen.match.games) == 1


async def test_a_digit_typed_ahead_is_not_played_when_the_moves_on_offer_changed(tmp_path):
    """In poker "1" may mean Check now and Fold after the bot's answer: such a key is dropped, and said so."""
    from tests.tui.helpers import notifications

    screen = PlayScreen(Backend(tmp_path), "leduc_poker", DashboardData(game="leduc_poker"), new_seed=lambda: 2)
    app = ScreenApp(lambda: screen)
    async with app.run_test(size=(160, 48)) as pilot:
        await wait_until(pilot, lambda: screen.spec is not None, "the game to load")
        _pick(app, "bot:always_call")
        await wait_until(pilot, lambda: len(screen.query("#play-actions Button")) == 2, "our turn")
        assert [label for _, label in screen.offered] == ["Check", "Bet 2"]
        gate = _gate_moves(screen)
        await pilot.press("2", "1")  # bet 2; then "1" meant Check in the offer on screen
        gate.set()
        await wait_until(pilot, lambda: screen.session.state.public_card() >= 0 and not screen.moving, "round 2")
        await pilot.pause()
        # round 2 offers Check / Bet 4: not the offer "1" was typed against, so it is not played
        assert [m.label for m in screen.session.moves] == ["Bet 2", "Call 2"]
        assert any("1 move typed while the opponent answered not played (1): the moves on offer changed" in n
                   for n in notifications(app)), notifications(app)
        assert not screen.typed


def test_what_the_opponent_saw_in_a_generic_game_is_its_view_not_raw_keys():
    """"What <opponent> saw and did" printed the observation's keys as raw data (info_state ...; legal_action_names ...)."""
    session = PlaySession(get_game("tic_tac_toe"), BotPolicy("uniform_random"), seat=0, seed=3)
    try:
        _play_out(session, random.Random(2))
    finally:
        session.close()
    decisions = opponent_decisions(session)
    assert decisions
    first = decisions[0]
    assert first.saw.startswith("saw ") and "could play " in first.saw, first.saw
    assert " │ " in first.saw  # the board's rows on one line, split where its lines were
    for raw in ("info_state", "legal_action_names", "legal_actions", "\n"):
        assert raw not in first.saw, first.saw


def test_a_generic_games_moves_are_named_for_the_player_who_makes_them():
    """tic-tac-toe's o moves were recorded as "x(0,2)": the game's list holds player 0's names."""
    session = PlaySession(get_game("tic_tac_toe"), BotPolicy("uniform_random"), seat=0, seed=3)
    try:
        _play_out(session, random.Random(2))
    finally:
        session.close()
    assert {m.label[0] for m in session.moves if m.who == "you"} == {"x"}
    assert {m.label[0] for m in session.moves if m.who != "you"} == {"o"}
    assert all(d.did.startswith("o(") for d in opponent_decisions(session))


async def test_the_status_line_keeps_the_recorded_count_whole_at_80_columns(tmp_path):
    """Liar's Dice at 80x24 offers more than nine bids: the keys' hint and "N recorded in the
    session" did not fit one line and the count was cut ("0 recorded in the")."""
    live = FakeLive("live-liars-dice")
    screen = PlayScreen(Backend(tmp_path), "liars_dice", DashboardData(game="liars_dice"), new_seed=lambda: 7, live=live)
    app = ScreenApp(lambda: screen)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_until(pilot, lambda: screen.spec is not None, "the game to load")
        _pick(app, "bot:uniform_random")
        await wait_until(pilot, lambda: screen.session is not None and len(screen.offered) > 9, "more than nine bids")
        await pilot.pause()
        status = app.screen.query_one("#play-status", Static)
        text = _text(app, "#play-status")
        assert "tab" in text and "0 recorded" in text
        assert len(text) <= status.size.width, text
