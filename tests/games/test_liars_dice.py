"""Liar's Dice, the built-in game added through games/ only: registry, view, bots, play."""

from __future__ import annotations

import json
import random

import pytest

from csro_tui.errors import UnknownGameError
from csro_tui.evaluation.participants import BotPolicy, CodePolicy
from csro_tui.games import liars_dice
from csro_tui.games.base import sample_action
from csro_tui.games.registry import get_game, list_games
from csro_tui.play import PlaySession, opponent_decisions, showdown, table
from tests.game_trees import decision_states as tree_states


def decision_states(game, limit=None):
    """(acting player, state) at every decision of a small game (the first `limit`)."""
    for count, state in enumerate(tree_states(game)):
        if limit is not None and count >= limit:
            return
        yield state.current_player(), state


def test_registry_names_and_parameters_round_trip():
    spec = get_game("liars_dice")
    assert spec.name == "liars_dice" and get_game(spec.name) is spec
    assert "liars_dice" in [g.name for g in list_games()]
    small = get_game("liars_dice(dice_sides=4)")
    assert small.name == "liars_dice(dice_sides=4)" and get_game(small.name).name == small.name
    assert small.load().num_distinct_actions() == 9 and small.action_names()[-1] == "Liar"
    assert spec.action_names() == [spec.load().new_initial_state().action_to_string(0, a) for a in range(12)] + ["Liar"]
    with pytest.raises(UnknownGameError, match="dice_sides must be an integer from 2 to 9"):
        get_game("liars_dice(dice_sides=12)")
    with pytest.raises(UnknownGameError, match="unknown parameter"):
        get_game("liars_dice(players=3)")


def test_the_observation_is_the_players_own_dice_and_the_bids_never_the_opponents_dice():
    spec = get_game("liars_dice(numdice=2,dice_sides=2)")
    game = spec.load()
    seen_by_info_state: dict[tuple[int, str], dict] = {}
    for player, state in decision_states(game):
        obs = spec.new_view(player).observe(state)
        json.dumps(obs)
        assert obs["legal_actions"] == state.legal_actions(player)
        history = state.history()
        dice = [sorted(a + 1 for a in history[:2]), sorted(a + 1 for a in history[2:4])]
        assert obs["my_dice"] == dice[player]
        names = [state.action_to_string(player, a) for a in history[4:]]
        assert [f"{q}-{f}" for q, f in obs["bids"]] == names
        assert obs["last_bid"] == (obs["bids"][-1] if obs["bids"] else None)
        assert obs["liar"] == 8 and obs["total_dice"] == 4 and obs["dice_sides"] == 2
        # a function of the information state: the opponent's dice change nothing
        key = (player, state.information_state_string(player))
        assert seen_by_info_state.setdefault(key, obs) == obs


def test_bid_helpers_match_openspiel():
    game = get_game("liars_dice").load()
    state = game.new_initial_state()
    for action in range(12):
        quantity, face = liars_dice.bid_of(action, 6)
        assert state.action_to_string(0, action) == f"{quantity}-{face}"
        assert liars_dice.bid_action(quantity, face, 6) == action
    # the highest face is wild: P(at least two 3s | I hold a 6, one unseen die) = P(it shows 3 or 6)
    assert liars_dice.bid_holds_probability([6], 1, 2, 3, 6) == pytest.approx(2 / 6)
    assert liars_dice.bid_holds_probability([6], 1, 2, 6, 6) == pytest.approx(1 / 6)
    assert liars_dice.bid_holds_probability([2], 1, 1, 2, 6) == 1.0


def exact_value(spec, bot: str, against: str) -> float:
    """`bot`'s expected return against `against`, averaged over seats: the whole tree, every
    deal, each bot's own action probabilities (all of them are functions of the information state)."""
    game = spec.load()
    total = 0.0
    for seat in (0, 1):
        agents = [None, None]
        agents[seat] = spec.benchmark_bot(bot).make(seat, 0)
        agents[1 - seat] = spec.benchmark_bot(against).make(1 - seat, 0)

        def walk(state, reach: float) -> float:
            if state.is_terminal():
                return reach * state.returns()[seat]
            if state.is_chance_node():
                return sum(walk(state.child(a), reach * p) for a, p in state.chance_outcomes())
            distribution = agents[state.current_player()].action_probabilities(state)
            return sum(walk(state.child(a), reach * p) for a, p in distribution.items() if p > 0)

        total += walk(game.new_initial_state(), 1.0)
    return total / 2


def test_benchmark_bots_rank_as_described():
    spec = get_game("liars_dice")
    assert [b.name for b in spec.benchmark()] == ["cfr_plus", "honest", "caller", "uniform_random"]
    # near-Nash: nobody beats it by more than its exploitability (0.001; stored in the data file)
    for other in ("honest", "caller", "uniform_random"):
        assert exact_value(spec, "cfr_plus", other) > -0.002, other
    assert exact_value(spec, "cfr_plus", "uniform_random") > 0.6
    assert exact_value(spec, "honest", "uniform_random") > 0.6
    assert exact_value(spec, "caller", "uniform_random") > 0.5
    assert exact_value(spec, "honest", "caller") > 0.4  # calling every bid loses to bids that are true
    # other sizes have no cached solve: rule bots only
    assert [b.name for b in get_game("liars_dice(dice_sides=4)").benchmark()] == ["honest", "caller", "uniform_random"]


def test_the_cached_cfr_policy_has_every_state_it_reaches_itself():
    """The data file keeps only the states CFR+ reaches by its own bids; against any opponent
    (uniform random reaches everything) its play never leaves them."""
    from csro_tui.games.poker import cfr_plus_document, cfr_plus_table

    document = cfr_plus_document("liars_dice")
    assert document["stored_exploitability"] < 0.01
    known = cfr_plus_table("liars_dice")
    spec = get_game("liars_dice")
    rng = random.Random(3)
    for episode in range(400):
        seat = episode % 2
        agents = [None, None]
        agents[seat] = spec.benchmark_bot("cfr_plus").make(seat, episode)
        agents[1 - seat] = spec.benchmark_bot("uniform_random").make(1 - seat, episode)
        state = spec.load().new_initial_state()
        while not state.is_terminal():
            if state.is_chance_node():
                state.apply_action(sample_action(dict(state.chance_outcomes()), rng))
                continue
            if state.current_player() == seat:
                assert state.information_state_string(seat) in known
            state.apply_action(agents[state.current_player()].step(state))


def test_seeds_play_legally_and_honest_beats_uniform():
    from tests.seed_policies import load_policy

    spec = get_game("liars_dice")
    assert set(spec.seed_policies()) == {"honest", "bluffer", "uniform"}
    game = spec.load()
    for name, source in spec.seed_policies().items():
        for player in (0, 1):
            policy = load_policy(source, spec, player, seed=5)
            for seat, state in decision_states(game, limit=3000):
                if seat != player:
                    continue
                answer = policy.act(spec.new_view(player).observe(state))
                legal = state.legal_actions(player)
                assert (set(answer) <= set(legal)) if isinstance(answer, dict) else answer in legal, (name, answer)


def test_the_example_policy_for_prompts_plays_legally():
    from csro_tui.oracles.llm.prompts import PromptLibrary
    from tests.seed_policies import load_policy

    spec = get_game("liars_dice")
    source = PromptLibrary().example_policy(spec)
    assert 'obs["my_dice"]' in source  # this game's example, not the generic one
    for player in (0, 1):
        policy = load_policy(source, spec, player, seed=1)
        for seat, state in decision_states(spec.load(), limit=3000):
            if seat == player:
                assert policy.act(spec.new_view(player).observe(state)) in state.legal_actions(player)


# ---------------------------------------------------------------------- play


def test_play_names_bids_in_words_and_the_showdown_says_what_decided_it():
    spec = get_game("liars_dice")
    for seed in range(1):
        session = PlaySession(spec, BotPolicy("caller"), seat=0, seed=seed)
        assert dict(table(session))["Bids"] == "none yet"
        labels = [label for _, label in session.legal_actions()]
        assert labels[:2] == ["Bid one 1", "Bid one 2"] and "Call liar" not in labels
        session.play(0)  # one 1
        if session.finished:  # caller calls any bid
            hand = showdown(session)
            dice = spec.dice_of(session.state)
            ones = sum(1 for d in dice[0] + dice[1] if d in (1, 6))
            held = ones >= 1
            assert hand.reason == (f"you bid one 1, they called liar; {ones} matched (6s wild): "
                                   + ("it held" if held else "it did not hold"))
            assert (session.my_return() > 0) == held
            assert hand.describe().startswith(f"showdown: you {dice[0][0]}, they {dice[1][0]}: ")
            decision = opponent_decisions(session)[0]
            assert decision.saw == f"rolled {dice[1][0]}, bids so far: you one 1" and decision.did == "Call liar"
            return
    pytest.fail("caller did not call an opening 'one 1'")


def test_a_code_policy_plays_liars_dice_in_its_sandbox():
    spec = get_game("liars_dice")
    session = PlaySession(spec, CodePolicy("honest", spec.seed_policies()["honest"]), seat=1, seed=4)
    try:
        assert [m.label for m in session.moves][0].startswith("Bid ")  # it opened
        assert dict(table(session))["Last bid"].endswith("given your dice")
        while not session.finished:
            session.play(session.legal_actions()[-1][0])  # call liar as soon as a bid stands
    finally:
        session.close()
    assert session.moves[-1].label == "Call liar" and session.moves[-1].who == "you"
    assert session.record()["transcript"][0]["obs"]["my_dice"]  # what the policy saw is recorded


def test_a_run_previews_liars_dice_with_the_games_own_episode_count_unless_told_otherwise():
    """A 10-episode preview of a +-1 game rejected honest's real +0.3 against bluffer as noise."""
    from csro_tui.config import RunConfig
    from csro_tui.engine.loop import Engine
    from csro_tui.reviewers import AutoReviewer
    from tests.fakes import ToyEvaluator, best_member_solve, climbing_oracle

    def gate_preview(game: str, **config) -> int:
        engine = Engine(config=RunConfig(game=game, oracle="scripted", **config), spec=get_game(game),
                        oracle=climbing_oracle(), reviewer=AutoReviewer(), evaluator=ToyEvaluator(),
                        meta_solve=best_member_solve, seed_sources={}, versions={"csro_tui": "test"})
        return engine.gate.preview_episodes(engine.gate.settings.smoke_episodes)

    assert get_game("liars_dice").preview_episodes == 200
    assert gate_preview("liars_dice") == 200
    assert gate_preview("liars_dice", preview_episodes=30) == 30  # the run's setting wins
    assert gate_preview("rrps") == 10  # games that declare nothing keep the gate's default
