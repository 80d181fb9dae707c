"""The offline AST mutation operator: valid, different, deterministic children."""

from __future__ import annotations

import ast
import random

import pytest

from csro_tui.games.registry import get_game, list_games
from csro_tui.oracles.evolve.ast_mutation import ASTMutation, MutationError, mutation_sites
from csro_tui.oracles.evolve.database import Program
from csro_tui.oracles.evolve.mutation import MutationRequest
from csro_tui.sandbox.validation import validate_source

CONSTANT_ONLY = '''
class Policy:
    def __init__(self, player, game):
        self.player = player

    def act(self, obs):
        return 0
'''

COMPARISON_ONLY = '''
class Policy:
    def __init__(self, player, game):
        self.player = player

    def act(self, obs):
        return obs["legal_actions"][len(obs["legal_actions"]) // len(obs["legal_actions"]) - (obs["pot"] < obs["to_call"])]
'''

BRANCHES_ONLY = '''
class Policy:
    def __init__(self, player, game):
        self.player = player

    def act(self, obs):
        if obs["to_call"]:
            action = max(obs["legal_actions"])
        else:
            action = min(obs["legal_actions"])
        return action
'''

FLOAT_AND_IFEXP = '''
class Policy:
    def __init__(self, player, game):
        self.threshold = 0.25

    def act(self, obs):
        return max(obs["legal_actions"]) if obs["pot"] > self.threshold else min(obs["legal_actions"])
'''


def children(source: str, count: int, seed: int = 0) -> list:
    operator = ASTMutation()
    rng = random.Random(seed)
    return [operator.mutate(source, rng) for _ in range(count)]


def test_a_constant_is_perturbed_and_stays_non_negative():
    mutants = children(CONSTANT_ONLY, 20)
    values = {m.source.strip().splitlines()[-1].strip() for m in mutants}
    assert values <= {"return 1", "return 2"} and values  # 0 moves by +1 or +2, never below 0
    assert all(m.description.startswith("constant 0 -> ") and "at line 7" in m.description for m in mutants)


def test_a_comparison_is_flipped():
    (mutant,) = children(COMPARISON_ONLY, 1)
    assert mutant.description.startswith("comparison < -> ")
    flipped = mutant.description.split("-> ")[1].split(" at")[0]
    assert f'obs["pot"] {flipped} obs["to_call"]'.replace('"', "'") in mutant.source


def test_if_else_branches_are_swapped():
    (mutant,) = children(BRANCHES_ONLY, 1)
    assert mutant.description == "if/else branches swapped at line 7"
    body = mutant.source
    assert body.index("min(obs['legal_actions'])") < body.index("max(obs['legal_actions'])")


def test_floats_scale_and_conditional_expressions_swap():
    kinds = {m.description.split(" ")[0] for m in children(FLOAT_AND_IFEXP, 30)}
    assert kinds == {"constant", "comparison", "conditional"}
    scaled = [m for m in children(FLOAT_AND_IFEXP, 30) if m.description.startswith("constant 0.25")]
    assert scaled and all(float(m.description.split("-> ")[1].split(" ")[0]) > 0 for m in scaled)


def test_every_child_of_every_seed_policy_is_valid_and_different():
    operator = ASTMutation()
    checked = 0
    for spec in list_games():
        name = spec.name
        for seed_name, source in spec.seed_policies().items():
            if not mutation_sites(ast.parse(source)):
                continue
            rng = random.Random(f"{name}/{seed_name}")
            original = ast.dump(ast.parse(source))
            for _ in range(10):
                mutant = operator.mutate(source, rng)
                assert validate_source(mutant.source) == [], (name, seed_name, mutant.description)
                assert ast.dump(ast.parse(mutant.source)) != original
                checked += 1
    assert checked >= 100


def test_the_same_random_state_gives_the_same_children():
    source = get_game("rrps").seed_policies()["frequency_counter"]
    first = [(m.source, m.description) for m in children(source, 8, seed=3)]
    again = [(m.source, m.description) for m in children(source, 8, seed=3)]
    other = [(m.source, m.description) for m in children(source, 8, seed=4)]
    assert first == again
    assert first != other


SAME_BRANCHES = """
class Policy:
    def __init__(self, player, game):
        pass

    def act(self, obs):
        return min(obs["legal_actions"]) if obs else min(obs["legal_actions"])
"""

NO_SITES = """
class Policy:
    def act(self, obs):
        return min(obs["legal_actions"])
"""


def test_a_parent_without_sites_or_without_a_real_change_is_an_error():
    # The only site is a conditional expression with equal branches: swapping them changes nothing.
    with pytest.raises(MutationError, match="no valid, different child in 5 tries"):
        ASTMutation(max_tries=5).mutate(SAME_BRANCHES, random.Random(0))
    with pytest.raises(MutationError, match="no numeric constant, comparison or if/else"):
        ASTMutation().mutate(NO_SITES, random.Random(0))
    with pytest.raises(MutationError, match="does not parse"):
        ASTMutation().mutate("class Policy(:\n", random.Random(0))


def test_mutate_batch_follows_the_operator_protocol_in_order():
    parent = Program("p", CONSTANT_ONLY, 0.0)
    broken = Program("b", NO_SITES, 0.0)
    requests = [MutationRequest(parent, seed=1, label="a"), MutationRequest(broken, seed=2, label="b"),
                MutationRequest(parent, seed=1, label="c")]

    results = ASTMutation().mutate_batch(requests, context=None)

    assert [r.kind for r in results] == ["ast", "ast", "ast"]
    assert results[0].source is not None and results[0].source == results[2].source  # same seed, same child
    assert results[1].source is None and "no numeric constant" in results[1].failure
