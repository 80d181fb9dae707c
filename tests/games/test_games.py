"""The games layer: registry, observation views, benchmark bots, CFR+ data.

Ground truth comes from OpenSpiel itself (state accessors, history, the
between-hands text of repeated Leduc, exploitability), never from the code
under test.
"""

from __future__ import annotations

import ctypes
import json
import pickle
import random
import re

import pyspiel
import pytest

from csro_tui.errors import UnknownGameError
from csro_tui.games import poker
from csro_tui.games.base import GameSpec, sample_action
from csro_tui.games.generic import GenericSpec
from csro_tui.games.registry import get_game, list_games
from csro_tui.games.repeated_leduc import CONTINUE, leduc_info_state
from csro_tui.games.rrps import DETERMINISTIC_BOTS, SEEDABLE_BOTS, throw_score
from tests.game_trees import decision_states

RANKS = "JQK"


# ---------------------------------------------------------------- registry


@pytest.mark.parametrize(
    "text, name, game_string",
    [
        ("rrps", "rrps", "repeated_game(stage_game=matrix_rps(),num_repetitions=1000)"),
        ("rrps(num_repetitions=100)", "rrps(num_repetitions=100)",
         "repeated_game(stage_game=matrix_rps(),num_repetitions=100)"),
        ("repeated_game(stage_game=matrix_rps(),num_repetitions=7)", "rrps(num_repetitions=7)",
         "repeated_game(stage_game=matrix_rps(),num_repetitions=7)"),
        ("kuhn_poker", "kuhn_poker", "kuhn_poker"),
        ("leduc_poker", "leduc_poker", "leduc_poker"),
        ("repeated_leduc", "repeated_leduc", "repeated_leduc_poker(num_hands=100)"),
        ("repeated_leduc(num_hands=10)", "repeated_leduc(num_hands=10)",
         "repeated_leduc_poker(num_hands=10)"),
        ("repeated_leduc_poker(num_hands=3)", "repeated_leduc(num_hands=3)",
         "repeated_leduc_poker(num_hands=3)"),
        (" rrps( num_repetitions = 5 ) ", "rrps(num_repetitions=5)",
         "repeated_game(stage_game=matrix_rps(),num_repetitions=5)"),
    ],
)
def test_builtin_names_and_parameters(text, name, game_string):
    spec = get_game(text)
    assert spec.name == name
    assert spec.game_string == game_string
    assert get_game(spec.name).name == spec.name  # sessions store the name
    loaded = spec.load()
    assert loaded is spec.load()  # cached
    assert str(loaded) == str(pyspiel.load_game(game_string))


def test_parameters_reach_openspiel_and_game_info():
    rrps = get_game("rrps(num_repetitions=100)")
    assert rrps.load().get_parameters()["num_repetitions"] == 100
    assert rrps.game_info()["params"] == {"num_repetitions": 100}
    assert "100 throws" in rrps.rules_text
    hands = get_game("repeated_leduc(num_hands=10)")
    assert hands.load().get_parameters()["num_hands"] == 10
    assert hands.game_info()["params"] == {"num_hands": 10}


def test_list_games_and_game_info():
    specs = list_games()
    assert [s.name for s in specs] == ["rrps", "kuhn_poker", "leduc_poker", "repeated_leduc", "liars_dice"]
    expected_names = {
        "rrps": ["Rock", "Paper", "Scissors"],
        "kuhn_poker": ["Pass", "Bet"],
        "leduc_poker": ["Fold", "Call", "Raise"],
        "repeated_leduc": ["Fold", "Call", "Raise", "Continue"],
        "liars_dice": [f"{q}-{f}" for q in (1, 2) for f in range(1, 7)] + ["Liar"],
    }
    for spec in specs:
        info = spec.game_info()
        json.dumps(info)
        assert set(info) == {"name", "num_players", "num_actions", "action_names", "rules", "params"}
        assert info["num_players"] == 2
        assert info["action_names"] == expected_names[spec.name]
        assert info["num_actions"] == spec.load().num_distinct_actions() == len(info["action_names"])
        assert info["rules"] == spec.rules_text and spec.rules_text.strip()
        assert "legal_actions" in spec.observation_text
        assert spec.benchmark_weighting == "uniform"
    assert [s.exact for s in specs] == [False, True, True, False, False]
    assert [s.default_episodes for s in specs] == [20, 2000, 2000, 20, 1000]


@pytest.mark.parametrize("text", ["tic_tac_toe", "matrix_rps", "goofspiel(num_cards=4)", "goofspiel(num_cards=4,imp_info=true)"])
def test_generic_games_load_and_round_trip(text):
    spec = get_game(text)
    assert isinstance(spec, GenericSpec)
    assert spec.name == text and get_game(spec.name).name == text
    assert spec.exact is False
    assert [b.name for b in spec.benchmark()] == ["uniform_random"]
    assert sorted(spec.seed_policies()) == ["first_legal", "uniform_random"]
    info = spec.game_info()
    json.dumps(info)
    assert len(info["action_names"]) == info["num_actions"] == spec.load().num_distinct_actions()
    assert text in spec.rules_text


@pytest.mark.parametrize(
    "text, fragment",
    [
        ("kuhn", "kuhn_poker"),  # close names are suggested
        ("tictactoe", "tic_tac_toe"),
        ("nosuchgame", "built-in games: rrps, kuhn_poker"),
        ("hearts", "4-player"),
        ("kuhn_poker(players=3)", "no parameters"),
        ("rrps(num_repetitions=0)", "positive integer"),
        ("rrps(num_repetitions=abc)", "positive integer"),
        ("rrps(turns=3)", "num_repetitions"),
        ("repeated_leduc(num_hands=-2)", "positive integer"),
        ("goofspiel(num_cardz=4)", "num_cardz"),
        ("matrix_pd", "general-sum"),
        ("rrps(", "cannot read"),
        ("", "no game given"),
    ],
)
def test_bad_game_strings_raise_one_line_errors(text, fragment, capfd):
    with pytest.raises(UnknownGameError) as caught:
        get_game(text)
    message = str(caught.value)
    assert fragment in message
    assert "\n" not in message
    # pyspiel prints its own "OpenSpiel exception" to stderr; it must not leak.
    assert "OpenSpiel exception" not in capfd.readouterr().err


def test_specs_pickle_by_name():
    for text in ["rrps(num_repetitions=30)", "leduc_poker", "goofspiel(num_cards=4)"]:
        spec = get_game(text)
        clone = pickle.loads(pickle.dumps(spec))
        assert isinstance(clone, GameSpec) and clone.name == spec.name


# ---------------------------------------------------------------- RRPS


def test_rrps_view_matches_play_and_grows_in_place():
    spec = get_game("rrps(num_repetitions=60)")
    state = spec.load().new_initial_state()
    views = [spec.new_view(0), spec.new_view(1)]
    first = [views[p].observe(state) for p in (0, 1)]
    assert first[0] == {"round": 0, "my_moves": [], "opp_moves": [], "my_score": 0, "legal_actions": [0, 1, 2]}
    lists = [(obs["my_moves"], obs["opp_moves"]) for obs in first]
    rng = random.Random(4)
    throws = 0
    while not state.is_terminal():
        state.apply_actions([rng.randrange(3), rng.randrange(3)])
        throws += 1
        if state.is_terminal():
            break
        history = state.history()
        for p in (0, 1):
            obs = views[p].observe(state)
            json.dumps(obs)
            assert obs["round"] == throws
            assert obs["my_moves"] == history[p::2]
            assert obs["opp_moves"] == history[1 - p::2]
            assert obs["my_score"] == state.returns()[p]
            assert obs["my_moves"] is lists[p][0] and obs["opp_moves"] is lists[p][1]
    assert throws == 60


def test_rrps_view_catches_up_after_skipped_throws():
    spec = get_game("rrps(num_repetitions=40)")
    state = spec.load().new_initial_state()
    view = spec.new_view(1)
    rng = random.Random(9)
    for throw in range(1, 40):
        state.apply_actions([rng.randrange(3), rng.randrange(3)])
        if throw % 7 == 0:
            obs = view.observe(state)
            assert obs["my_moves"] == state.history()[1::2]
            assert obs["opp_moves"] == state.history()[0::2]
            assert obs["my_score"] == state.returns()[1]


def test_throw_score():
    assert [throw_score(m, o) for m, o in [(1, 0), (2, 1), (0, 2), (0, 1), (1, 1)]] == [1, 1, 1, -1, 0]


def rrps_bot_moves(spec, bot, seed, opponent_moves, player=0):
    agent = bot.make(player, seed)
    state = spec.load().new_initial_state()
    moves = []
    for opponent in opponent_moves:
        move = agent.step(state)
        assert move in state.legal_actions(player)
        moves.append(move)
        joint = [move, opponent] if player == 0 else [opponent, move]
        state.apply_actions(joint)
    return moves


def test_rrps_benchmark_is_the_43_competition_bots():
    spec = get_game("rrps")
    names = [bot.name for bot in spec.benchmark()]
    assert names == sorted(pyspiel.roshambo_bot_names()) and len(names) == 43
    assert all(bot.tabular_policy(spec.load()) is None for bot in spec.benchmark())


def test_every_rrps_bot_plays_legal_moves_in_short_matches_both_seats():
    # 25 throws also covers greenberg below its 1000-throw table (see rrps.py).
    spec = get_game("rrps(num_repetitions=25)")
    rng = random.Random(1)
    opponent = [rng.randrange(3) for _ in range(25)]
    for bot in spec.benchmark():
        for player in (0, 1):
            agent = bot.make(player, 3)
            assert agent.action_probabilities(spec.load().new_initial_state()) is None
            assert len(rrps_bot_moves(spec, bot, 3, opponent, player)) == 25


@pytest.mark.skipif(not SEEDABLE_BOTS, reason="C library without initstate/setstate")
def test_rrps_bots_are_deterministic_given_the_seed_as_documented():
    spec = get_game("rrps(num_repetitions=300)")
    rng = random.Random(2)
    # Some bots draw random numbers only on ties, which a cycling opponent
    # provokes; a random opponent provokes the others.
    opponents = [[rng.randrange(3) for _ in range(300)], [t % 3 for t in range(300)]]
    for bot in spec.benchmark():
        seed_matters = False
        for opponent in opponents:
            first = rrps_bot_moves(spec, bot, 11, opponent)
            assert rrps_bot_moves(spec, bot, 11, opponent) == first, bot.name
            seed_matters |= any(rrps_bot_moves(spec, bot, s, opponent) != first for s in (12, 13))
        assert seed_matters == (bot.name not in DETERMINISTIC_BOTS), bot.name


@pytest.mark.skipif(not SEEDABLE_BOTS, reason="C library without initstate/setstate")
def test_rrps_bot_randomness_is_private_to_each_agent():
    # Episodes run in lockstep: agents' random() draws interleave, and other
    # code may call random() too.  Each agent must still replay its seed.
    spec = get_game("rrps(num_repetitions=200)")
    randbot = spec.benchmark_bot("randbot")
    opponent = [0] * 200
    alone = rrps_bot_moves(spec, randbot, 5, opponent)
    libc = ctypes.CDLL(None)
    agents = [randbot.make(0, 5), randbot.make(0, 6), randbot.make(0, 5)]
    states = [spec.load().new_initial_state() for _ in agents]
    moves = [[], [], []]
    for _ in range(200):
        for index in (2, 1, 0):
            move = agents[index].step(states[index])
            moves[index].append(move)
            states[index].apply_actions([move, 0])
        libc.random()
    assert moves[0] == moves[2] == alone
    assert moves[1] != alone


# ---------------------------------------------------------------- Kuhn / Leduc views


def test_kuhn_view_is_a_function_of_the_information_state():
    spec = get_game("kuhn_poker")
    by_info_state: dict[tuple[int, str], dict] = {}
    count = 0
    for state in decision_states(spec.load()):
        player = state.current_player()
        obs = spec.new_view(player).observe(state)
        json.dumps(obs)
        key = (player, state.information_state_string(player))
        assert by_info_state.setdefault(key, obs) == obs
        count += 1
        # Against OpenSpiel: own card is the player's deal, pot from the moves.
        history = state.history()
        moves = history[2:]
        assert obs["card"] == RANKS[history[player]]
        assert obs["betting"] == [["Pass" if m == 0 else "Bet" for m in moves]]
        assert obs["pot"] == 2 + sum(moves)
        assert obs["my_contribution"] + obs["opp_contribution"] == obs["pot"]
        assert obs["to_call"] == (1 if moves and moves[-1] == 1 else 0)
        assert obs["legal_actions"] == state.legal_actions()
    assert len(by_info_state) == 12 and count == 24  # each info set: 2 opponent cards


def test_leduc_view_is_a_function_of_the_information_state():
    spec = get_game("leduc_poker")
    by_info_state: dict[tuple[int, str], dict] = {}
    opponent_cards: dict[tuple[int, str], set[int]] = {}
    for state in decision_states(spec.load()):
        player = state.current_player()
        obs = spec.new_view(player).observe(state)
        key = (player, state.information_state_string(player))
        assert by_info_state.setdefault(key, obs) == obs
        opponent_cards.setdefault(key, set()).add(state.private_card(1 - player))
        # Against OpenSpiel's own accessors for this state.
        public = state.public_card()
        assert obs["card"] == RANKS[state.private_card(player) // 2]
        assert obs["public_card"] == (RANKS[public // 2] if public >= 0 else None)
        assert obs["round"] == (1 if public < 0 else 2)
        rounds = [state.round1()] + ([state.round2()] if public >= 0 else [])
        assert obs["betting"] == [[["Fold", "Call", "Raise"][a] for a in r] for r in rounds]
        assert obs["pot"] == state.pot()
        assert obs["my_contribution"] == 100 - state.money()[player]
        assert obs["opp_contribution"] == 100 - state.money()[1 - player]
        assert obs["legal_actions"] == state.legal_actions()
    assert len(by_info_state) == 936
    # The same observation is shown whatever the opponent holds.
    assert all(len(cards) >= 2 for cards in opponent_cards.values())
    json.dumps(list(by_info_state.values()))


# ---------------------------------------------------------------- tabular bots


@pytest.mark.parametrize("game_name, limit", [("kuhn_poker", 0.001), ("leduc_poker", 0.01)])
def test_cached_cfr_plus_covers_every_information_state_and_is_near_nash(game_name, limit):
    game = pyspiel.load_game(game_name)
    table = poker.cfr_plus_table(game_name)
    legal_by_info_state = {
        state.information_state_string(state.current_player()): state.legal_actions()
        for state in decision_states(game)
    }
    assert set(table) == set(legal_by_info_state)
    for info_state, row in table.items():
        assert sorted(row) == legal_by_info_state[info_state]
        assert abs(sum(row.values()) - 1) < 1e-9 and min(row.values()) >= 0
    document = poker.cfr_plus_document(game_name)
    assert document["iterations"] == 10_000
    policy = pyspiel.TabularPolicy({k: list(v.items()) for k, v in table.items()})
    exploitability = pyspiel.exploitability(game, policy)
    print(f"{game_name} cached CFR+ exploitability: {exploitability:.3g}")
    assert 0 <= exploitability < limit


@pytest.mark.parametrize("game_name", ["kuhn_poker", "leduc_poker"])
def test_benchmark_bots_agree_with_their_tabular_policies(game_name):
    spec = get_game(game_name)
    bots = spec.benchmark()
    assert [b.name for b in bots] == ["cfr_plus", "always_call", "always_fold", "uniform_random"]
    tables = {bot.name: bot.tabular_policy(spec.load()) for bot in bots}
    agents = {bot.name: [bot.make(0, 1), bot.make(1, 1)] for bot in bots}
    cfr = poker.cfr_plus_table(game_name)
    for index, state in enumerate(decision_states(spec.load())):
        if index % 7:  # a spread sample keeps Leduc fast
            continue
        player = state.current_player()
        info_state = state.information_state_string(player)
        for name, table in tables.items():
            from_agent = agents[name][player].action_probabilities(state)
            from_table = table.action_probabilities(state, player)
            assert {a: p for a, p in from_table.items() if p > 0} == pytest.approx(from_agent)
        assert agents["cfr_plus"][player].action_probabilities(state) == cfr[info_state]


def facing_bet(game_name: str, state) -> bool:
    if game_name == "kuhn_poker":
        return state.history()[-1] == 1 and len(state.history()) > 2
    return 0 in state.legal_actions()  # Leduc: Fold is legal only facing a bet


@pytest.mark.parametrize("game_name", ["kuhn_poker", "leduc_poker"])
def test_always_call_and_always_fold_behave(game_name):
    spec = get_game(game_name)
    call_bot, fold_bot = spec.benchmark_bot("always_call"), spec.benchmark_bot("always_fold")
    call_actions = {"kuhn_poker": (0, 1), "leduc_poker": (1, 1)}[game_name]  # (check, call)
    for state in decision_states(spec.load()):
        player = state.current_player()
        facing = facing_bet(game_name, state)
        call = call_bot.make(player, 0)
        fold = fold_bot.make(player, 0)
        assert call.action_probabilities(state) == {call_actions[facing]: 1.0}
        assert call.step(state) == call_actions[facing]
        # Folding is Pass in Kuhn and Fold in Leduc; with no bet, check.
        expected_fold = 0 if facing else call_actions[0]
        assert fold.step(state) == expected_fold
        assert fold.action_probabilities(state) == {expected_fold: 1.0}


def test_tabular_agents_sample_their_distribution_reproducibly():
    spec = get_game("kuhn_poker")
    state = spec.load().new_initial_state()
    state.apply_action(2)  # player 0 holds K; CFR+ bets K about 2/3 of the time
    state.apply_action(0)
    bot = spec.benchmark_bot("cfr_plus")
    probability_bet = bot.make(0, 0).action_probabilities(state)[1]
    draws = [bot.make(0, 7).step(state) for _ in range(3)]
    assert len(set(draws)) == 1  # a fresh agent with the same seed repeats itself
    agent = bot.make(0, 7)
    steps = [agent.step(state) for _ in range(4000)]
    assert abs(sum(steps) / len(steps) - probability_bet) < 0.03


def test_sample_action_follows_the_distribution():
    rng = random.Random(3)
    counts = [0, 0, 0]
    for _ in range(6000):
        counts[sample_action({0: 0.5, 2: 0.5, 1: 0.0}, rng)] += 1
    assert counts[1] == 0 and abs(counts[0] - 3000) < 250


# ---------------------------------------------------------------- repeated Leduc

_CARDS = re.compile(r"Cards \(public player_0 player_1\): (-?\d+) (-?\d+) (-?\d+)")
_MONEY = re.compile(r"Money \(player_0 player_1\): (\d+) (\d+)")


def opening_truth(text: str) -> dict:
    """One finished hand, read from OpenSpiel's between-hands text."""
    public, card0, card1 = (int(x) for x in _CARDS.search(text).groups())
    money = [int(x) for x in _MONEY.search(text).groups()]
    sequences = re.findall(r"Round \d sequence: ([^\n]*)", text)
    return {
        "public": public, "cards": (card0, card1), "money": money,
        "folded": any("Fold" in s for s in sequences),
    }


def play_repeated_leduc(spec, agents, seed):
    """Plays one match; observes only where a player must act.

    Returns the views, the ground truth of each finished hand, and the
    observations collected (player, obs copy).
    """
    rng = random.Random(seed)
    state = spec.load().new_initial_state()
    views = [spec.new_view(0), spec.new_view(1)]
    truths: list[dict] = []
    observed: list[tuple[int, dict]] = []
    while not state.is_terminal():
        if state.is_chance_node():
            state.apply_action(rng.choice([a for a, _ in state.chance_outcomes()]))
            continue
        auto = spec.auto_action(state)
        if auto is not None:
            assert auto == CONTINUE and state.legal_actions() == [CONTINUE]
            if state.current_player() == 0:  # first Continue of this break
                truths.append(opening_truth(str(state)))
            state.apply_action(auto)
            continue
        player = state.current_player()
        assert CONTINUE not in state.legal_actions()
        obs = views[player].observe(state)
        observed.append((player, json.loads(json.dumps(obs))))
        state.apply_action(agents[player].step(state))
    return state, views, truths, observed


@pytest.mark.parametrize("pairing", [("cfr_plus", "always_fold"), ("cfr_plus", "cfr_plus")])
def test_repeated_leduc_history_hides_folded_cards_and_sums_to_returns(pairing):
    spec = get_game("repeated_leduc(num_hands=30)")
    bots = [spec.benchmark_bot(name) for name in pairing]
    agents = [bots[0].make(0, 1), bots[1].make(1, 2)]
    state, views, truths, observed = play_repeated_leduc(spec, agents, seed=5)
    assert len(truths) == 30
    showdowns = folds = 0
    for player in (0, 1):
        final = views[player].observe(state)  # at the end, every hand is in
        history = final["history"]
        assert [h["hand"] for h in history] == list(range(30))
        assert sum(h["my_result"] for h in history) == state.returns()[player] == final["my_total"]
        for hand, truth in zip(history, truths):
            assert hand["my_result"] == truth["money"][player] - 100
            assert hand["my_card"] == RANKS[truth["cards"][player] // 2]
            assert hand["public_card"] == (RANKS[truth["public"] // 2] if truth["public"] >= 0 else None)
            assert hand["showdown"] is (not truth["folded"])
            if truth["folded"]:
                folds += 1
                assert hand["opp_card"] is None  # OpenSpiel's text shows it; we must not
                assert hand["folded"] in ("me", "opponent")
                assert (hand["folded"] == "me") == (hand["my_result"] < 0)
            else:
                showdowns += 1
                assert hand["opp_card"] == RANKS[truth["cards"][1 - player] // 2]
                assert hand["folded"] is None
    assert showdowns and folds  # both kinds of hand were checked
    # While playing, each observation of hand k already listed hands 0..k-1.
    for player, obs in observed:
        assert len(obs["history"]) == obs["hand"]
        assert obs["my_total"] == sum(h["my_result"] for h in obs["history"])
        assert all(h["opp_card"] is None for h in obs["history"] if not h["showdown"])


def test_repeated_leduc_hand_view_equals_leduc_and_history_grows_in_place():
    spec = get_game("repeated_leduc(num_hands=12)")
    leduc_keys = set(poker.cfr_plus_table("leduc_poker"))
    rng = random.Random(8)
    state = spec.load().new_initial_state()
    view = spec.new_view(1)
    history_list = None
    while not state.is_terminal():
        if state.is_chance_node():
            state.apply_action(rng.choice([a for a, _ in state.chance_outcomes()]))
            continue
        if spec.auto_action(state) is not None:
            state.apply_action(CONTINUE)
            continue
        player = state.current_player()
        repeated = state.information_state_string(player)
        assert re.match(r"Hand \d+\n", repeated)
        assert leduc_info_state(repeated) in leduc_keys  # maps onto real Leduc
        if player == 1:
            obs = view.observe(state)
            expected = poker.leduc_observation(leduc_info_state(repeated), 1, state.legal_actions())
            assert {k: obs[k] for k in expected} == expected
            history_list = history_list if history_list is not None else obs["history"]
            assert obs["history"] is history_list
        state.apply_action(rng.choice(state.legal_actions()))
    assert len(history_list) == 11  # hands finished before the last decision


def test_repeated_leduc_auto_action_only_between_hands():
    spec = get_game("repeated_leduc(num_hands=2)")
    state = spec.load().new_initial_state()
    assert spec.auto_action(state) is None  # chance node
    for action in (0, 3, 1, 1):  # deal J, Q; call, call
        state.apply_action(action)
    assert spec.auto_action(state) is None  # public card to deal
    for action in (5, 1, 1):  # public K; check, check -> hand over
        state.apply_action(action)
    assert spec.auto_action(state) == CONTINUE
    bot = spec.benchmark_bot("cfr_plus").make(0, 0)
    assert bot.step(state) == CONTINUE and bot.action_probabilities(state) == {CONTINUE: 1.0}


def test_repeated_leduc_benchmark():
    spec = get_game("repeated_leduc")
    assert [b.name for b in spec.benchmark()] == ["cfr_plus", "always_call", "always_fold"]
    assert all(b.tabular_policy(spec.load()) is None for b in spec.benchmark())


# ---------------------------------------------------------------- generic


@pytest.mark.parametrize("text", ["tic_tac_toe", "matrix_rps", "goofspiel(num_cards=4)", "liars_dice_ir"])
def test_generic_view_and_uniform_bot(text):
    spec = get_game(text)
    game = spec.load()
    game_type = game.get_type()
    bot = spec.benchmark_bot("uniform_random")
    rng = random.Random(0)
    for episode in range(3):
        state = game.new_initial_state()
        views = [spec.new_view(0), spec.new_view(1)]
        agents = [bot.make(0, episode), bot.make(1, episode)]
        while not state.is_terminal():
            if state.is_chance_node():
                state.apply_action(rng.choice([a for a, _ in state.chance_outcomes()]))
                continue
            players = [0, 1] if state.is_simultaneous_node() else [state.current_player()]
            joint = []
            for player in players:
                obs = views[player].observe(state)
                json.dumps(obs)
                legal = state.legal_actions(player)
                assert obs["legal_actions"] == legal
                assert obs["legal_action_names"] == [state.action_to_string(player, a) for a in legal]
                if game_type.provides_information_state_string:
                    assert obs["info_state"] == state.information_state_string(player)
                else:
                    assert obs["info_state"] is None
                if game_type.provides_observation_string:
                    assert obs["observation"] == state.observation_string(player)
                assert agents[player].action_probabilities(state) == pytest.approx(
                    {a: 1 / len(legal) for a in legal}
                )
                action = agents[player].step(state)
                assert action in legal
                joint.append(action)
            if state.is_simultaneous_node():
                state.apply_actions(joint)
            else:
                state.apply_action(joint[0])
