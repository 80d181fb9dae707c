"""Hand-written seed policies: they satisfy the policy contract and play sensibly.

The seeds are our own trusted code, so the logic tests run them in-process
(a few lines below stand in for the referee); the static checks parse them
with `ast` only, and when the sandbox (`csro_tui.sandbox.sandbox`) is
available every seed is also loaded and asked through a real `PolicyHost`.
"""

from __future__ import annotations

import ast
import json
import random

import pytest

from csro_tui.games.base import sample_action
from csro_tui.games.registry import get_game
from csro_tui.sandbox.contract import ALLOWED_IMPORTS, POLICY_CLASS_NAME
from tests.game_trees import decision_states
from tests.seed_policies import load_policy

EXPECTED_SEEDS = {
    "rrps": {"constant_rock", "cycle", "uniform_random", "beat_last", "frequency_counter", "markov_predictor"},
    "kuhn_poker": {"card_rules", "always_bet", "uniform"},
    "leduc_poker": {"card_rules", "always_call", "uniform"},
    "repeated_leduc": {"card_rules", "fold_exploiter"},
    "liars_dice": {"honest", "bluffer", "uniform"},
    "tic_tac_toe": {"uniform_random", "first_legal"},
}
FORBIDDEN_CALLS = {"exec", "eval", "compile", "open", "__import__", "globals", "locals", "getattr", "setattr", "vars"}


def all_seeds():
    for game_name in EXPECTED_SEEDS:
        for seed_name, source in get_game(game_name).seed_policies().items():
            yield pytest.param(game_name, seed_name, source, id=f"{game_name}/{seed_name}")


def test_each_game_has_its_documented_seeds():
    for game_name, expected in EXPECTED_SEEDS.items():
        assert set(get_game(game_name).seed_policies()) == expected, game_name


@pytest.mark.parametrize("game_name, seed_name, source", list(all_seeds()))
def test_seed_source_meets_the_contract_statically(game_name, seed_name, source):
    tree = ast.parse(source)
    docstring = ast.get_docstring(tree)
    assert docstring and "hand-written" in docstring and "not LLM-generated" in docstring
    classes = {node.name: node for node in tree.body if isinstance(node, ast.ClassDef)}
    assert POLICY_CLASS_NAME in classes
    methods = {
        node.name: [a.arg for a in node.args.args]
        for node in classes[POLICY_CLASS_NAME].body
        if isinstance(node, ast.FunctionDef)
    }
    assert methods["__init__"] == ["self", "player", "game"]
    assert methods["act"] == ["self", "obs"]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            assert all(alias.name.split(".")[0] in ALLOWED_IMPORTS for alias in node.names)
        if isinstance(node, ast.ImportFrom):
            assert node.module.split(".")[0] in ALLOWED_IMPORTS
        if isinstance(node, ast.Name):
            assert node.id not in FORBIDDEN_CALLS
        if isinstance(node, ast.Attribute):
            assert not node.attr.startswith("__")
        # Randomness only from random.Random(game["seed"]), never the module's.
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "random":
            assert node.attr == "Random"
    if "random" in source:
        assert 'random.Random(game["seed"])' in source or "import random" not in source


@pytest.mark.parametrize("game_name, seed_name, source", list(all_seeds()))
def test_seed_passes_static_validation(game_name, seed_name, source):
    validation = pytest.importorskip("csro_tui.sandbox.validation")
    assert validation.validate_source(source) == []


# ---------------------------------------------------------------- in-process play


def check_answer(answer, legal: list[int]) -> dict[int, float]:
    """The contract's answer rules; returns the answer as a distribution."""
    if isinstance(answer, dict):
        assert set(answer) <= set(legal) and answer
        assert all(p >= 0 for p in answer.values())
        assert sum(answer.values()) == pytest.approx(1.0)
        return answer
    assert isinstance(answer, int) and answer in legal
    return {answer: 1.0}


def play(spec, players, seed: int = 0):
    """One episode; `players[p]` is a seed policy (with a view) or a bot agent.

    Returns the players' returns.
    """
    rng = random.Random(seed)
    game = spec.load()
    state = game.new_initial_state()
    views = [spec.new_view(0), spec.new_view(1)]
    while not state.is_terminal():
        if state.is_chance_node():
            state.apply_action(rng.choice([a for a, _ in state.chance_outcomes()]))
            continue
        auto = spec.auto_action(state)
        if auto is not None:
            state.apply_action(auto)
            continue
        seats = [0, 1] if state.is_simultaneous_node() else [state.current_player()]
        joint = []
        for seat in seats:
            actor = players[seat]
            legal = state.legal_actions(seat)
            if hasattr(actor, "act"):
                obs = json.loads(json.dumps(views[seat].observe(state)))  # as the sandbox sees it
                distribution = check_answer(actor.act(obs), legal)
                joint.append(sample_action({int(a): p for a, p in distribution.items()}, rng))
            else:
                joint.append(actor.step(state))
        if state.is_simultaneous_node():
            state.apply_actions(joint)
        else:
            state.apply_action(joint[0])
    return state.returns()


def seed_policy(spec, name, player, seed=0):
    return load_policy(spec.seed_policies()[name], spec, player, seed)


def test_rrps_seeds_exploit_what_they_are_built_to_exploit():
    spec = get_game("rrps(num_repetitions=100)")
    rock = lambda p: seed_policy(spec, "constant_rock", p)  # noqa: E731
    cycle = lambda p: seed_policy(spec, "cycle", p)  # noqa: E731
    # Beat-last and the frequency counter crush a constant player.
    assert play(spec, [seed_policy(spec, "beat_last", 0), rock(1)])[0] >= 98
    assert play(spec, [rock(0), seed_policy(spec, "frequency_counter", 1)])[1] >= 98
    # Against a cycle, beat-last always answers with the cycle's own next
    # move: every throw after the first is a tie...
    assert abs(play(spec, [cycle(0), seed_policy(spec, "beat_last", 1)])[0]) <= 1
    # ...but the Markov predictor learns the cycle's transitions.
    assert play(spec, [seed_policy(spec, "markov_predictor", 0, seed=3), cycle(1)])[0] >= 90


def test_rrps_seeds_play_legally_against_benchmark_bots_in_both_seats():
    spec = get_game("rrps(num_repetitions=60)")
    bots = [spec.benchmark_bot(name) for name in ("iocainebot", "randbot", "copybot")]
    for name in spec.seed_policies():
        for bot in bots:
            returns = play(spec, [seed_policy(spec, name, 0, seed=1), bot.make(1, 2)], seed=4)
            assert -60 <= returns[0] <= 60
            returns = play(spec, [bot.make(0, 2), seed_policy(spec, name, 1, seed=1)], seed=4)
            assert -60 <= returns[1] <= 60


@pytest.mark.parametrize("game_name", ["kuhn_poker", "leduc_poker"])
def test_poker_seeds_answer_legally_at_every_information_state(game_name):
    spec = get_game(game_name)
    policies = {
        name: [load_policy(source, spec, p, 0) for p in (0, 1)]
        for name, source in spec.seed_policies().items()
    }
    seen: set[tuple[int, str]] = set()
    for state in decision_states(spec.load()):
        player = state.current_player()
        key = (player, state.information_state_string(player))
        if key in seen:
            continue
        seen.add(key)
        obs = json.loads(json.dumps(spec.new_view(player).observe(state)))
        for name, seats in policies.items():
            distribution = check_answer(seats[player].act(obs), state.legal_actions())
            if name == "uniform":
                assert distribution == pytest.approx({a: 1 / len(obs["legal_actions"]) for a in obs["legal_actions"]})
            if name == "card_rules" and obs["to_call"] > 0:
                fold = 0  # Pass in Kuhn, Fold in Leduc
                if obs["card"] == "K" and obs.get("public_card") in (None, "K"):
                    assert distribution.get(fold, 0) == 0  # never folds the best hand
                if obs["card"] == "J" and obs.get("public_card") in (None, "Q", "K"):
                    assert distribution.get(fold, 0) == 1  # folds the worst hand
    assert len(seen) == {"kuhn_poker": 12, "leduc_poker": 936}[game_name]


def seed_table(spec, name):
    """A seed policy as an OpenSpiel TabularPolicy (both seats), in-process."""
    from open_spiel.python import policy as openspiel_policy

    game = spec.load()
    table = openspiel_policy.TabularPolicy(game)
    seats = [seed_policy(spec, name, p) for p in (0, 1)]
    for state in decision_states(game):
        player = state.current_player()
        row = table.state_lookup[state.information_state_string(player)]
        obs = json.loads(json.dumps(spec.new_view(player).observe(state)))
        table.action_probability_array[row] = 0.0
        for action, p in check_answer(seats[player].act(obs), state.legal_actions()).items():
            table.action_probability_array[row][int(action)] = p
    return table


@pytest.mark.parametrize("game_name", ["kuhn_poker", "leduc_poker"])
def test_poker_card_rules_beat_uniform_and_cannot_beat_cfr_exactly(game_name):
    from open_spiel.python.algorithms.expected_game_score import policy_value

    spec = get_game(game_name)
    game = spec.load()
    cfr = spec.benchmark_bot("cfr_plus").tabular_policy(game)
    uniform = spec.benchmark_bot("uniform_random").tabular_policy(game)
    rules = seed_table(spec, "card_rules")

    def seat_averaged(mine, theirs):
        first = policy_value(game.new_initial_state(), [mine, theirs])[0]
        second = policy_value(game.new_initial_state(), [theirs, mine])[1]
        return (first + second) / 2

    assert seat_averaged(rules, uniform) > 0.05
    assert seat_averaged(rules, cfr) < 1e-3  # CFR+ is near-Nash: nobody beats it


def test_repeated_leduc_fold_exploiter_bluffs_a_folder_harder_than_card_rules():
    spec = get_game("repeated_leduc(num_hands=60)")
    folder = spec.benchmark_bot("always_fold")
    results = {}
    for name in ("card_rules", "fold_exploiter"):
        results[name] = sum(
            play(spec, [seed_policy(spec, name, 0, seed=s), folder.make(1, s)], seed=s)[0]
            for s in range(3)
        )
    assert results["fold_exploiter"] > results["card_rules"]


def test_repeated_leduc_seeds_play_legally_against_cfr_in_both_seats():
    spec = get_game("repeated_leduc(num_hands=25)")
    cfr = spec.benchmark_bot("cfr_plus")
    for name in spec.seed_policies():
        for seat in (0, 1):
            players = [None, None]
            players[seat] = seed_policy(spec, name, seat, seed=2)
            players[1 - seat] = cfr.make(1 - seat, 3)
            returns = play(spec, players, seed=6)
            assert -13 * 25 <= returns[seat] <= 13 * 25


@pytest.mark.parametrize("game_name", ["tic_tac_toe", "matrix_rps", "goofspiel(num_cards=4)"])
def test_generic_seeds(game_name):
    spec = get_game(game_name)
    uniform = spec.benchmark_bot("uniform_random")
    for name in spec.seed_policies():
        for seat in (0, 1):
            players = [None, None]
            players[seat] = seed_policy(spec, name, seat)
            players[1 - seat] = uniform.make(1 - seat, 1)
            play(spec, players, seed=seat)
    first = seed_policy(spec, "first_legal", 0)
    assert first.act({"legal_actions": [4, 2, 7]}) == 2


# ---------------------------------------------------------------- sandbox


@pytest.mark.parametrize("game_name, seed_name, source", list(all_seeds()))
def test_seed_runs_in_the_sandbox(game_name, seed_name, source):
    sandbox = pytest.importorskip("csro_tui.sandbox.sandbox")
    spec = get_game(game_name)
    state = spec.load().new_initial_state()
    rng = random.Random(0)
    while state.is_chance_node():
        state.apply_action(rng.choice([a for a, _ in state.chance_outcomes()]))
    player = 0 if state.is_simultaneous_node() else state.current_player()
    obs = spec.new_view(player).observe(state)
    with sandbox.PolicyHost(source, spec.game_info(), name=seed_name) as host:
        host.start()
        host.new_episodes([(0, player, 7)])
        (answer,) = host.act([(0, obs)])
    check_answer(answer if not isinstance(answer, dict) else {int(a): p for a, p in answer.items()}, obs["legal_actions"])
