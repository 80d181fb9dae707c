"""The exact best-response oracle: keys, exactness, rendering and a PSRO loop.

Generated code only runs in the sandbox: every rendered policy is measured
by tabularising it through its PolicyHost (`evaluation.exact.tabularize`).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from open_spiel.python import policy as openspiel_policy
from open_spiel.python.algorithms import best_response as openspiel_best_response

from csro_tui.errors import CsroError
from csro_tui.evaluation.exact import (
    mixture_policy_of_tables,
    policy_exploitability,
    policy_values,
    tabularize,
)
from csro_tui.evaluation.participants import CodePolicy
from csro_tui.games.poker import parse_leduc_info_state
from csro_tui.games.registry import get_game
from csro_tui.meta.solvers import solve
from csro_tui.oracles.base import OracleContext
from csro_tui.records import PolicyRecord
from csro_tui.oracles.best_response import (
    BestResponseOracle,
    exact_best_response,
    make_best_response_oracle,
    seat_best_response,
)
from csro_tui.oracles.registry import OracleExhausted
from csro_tui.oracles.render import decision_points, key_collisions, situation_key
from csro_tui.sandbox.validation import validate_source

# Bets or calls with K; with Q calls a bet half the time; never bluffs.
KUHN_CAUTIOUS = '''
class Policy:
    def __init__(self, player, game):
        self.player = player

    def act(self, obs):
        if obs["card"] == "K":
            return 1
        if obs["card"] == "Q" and obs["to_call"] > 0:
            return {0: 0.5, 1: 0.5}
        return 0
'''

# Bluffs with J 70% of the time, always bets K, checks and calls with Q.
KUHN_BLUFFER = '''
class Policy:
    def __init__(self, player, game):
        self.player = player

    def act(self, obs):
        facing_bet = obs["to_call"] > 0
        if obs["card"] == "K":
            return 1
        if obs["card"] == "Q":
            return 1 if facing_bet else 0
        return 0 if facing_bet else {0: 0.3, 1: 0.7}
'''

# A Nash equilibrium of Kuhn poker (the one where player 0 never bets first).
KUHN_NASH = '''
class Policy:
    def __init__(self, player, game):
        self.player = player

    def act(self, obs):
        card = obs["card"]
        if obs["to_call"] > 0:
            return {"J": 0, "Q": {0: 2 / 3, 1: 1 / 3}, "K": 1}[card]
        if self.player == 1 and card == "K":
            return 1
        if self.player == 1 and card == "J":
            return {0: 2 / 3, 1: 1 / 3}
        return 0
'''

# Raises a pair or a K (mixing in calls), folds J to a bet 60% of the time.
LEDUC_SIMPLE = '''
class Policy:
    def __init__(self, player, game):
        self.player = player

    def act(self, obs):
        legal = obs["legal_actions"]
        strong = obs["card"] == "K" or obs["card"] == obs.get("public_card")
        if strong and 2 in legal:
            return {1: 0.3, 2: 0.7}
        if obs["to_call"] > 0 and obs["card"] == "J":
            return {0: 0.6, 1: 0.4}
        return 1
'''


@pytest.fixture(scope="module")
def kuhn():
    return get_game("kuhn_poker")


@pytest.fixture(scope="module")
def oracle():
    # One oracle for the module: it keeps the game's decision points.
    return make_best_response_oracle({})


def member(name: str, source: str) -> PolicyRecord:
    return PolicyRecord(id=name, name=name, source=source, origin="test")


def context(spec, members, weights, iteration=1) -> OracleContext:
    return OracleContext(
        spec=spec, iteration=iteration, population=list(members), meta_strategy=list(weights)
    )


def table_of(spec, name, source) -> openspiel_policy.TabularPolicy:
    return tabularize(spec, CodePolicy(name, source))


def seat_values(spec, response_table, opponent) -> list[float]:
    """The response's expected return in seat 0 and in seat 1 against `opponent`."""
    return [
        float(policy_values(spec, response_table, opponent)[0]),
        float(policy_values(spec, opponent, response_table)[1]),
    ]


def openspiel_best_response_values(spec, opponent) -> list[float]:
    game = spec.load()
    return [
        openspiel_best_response.BestResponsePolicy(game, seat, opponent).value(
            game.new_initial_state()
        )
        for seat in range(2)
    ]


# ---------------------------------------------------------------- table keys


def one_to_one(pairs) -> bool:
    """Whether the (left, right) pairs describe a bijection."""
    forward: dict = {}
    backward: dict = {}
    for left, right in pairs:
        forward.setdefault(left, set()).add(right)
        backward.setdefault(right, set()).add(left)
    return all(len(v) == 1 for v in forward.values()) and all(len(v) == 1 for v in backward.values())


def test_kuhn_keys_and_information_states_correspond_one_to_one(kuhn):
    all_states = openspiel_policy.TabularPolicy(kuhn.load()).states_per_player
    for seat in range(2):
        points = decision_points(kuhn, seat)
        assert one_to_one((point.key, point.info_state) for point in points)
        assert {point.info_state for point in points} == set(all_states[seat])


def test_leduc_keys_identify_information_states_up_to_suits():
    """Leduc shows cards by rank (suits never matter): one key per suit-free state."""
    spec = get_game("leduc_poker")
    all_states = openspiel_policy.TabularPolicy(spec.load()).states_per_player
    for seat in range(2):
        points = decision_points(spec, seat)

        def suit_free(info_state: str):
            fields = parse_leduc_info_state(info_state)
            public = fields["public"]
            rounds = tuple(tuple(actions) for actions in fields["rounds"])
            return fields["private"] // 2, None if public is None else public // 2, rounds

        assert one_to_one((point.key, suit_free(point.info_state)) for point in points)
        assert {point.info_state for point in points} == set(all_states[seat])
        assert key_collisions(points) == {}


def test_collision_check_catches_a_key_that_loses_information(kuhn):
    points = decision_points(kuhn, 1)
    blunted = [replace(point, key=point.key[0]) for point in points]
    assert key_collisions(blunted)  # the card alone cannot tell "Pass" from "Bet"


# ---------------------------------------------------------------- exactness


def test_best_response_to_one_policy_is_exactly_openspiels(kuhn, oracle):
    opponent = table_of(kuhn, "cautious", KUHN_CAUTIOUS)
    proposal = oracle.propose(context(kuhn, [member("cautious", KUHN_CAUTIOUS)], [1.0]))

    assert validate_source(proposal.source) == []
    response = table_of(kuhn, proposal.name, proposal.source)
    expected = openspiel_best_response_values(kuhn, opponent)
    assert seat_values(kuhn, response, opponent) == pytest.approx(expected, abs=1e-9)
    assert proposal.name == "br-1"
    assert "cautious 1.000" in proposal.rationale


def test_best_response_to_a_mixture_is_exact_and_mixes_by_reach(kuhn, oracle):
    members = [member("cautious", KUHN_CAUTIOUS), member("bluffer", KUHN_BLUFFER)]
    weights = [0.3, 0.7]
    tables = [table_of(kuhn, m.name, m.source) for m in members]
    mixture = mixture_policy_of_tables(kuhn, tables, weights)

    proposal = oracle.propose(context(kuhn, members, weights, iteration=4))
    response = table_of(kuhn, proposal.name, proposal.source)

    values = seat_values(kuhn, response, mixture)
    assert values == pytest.approx(openspiel_best_response_values(kuhn, mixture), abs=1e-9)
    # Against a mixture of whole policies, a fixed response earns the
    # weighted sum of what it earns against each member.
    per_member = [seat_values(kuhn, response, table) for table in tables]
    weighted = np.average(per_member, axis=0, weights=weights)
    assert values == pytest.approx(list(weighted), abs=1e-9)
    assert "0.300" in proposal.rationale and "0.700" in proposal.rationale
    assert f"{policy_exploitability(kuhn, mixture):.4f}" in proposal.rationale


def test_seat_values_sum_to_the_mixtures_exploitability(kuhn):
    tables = [table_of(kuhn, "cautious", KUHN_CAUTIOUS), table_of(kuhn, "bluffer", KUHN_BLUFFER)]
    mixture = mixture_policy_of_tables(kuhn, tables, [0.5, 0.5])
    response = exact_best_response(kuhn, mixture)
    assert response.value == pytest.approx(policy_exploitability(kuhn, mixture), abs=1e-12)


def test_leduc_best_response_renders_and_is_exact(oracle):
    leduc = get_game("leduc_poker")
    opponent = table_of(leduc, "simple", LEDUC_SIMPLE)
    proposal = oracle.propose(context(leduc, [member("simple", LEDUC_SIMPLE)], [1.0]))

    assert validate_source(proposal.source) == []
    assert '("K", "K", "Call Call |"): "Raise"' in proposal.source  # a pair of kings raises
    response = table_of(leduc, proposal.name, proposal.source)
    expected = openspiel_best_response_values(leduc, opponent)
    assert seat_values(leduc, response, opponent) == pytest.approx(expected, abs=1e-9)


def test_empty_population_is_answered_with_the_best_response_to_uniform(kuhn, oracle):
    proposal = oracle.propose(context(kuhn, [], []))
    response = table_of(kuhn, proposal.name, proposal.source)
    uniform = openspiel_policy.UniformRandomPolicy(kuhn.load())
    expected = openspiel_best_response_values(kuhn, uniform)
    uniform_table = openspiel_policy.TabularPolicy(kuhn.load())
    assert seat_values(kuhn, response, uniform_table) == pytest.approx(expected, abs=1e-9)
    assert "uniform random policy (the population is empty)" in proposal.rationale
    assert f"policy's exploitability is {np.mean(expected):.4f}" in proposal.rationale


# ---------------------------------------------------------------- determinism


def test_ties_go_to_the_lowest_action_id(kuhn):
    uniform = openspiel_policy.UniformRandomPolicy(kuhn.load())
    ties = 0
    for seat in range(2):
        table = seat_best_response(kuhn, seat, uniform)
        for key, values in table.action_values.items():
            best = max(values.values())
            tied = [a for a, v in values.items() if abs(v - best) < 1e-9]
            assert table.actions[key] == min(tied)
            ties += len(tied) > 1
    assert ties > 0  # against uniform, K first to act is a tie (Pass = Bet)


def test_same_context_gives_the_same_source(kuhn):
    members = [member("cautious", KUHN_CAUTIOUS), member("bluffer", KUHN_BLUFFER)]
    first = BestResponseOracle().propose(context(kuhn, members, [0.4, 0.6]))
    second = BestResponseOracle().propose(context(kuhn, members, [0.4, 0.6]))
    assert first.source == second.source


# ---------------------------------------------------------------- rendering


def test_rendered_tables_are_keyed_by_what_the_policy_sees(kuhn, oracle):
    proposal = oracle.propose(context(kuhn, [member("cautious", KUHN_CAUTIOUS)], [1.0]))
    source = proposal.source
    assert "SEAT_0 = {" in source and "SEAT_1 = {" in source
    assert "# My card J" in source and "# My card K" in source
    assert "cautious" in source.split('"""')[1]  # the docstring names the mixture
    # The key function in the module is the one the tables were built with.
    kuhn_obs = {"card": "Q", "betting": [["Pass", "Bet"]], "legal_actions": [0, 1]}
    assert situation_key(kuhn_obs) == ("Q", None, "Pass Bet")
    assert '("Q", None, "Pass Bet"):' in source


def test_member_names_cannot_break_the_docstring(kuhn, oracle):
    name = 'odd """name\\ with\nnewline'
    proposal = oracle.propose(context(kuhn, [member(name, KUHN_CAUTIOUS)], [1.0]))
    assert validate_source(proposal.source) == []
    assert 'odd \\"\\"\\"name\\\\ with newline' in proposal.source


def test_unreached_situations_answer_a_uniform_opponent(kuhn, oracle):
    """The cautious policy bets only with K, so holding K no bet ever comes."""
    proposal = oracle.propose(context(kuhn, [member("cautious", KUHN_CAUTIOUS)], [1.0]))
    line = next(line for line in proposal.source.splitlines() if '("K", None, "Bet"):' in line)
    # Every action is worth the same there against cautious; a tie-break
    # would fold the best hand.  Against uniform, calling wins 2.
    assert '"Bet",' in line and "unreached; vs uniform:" in line and "Bet +2.000" in line


def test_an_equilibrium_meta_strategy_finishes_the_oracle(kuhn, oracle):
    nash = table_of(kuhn, "nash", KUHN_NASH)
    assert policy_exploitability(kuhn, nash) < 1e-12
    with pytest.raises(OracleExhausted, match="exact equilibrium"):
        oracle.propose(context(kuhn, [member("nash", KUHN_NASH)], [1.0]))


def test_games_without_exact_evaluation_are_refused(oracle):
    with pytest.raises(CsroError, match="exact evaluation"):
        oracle.propose(context(get_game("rrps"), [], []))


# ---------------------------------------------------------------- PSRO loop


@pytest.mark.parametrize("seed_name", sorted(get_game("kuhn_poker").seed_policies()))
def test_psro_with_exact_best_responses_solves_kuhn(kuhn, seed_name, capsys):
    """From any one seed, exact best responses bring the meta-Nash mixture to
    exploitability below 0.01 within 20 iterations."""
    oracle = BestResponseOracle()
    start = kuhn.seed_policies()[seed_name]
    population = [member(seed_name, start)]
    tables = [table_of(kuhn, seed_name, start)]
    curve = []
    for iteration in range(1, 21):
        size = len(population)
        matrix = np.zeros((size, size))
        for i in range(size):
            for j in range(size):
                matrix[i, j] = np.mean(seat_values(kuhn, tables[i], tables[j]))
        weights = solve("nash", matrix).row
        mixture = mixture_policy_of_tables(kuhn, tables, list(weights))
        curve.append(policy_exploitability(kuhn, mixture))
        if curve[-1] < 0.01:
            break
        proposal = oracle.propose(context(kuhn, population, list(weights), iteration))
        assert f"exploitability is {curve[-1]:.4f}" in proposal.rationale
        population.append(member(proposal.name, proposal.source))
        tables.append(table_of(kuhn, proposal.name, proposal.source))
    with capsys.disabled():
        print(f"\nKuhn PSRO from {seed_name}, exploitability:", " ".join(f"{e:.4f}" for e in curve))
    assert curve[-1] < 0.01


@pytest.mark.parametrize("game", ["kuhn_poker", "leduc_poker"])
def test_the_sequence_form_response_is_the_tree_walks(game, monkeypatch):
    """Against a table of the game's rows the oracle answers in sequence form
    (_KeyedTree); it must choose the same actions, with the same values and
    the same unreached situations, as the tree walk it replaces."""
    import copy

    from csro_tui.evaluation.exact import game_tables
    from csro_tui.oracles import best_response

    spec = get_game(game)
    template = game_tables(spec).template
    for seed in range(5):
        table = copy.copy(template)
        weights = np.random.default_rng(seed).random(table.action_probability_array.shape) ** (1 + 3 * seed)
        weights *= table.legal_actions_mask
        if seed >= 3:  # pure: situations the opponent never lets happen, and ties
            weights = (weights == weights.max(axis=1, keepdims=True)) * 1.0
        table.action_probability_array[:] = weights / weights.sum(axis=1, keepdims=True)
        for seat in range(2):
            points = decision_points(spec, seat)
            assert best_response._keyed_tree(spec, seat, points) is not None
            fast = best_response.seat_best_response(spec, seat, table, points)
            with monkeypatch.context() as patch:
                patch.setattr(best_response, "_is_game_table", lambda *_: False)
                walked = best_response.seat_best_response(spec, seat, table, points)
            assert fast.value == pytest.approx(walked.value, abs=1e-12)
            assert dict(fast.actions) == dict(walked.actions)
            assert fast.unreached == walked.unreached
            assert set(fast.action_values) == set(walked.action_values)
            for key, values in walked.action_values.items():
                assert fast.action_values[key] == pytest.approx(values, abs=1e-12)


@pytest.mark.parametrize("game", ["kuhn_poker", "leduc_poker"])
def test_a_seat_best_response_is_exact_in_its_seat_and_plays_the_lowest_legal_action_in_the_other(game):
    """Two populations: one table, for `context.seat`, against the other seat's mixture."""
    spec = get_game(game)
    opponent_member = PolicyRecord("p1", "cautious", KUHN_CAUTIOUS if game == "kuhn_poker" else LEDUC_SIMPLE, "seed", seat=1)
    own = PolicyRecord("p0", "cautious", opponent_member.source, "seed", seat=0)
    context = OracleContext(spec=spec, iteration=1, population=[opponent_member], meta_strategy=[1.0], seat=0,
                            own_population=[own])
    proposal = BestResponseOracle().propose(context)
    assert proposal.seat == 0 and "for seat 0 only" in proposal.source
    assert validate_source(proposal.source) == []
    table = tabularize(spec, CodePolicy("br", proposal.source))
    opponent = tabularize(spec, CodePolicy("op", opponent_member.source))
    # its seat-0 value is OpenSpiel's best-response value against the opponent in seat 1
    response = openspiel_best_response.BestResponsePolicy(spec.load(), 0, opponent)
    assert policy_values(spec, table, opponent)[0] == pytest.approx(response.value(spec.load().new_initial_state()))
    # in seat 1 it has no table: the lowest legal action everywhere
    for row, state in enumerate(table.states):
        if state.current_player() == 1:
            lowest = min(state.legal_actions())
            assert table.action_probability_array[row, lowest] == 1.0


def test_a_seat_whose_population_holds_a_best_response_gets_nothing_more():
    spec = get_game("kuhn_poker")
    opponent = PolicyRecord("p1", "cautious", KUHN_CAUTIOUS, "seed", seat=1)
    first = BestResponseOracle().propose(OracleContext(spec=spec, iteration=1, population=[opponent],
                                                       meta_strategy=[1.0], seat=0))
    holder = PolicyRecord("p2", first.name, first.source, "best-response", seat=0)
    with pytest.raises(OracleExhausted, match="seat 0's population already holds a best response"):
        BestResponseOracle().propose(OracleContext(spec=spec, iteration=2, population=[opponent], meta_strategy=[1.0],
                                                   seat=0, own_population=[holder]))
