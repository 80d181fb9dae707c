"""Exact evaluation: tables from code, payoffs, exploitability, mixtures."""

from __future__ import annotations

import copy

import numpy as np
import pytest
from open_spiel.python import policy as os_policy
from open_spiel.python.algorithms import expected_game_score
from open_spiel.python.algorithms import best_response as os_best_response
from open_spiel.python.algorithms import exploitability as os_exploitability

from csro_tui.errors import CsroError
from csro_tui.evaluation.exact import (
    best_response_values,
    exact_payoff,
    exploitability,
    game_tables,
    joint_policy,
    mixture_policy,
    policy_exploitability,
    policy_values,
    tabular_policy,
    tabularize,
)
from csro_tui.evaluation.participants import BotPolicy, CodePolicy
from csro_tui.evaluation.referee import play_match
from csro_tui.games.kuhn import KuhnSpec
from csro_tui.games.leduc import LeducSpec
from csro_tui.sandbox.failures import FailureCategory
from tests.evaluation.referee_doubles import FakeHost, rrps  # an in-process host double, for speed

KUHN = KuhnSpec()
LEDUC = LeducSpec()


def view_key(spec, state):
    """What a policy can tell information states apart by: its observation.

    (Leduc's view names cards by rank only, so states that differ in the
    suit of a card look alike, as they should: suits do not matter.)"""
    player = state.current_player()
    return repr((player, sorted(spec.new_view(player).observe(state).items())))


def random_table(spec, seed):
    """A random tabular policy over both seats (some rows deterministic),
    the same at states the policy's observation cannot tell apart."""
    table = os_policy.TabularPolicy(spec.load())
    rng = np.random.default_rng(seed)
    raw = rng.random(table.action_probability_array.shape) ** 3 * table.legal_actions_mask
    raw[rng.random(len(raw)) < 0.2] *= rng.random(raw.shape[1]) > 0.5  # pure-ish rows
    raw[raw.sum(axis=1) == 0] = table.legal_actions_mask[raw.sum(axis=1) == 0]
    first_row_of_key = {}
    for row, state in enumerate(table.states):
        raw[row] = raw[first_row_of_key.setdefault(view_key(spec, state), row)]
    table.action_probability_array[:] = raw / raw.sum(axis=1, keepdims=True)
    return table


def table_as_code(spec, table, name="copy"):
    """A policy module that returns `table`'s distribution at every information
    state, keyed by the real view's observation (what the policy can see)."""
    entries = {}
    for row, state in enumerate(table.states):
        key = view_key(spec, state)
        probs = {a: float(table.action_probability_array[row, a]) for a in state.legal_actions()}
        entries[key] = {a: p for a, p in probs.items() if p > 0}
    source = (
        f"TABLE = {entries!r}\n"
        "class Policy:\n"
        "    def __init__(self, player, game):\n"
        "        self.player = player\n"
        "    def act(self, obs):\n"
        "        return TABLE[repr((self.player, sorted(obs.items())))]\n"
    )
    return CodePolicy(name, source)


def code(name, body, init="pass"):
    return CodePolicy(
        name,
        "class Policy:\n"
        "    def __init__(self, player, game):\n"
        f"        self.player = player\n        {init}\n"
        "    def act(self, obs):\n"
        f"        {body}\n",
    )


BETTOR = code("bettor", "return max(obs['legal_actions'])")
CHECKER = code("checker", "return min(obs['legal_actions'])")
UNIFORM = code("uniform", "return {a: 1.0 for a in obs['legal_actions']}")


@pytest.mark.parametrize("spec", [KUHN, LEDUC], ids=lambda s: s.name)
def test_sequence_form_values_match_openspiel(spec):
    first, second = random_table(spec, 1), random_table(spec, 2)
    ours = policy_values(spec, first, second)
    theirs = expected_game_score.policy_value(spec.load().new_initial_state(), [first, second])
    np.testing.assert_allclose(ours, theirs, atol=1e-12)


@pytest.mark.parametrize("spec", [KUHN, LEDUC], ids=lambda s: s.name)
def test_code_copy_of_a_table_has_the_tables_exploitability(spec):
    # Tabularised through the real sandbox.
    table = random_table(spec, 3)
    copy = table_as_code(spec, table)
    tabular = tabularize(spec, copy)
    np.testing.assert_allclose(tabular.action_probability_array, table.action_probability_array, atol=1e-12)
    expected = os_exploitability.exploitability(spec.load(), table)
    assert exploitability(spec, copy) == pytest.approx(expected, abs=1e-9)
    assert expected > 0.05  # a random table is far from equilibrium: the check has teeth


def test_tabularisation_replays_the_players_own_earlier_observations():
    # Bets on its first decision of a hand, and on a second decision (Kuhn:
    # player 0 after check-bet) calls only if it remembers having checked.
    stateful = code(
        "stateful",
        "self.calls += 1\n"
        "        if self.calls == 1:\n"
        "            return {0: 0.5, 1: 0.5}\n"
        "        return 1 if self.calls == 2 else 0",
        "self.calls = 0",
    )
    table = tabularize(KUHN, stateful, host_factory=FakeHost)
    for card in "012":
        row = table.state_lookup[f"{card}pb"]  # player 0: checked, then facing a bet
        assert list(table.action_probability_array[row]) == [0.0, 1.0]
        first = table.state_lookup[card]
        assert list(table.action_probability_array[first]) == [0.5, 0.5]


@pytest.mark.parametrize(("first", "second"), [("card_rules", "uniform"), ("always_bet", "card_rules")])
def test_exact_and_sampled_payoffs_of_seed_policies_agree(first, second):
    # Through the real sandbox, both ways.
    seeds = KUHN.seed_policies()
    a, b = CodePolicy(first, seeds[first]), CodePolicy(second, seeds[second])
    exact = exact_payoff(KUHN, a, b)
    sampled = play_match(KUHN, a, b, episodes=4000, seed=3)
    assert exact.exact and exact.stderr == 0.0 and exact.failure is None
    assert sampled.failure is None and sampled.stderr > 0
    assert abs(exact.mean - sampled.mean) < 3 * sampled.stderr


def test_exact_payoffs_are_antisymmetric_and_seat_averaged():
    forward = exact_payoff(KUHN, BETTOR, CHECKER, host_factory=FakeHost)
    backward = exact_payoff(KUHN, CHECKER, BETTOR, host_factory=FakeHost)
    assert forward.mean == pytest.approx(-backward.mean)
    # Bettor vs checker: the checker folds to every bet, so the bettor wins the ante.
    assert forward.mean == pytest.approx(1.0)
    assert exact_payoff(KUHN, UNIFORM, UNIFORM, host_factory=FakeHost).mean == pytest.approx(0.0)


def test_benchmark_bots_are_tabular():
    cfr = tabular_policy(KUHN, BotPolicy("cfr_plus"))
    assert exploitability(KUHN, BotPolicy("cfr_plus")) < 1e-3
    assert os_exploitability.exploitability(KUHN.load(), cfr) < 1e-3
    uniform_value = exact_payoff(KUHN, BotPolicy("uniform_random"), UNIFORM, host_factory=FakeHost).mean
    assert uniform_value == pytest.approx(0.0, abs=1e-12)


@pytest.mark.parametrize("spec", [KUHN, LEDUC], ids=lambda s: s.name)
def test_the_mixture_is_worth_the_weighted_values_of_its_members(spec):
    members = [table_as_code(spec, random_table(spec, seed), f"m{seed}") for seed in (4, 5, 6)]
    weights = [0.2, 0.5, 0.3]
    mixture = mixture_policy(spec, members, weights, host_factory=FakeHost)
    opponent = random_table(spec, 7)
    tables = [tabularize(spec, member, host_factory=FakeHost) for member in members]
    for seat in (0, 1):
        def value(table):
            pair = (table, opponent) if seat == 0 else (opponent, table)
            return policy_values(spec, *pair)[seat]

        assert value(mixture) == pytest.approx(sum(w * value(t) for w, t in zip(weights, tables)), abs=1e-12)


def test_a_failing_policy_is_reported_not_raised():
    crasher = code("crasher", "return 1 // 0")
    result = exact_payoff(KUHN, crasher, UNIFORM, host_factory=FakeHost)
    assert result.failure is not None
    assert result.failure.category == FailureCategory.CRASH
    assert result.failure.policy == "crasher"


def test_games_without_exact_evaluation_say_so():
    with pytest.raises(CsroError, match="no exact evaluation"):
        game_tables(rrps())


@pytest.mark.parametrize("game", ["kuhn_poker", "leduc_poker"])
def test_sequence_form_exploitability_is_openspiels(game):
    """policy_exploitability's own best-response pass against OpenSpiel's
    exploitability, on random, peaked and deterministic tables."""
    spec = {"kuhn_poker": KUHN, "leduc_poker": LEDUC}[game]
    template = game_tables(spec).template
    for seed in range(4):
        table = copy.copy(template)
        weights = np.random.default_rng(seed).random(table.action_probability_array.shape) ** (1 + 3 * seed)
        weights *= table.legal_actions_mask
        if seed == 3:  # a pure strategy: ties everywhere below the states it never reaches
            weights = (weights == weights.max(axis=1, keepdims=True)) * 1.0
        table.action_probability_array[:] = weights / weights.sum(axis=1, keepdims=True)
        expected = os_exploitability.exploitability(spec.load(), table)
        assert policy_exploitability(spec, table) == pytest.approx(expected, abs=1e-12)
        # and per seat: OpenSpiel's best response values
        values = best_response_values(spec, table)
        for seat in range(2):
            response = os_best_response.BestResponsePolicy(spec.load(), seat, table)
            assert values[seat] == pytest.approx(response.value(spec.load().new_initial_state()), abs=1e-12)


def test_seat_fixed_exact_payoffs_are_each_seats_value():
    """Two populations: a's return in one seat; their mean is the seat-averaged entry."""
    seat_0 = exact_payoff(KUHN, BETTOR, CHECKER, host_factory=FakeHost, seat=0)
    seat_1 = exact_payoff(KUHN, BETTOR, CHECKER, host_factory=FakeHost, seat=1)
    tables = [tabularize(KUHN, p, host_factory=FakeHost) for p in (BETTOR, CHECKER)]
    assert seat_0.mean == pytest.approx(policy_values(KUHN, tables[0], tables[1])[0])
    assert seat_1.mean == pytest.approx(policy_values(KUHN, tables[1], tables[0])[1])
    averaged = exact_payoff(KUHN, BETTOR, CHECKER, host_factory=FakeHost)
    assert averaged.mean == pytest.approx((seat_0.mean + seat_1.mean) / 2)


@pytest.mark.parametrize("spec", [KUHN, LEDUC], ids=lambda s: s.name)
def test_joint_profile_exploitability_is_openspiels(spec):
    """Seat 0 from one mixture, seat 1 from another: OpenSpiel's exploitability
    (NashConv / 2) of the same joint TabularPolicy."""
    for seed in range(3):
        seat_0, seat_1 = random_table(spec, 10 + seed), random_table(spec, 20 + seed)
        joint = joint_policy(spec, seat_0, seat_1)
        players = game_tables(spec).row_player
        np.testing.assert_array_equal(joint.action_probability_array[players == 0],
                                      seat_0.action_probability_array[players == 0])
        np.testing.assert_array_equal(joint.action_probability_array[players == 1],
                                      seat_1.action_probability_array[players == 1])
        expected = os_exploitability.exploitability(spec.load(), joint)
        assert policy_exploitability(spec, joint) == pytest.approx(expected, abs=1e-12)
        nash_conv = os_exploitability.nash_conv(spec.load(), joint)
        assert policy_exploitability(spec, joint) == pytest.approx(nash_conv / 2, abs=1e-12)
