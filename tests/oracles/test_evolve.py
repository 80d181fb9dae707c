"""The evolutionary search: program database (islands, MAP-Elites), features,
applying LLM edits, and the offline `evolve` oracle (AST mutations).

The toy game of `tests/fakes.py` (a policy declares `STRENGTH = x`;
payoff = strength difference) makes most searches take milliseconds; one
test evolves real RRPS policies in the sandbox and checks the gain.
"""

from __future__ import annotations

import random

import pytest

from csro_tui.config import RunConfig
from csro_tui.engine import Engine
from csro_tui.engine.evaluator import GameEvaluator
from tests.fakes import ToyEvaluator, ToySpec, best_member_solve, strength, toy_policy
from csro_tui.engine.gate import Gate, GateSettings
from csro_tui.errors import ConfigError
from csro_tui.evaluation.participants import CodePolicy
from csro_tui.evaluation.referee import play_match
from csro_tui.games.registry import get_game
from csro_tui.oracles.base import OracleContext
from csro_tui.records import PolicyRecord
from csro_tui.oracles.llm.client import LLMError
from csro_tui.oracles.candidates import NoUsableCandidate
from csro_tui.oracles.evolve.database import Program, ProgramDatabase
from csro_tui.oracles.evolve.features import behaviour_features, describe_features, size_bin
from csro_tui.oracles.evolve.mutation import MutationResult
from csro_tui.oracles.llm.mutation import child_from_reply
from csro_tui.oracles.evolve.search import EvolutionOracle, EvolutionSettings, SearchExhausted, code_key
from csro_tui.oracles.registry import OracleExhausted, make_oracle
from csro_tui.reviewers import AutoReviewer


def program(program_id: str, fitness: float, features=(0, 0), source: str | None = None, parent=None) -> Program:
    return Program(program_id, source or f"# {program_id}\n" + toy_policy(fitness), fitness, features=features, parent=parent)


def toy_context(population=None, weights=None, iteration=1, seed=0, rejections=()) -> OracleContext:
    population = population or [PolicyRecord("p0", "zero", toy_policy(0.0), "seed")]
    weights = weights or [1.0 / len(population)] * len(population)
    by_id = {m.id: w for m, w in zip(population, weights)}
    gate = Gate(ToyEvaluator(), GateSettings())
    return OracleContext(
        spec=ToySpec(seeds={"weak": toy_policy(-0.5)}),
        iteration=iteration,
        population=list(population),
        meta_strategy=list(weights),
        preview=lambda source: gate.check(source, population, by_id, key=f"evolve-{iteration}"),
        seed=seed,
        rejections=list(rejections),
    )


# ------------------------------------------------------------------ database
def test_each_island_keeps_one_elite_per_cell_replaced_only_by_a_fitter_program():
    database = ProgramDatabase(islands=2)
    assert database.add(program("a", 0.1, (0, 0)), island=0)
    assert not database.add(program("b", 0.1, (0, 0)), island=0)  # equal is not better
    assert database.add(program("c", 0.3, (0, 0)), island=0)
    assert database.add(program("d", -0.2, (1, 0)), island=0)  # another cell: kept although worse
    assert database.add(program("e", 0.0, (0, 0)), island=1)

    assert [p.id for p in database.islands[0].elites()] == ["c", "d"]
    assert [p.id for p in database.islands[1].elites()] == ["e"]
    assert database.occupancy() == [2, 1]
    assert len(database) == 5  # every evaluated program is remembered, elite or not
    assert [p.id for p in database.best(2)] == ["c", "a"]


def test_seeds_go_to_every_island_and_duplicates_are_refused():
    database = ProgramDatabase(islands=3)
    seed = program("seed", 0.0)
    database.add(seed)
    assert all(island.best() is seed for island in database.islands)
    assert database.find(seed.source + "\n\n") is seed  # blank edges do not make a new program
    with pytest.raises(ValueError, match="already in the database"):
        database.add(Program("again", seed.source, 1.0))


def test_parents_come_from_their_island_and_sampling_is_reproducible():
    database = ProgramDatabase(islands=2, exploitation=0.5)
    for index in range(4):
        database.add(program(f"a{index}", index / 10, (index, 0)), island=0)
    database.add(program("b0", 0.9), island=1)

    draws = [database.sample_parent(0, random.Random(7)).id for _ in range(3)]
    rng = random.Random(11)
    many = [database.sample_parent(0, rng).id for _ in range(400)]

    assert len(set(draws)) == 1  # same seed, same parent
    assert set(many) == {"a0", "a1", "a2", "a3"}  # never the other island's program
    # Rank-weighted exploitation: the best is drawn more often than the worst.
    assert many.count("a3") > many.count("a0")


def test_inspirations_are_the_islands_best_others_plus_one_from_another_island():
    database = ProgramDatabase(islands=2)
    for index in range(4):
        database.add(program(f"a{index}", index / 10, (index, 0)), island=0)
    database.add(program("b0", 0.9), island=1)
    parent = database.programs["a3"]

    inspirations = database.sample_inspirations(0, parent, 3, random.Random(0))

    assert [p.id for p in inspirations] == ["a2", "a1", "b0"]
    assert database.sample_inspirations(0, parent, 0, random.Random(0)) == []


def test_migration_offers_each_islands_best_to_the_next_in_a_ring():
    database = ProgramDatabase(islands=3)
    database.add(program("x", 0.5, (0, 0)), island=0)
    database.add(program("y", 0.1, (0, 0)), island=1)
    database.add(program("z", 0.9, (1, 0)), island=2)

    moved = database.migrate()

    assert moved == [(0, 1, "x"), (1, 2, "y"), (2, 0, "z")]  # bests taken before any move
    assert {p.id for p in database.islands[1].elites()} == {"x"}  # x replaced the weaker y
    assert {p.id for p in database.islands[2].elites()} == {"z", "y"}  # y took an empty cell
    assert database.migrations == 3


def test_lineage_runs_from_the_root_to_the_program():
    database = ProgramDatabase(islands=1)
    database.add(program("root", 0.0))
    database.add(program("child", 0.2, parent="root"), island=0)
    database.add(program("grandchild", 0.4, parent="child"), island=0)
    assert [p.id for p in database.lineage(database.programs["grandchild"])] == ["root", "child", "grandchild"]


# ------------------------------------------------------------------ features
def test_features_are_the_most_exploited_member_and_a_size_bin():
    members = ["p0", "p1", "p2"]
    assert behaviour_features("x" * 100, {"p0": 1.0, "p1": 3.0, "p2": 3.0}, members) == (1, 0)
    assert behaviour_features("x" * 1500, {}, members) == (-1, 2)
    assert [size_bin("x" * n) for n in (512, 513, 1024, 4096, 4097)] == [0, 1, 1, 3, 4]
    assert describe_features((1, 4), ["rock", "cycle"]) == "beats cycle most, size >4096"


# ------------------------------------------------------------------ children from LLM replies
PARENT = toy_policy(0.0)


def test_search_replace_edits_make_the_child():
    reply = "Stronger.\n<<<<<<< SEARCH\nSTRENGTH = 0.0\n=======\nSTRENGTH = 0.7\n>>>>>>> REPLACE\n"
    child = child_from_reply(PARENT, reply)
    assert child.kind == "edit" and child.failure is None
    assert child.source == PARENT.replace("STRENGTH = 0.0", "STRENGTH = 0.7")


def test_edits_that_do_not_apply_fall_back_to_the_full_module():
    reply = (
        "<<<<<<< SEARCH\nSTRENGTH = 9.9\n=======\nSTRENGTH = 0.7\n>>>>>>> REPLACE\n\n"
        f"```python\n{toy_policy(0.4)}```\n"
    )
    child = child_from_reply(PARENT, reply)
    assert child.kind == "rewrite" and strength(child.source) == 0.4
    assert "SEARCH text not found" in child.description


@pytest.mark.parametrize(
    "reply, failure",
    [
        ("I like it as it is.", "edits did not apply (the reply has no SEARCH/REPLACE blocks) and no full module"),
        ("<<<<<<< SEARCH\nSTRENGTH = 0.0\n=======\nimport os\nSTRENGTH = 0.0\n>>>>>>> REPLACE\n", "invalid code"),
        ("<<<<<<< SEARCH\nSTRENGTH = 0.0\n=======\nSTRENGTH = 0.0  \n>>>>>>> REPLACE\n", "leaves the parent as it was"),
    ],
)
def test_unusable_replies_give_no_child_and_say_why(reply, failure):
    child = child_from_reply(PARENT, reply)
    assert child.source is None and failure in child.failure


# ------------------------------------------------------------------ the offline oracle
def test_offline_evolution_improves_on_the_population_and_names_its_root_as_parent():
    oracle = make_oracle("evolve", {"budget": 24, "game_seeds": False})

    proposal = oracle.propose(toy_context())

    summary = oracle.last_search
    assert summary.best_seed_fitness == 0.0 and summary.champion_fitness > 0.0
    assert strength(proposal.source) == pytest.approx(summary.champion_fitness)
    assert summary.children == 24 and summary.llm_calls == 0 and proposal.llm_calls == []
    assert proposal.oracle == "evolve" and proposal.parent == "p0"
    assert proposal.source.startswith("# Evolved offline by the `evolve` oracle")
    assert "Lineage: member:p0" in proposal.rationale and "ast: constant" in proposal.rationale


def test_offline_evolution_is_deterministic_given_the_seed():
    def run(seed: int):
        oracle = make_oracle("evolve", {"budget": 16, "islands": 3, "children": 2})
        proposal = oracle.propose(toy_context(seed=seed))
        return proposal.source, proposal.rationale, sorted(oracle.last_database.programs)

    assert run(5) == run(5)


class HalfFailingOperator:
    """A stand-in operator: odd children fail, even ones add 0.1 to the parent's strength."""

    name = "half-failing"
    uses_llm = False

    def mutate_batch(self, requests, context):
        results = []
        for index, request in enumerate(requests):
            if index % 2:
                results.append(MutationResult(None, "stub", failure="stub failure"))
            else:
                child = toy_policy(round(strength(request.parent.source) + 0.1, 6))
                results.append(MutationResult(child, "stub", "plus 0.1"))
        return results


def test_the_operator_is_pluggable_and_game_seeds_join_the_database():
    oracle = EvolutionOracle(HalfFailingOperator(), EvolutionSettings(budget=6, islands=1, children=2), name="evolve")

    proposal = oracle.propose(toy_context())

    programs = oracle.last_database.programs
    assert {"member:p0", "seed:weak"} <= set(programs)  # the population and the game's seeds
    assert oracle.last_search.failures == 3 and oracle.last_search.children == 6
    assert "Failures: g1.0.1: stub failure; g2.0.1: stub failure; g3.0.1: stub failure" in proposal.rationale
    assert strength(proposal.source) == pytest.approx(0.3)  # three generations of +0.1
    lineage = oracle.last_database.lineage(programs["g3.0.0"])
    assert [p.id for p in lineage] == ["member:p0", "g1.0.0", "g2.0.0", "g3.0.0"]


class EchoOperator:
    """A stand-in operator whose children are copies of their parents (or LLM errors)."""

    name = "echo"

    def __init__(self, uses_llm: bool, error: Exception | None = None) -> None:
        self.uses_llm = uses_llm
        self.error = error

    def mutate_batch(self, requests, context):
        if self.error is not None:
            return [MutationResult(None, "edit", failure=f"LLM error: {self.error}", error=self.error) for _ in requests]
        return [MutationResult(request.parent.source, "echo") for request in requests]


def test_a_search_that_finds_nothing_new_ends_offline_runs_and_fails_llm_attempts():
    settings = EvolutionSettings(budget=4, game_seeds=False)
    with pytest.raises(SearchExhausted, match="none of 4 mutations gave a new program .*4 duplicates") as raised:
        EvolutionOracle(EchoOperator(uses_llm=False), settings, name="evolve").propose(toy_context())
    assert isinstance(raised.value, OracleExhausted)  # the engine ends the run normally
    with pytest.raises(NoUsableCandidate, match="none of 4 mutations"):
        EvolutionOracle(EchoOperator(uses_llm=True), settings, name="llm-evolve").propose(toy_context())
    down = LLMError("unreachable", "LLM server at http://127.0.0.1:9/v1 refused the connection")
    with pytest.raises(LLMError, match="refused the connection"):
        EvolutionOracle(EchoOperator(uses_llm=True, error=down), settings, name="llm-evolve").propose(toy_context())


def test_the_best_programs_carry_over_into_the_next_search():
    oracle = make_oracle("evolve", {"budget": 12, "game_seeds": False, "carry_over": 3})
    first = oracle.propose(toy_context(iteration=1))
    population = [
        PolicyRecord("p0", "zero", toy_policy(0.0), "seed"),
        PolicyRecord("p1", "evolved", first.source, "evolve"),
    ]

    second = oracle.propose(toy_context(population, [0.0, 1.0], iteration=2))

    assert any(program_id.startswith("earlier:") for program_id in oracle.last_database.programs)
    # The first champion is a member now: the search never proposes a member again.
    assert strength(second.source) != strength(first.source)


def test_code_the_reviewer_rejected_is_not_proposed_again():
    first = make_oracle("evolve", {"budget": 12, "game_seeds": False}).propose(toy_context())

    # The same search (same seed), but the reviewer has rejected its champion (header comment and all).
    second = make_oracle("evolve", {"budget": 12, "game_seeds": False}).propose(
        toy_context(rejections=[(first, "not different enough")])
    )

    assert code_key(second.source) != code_key(first.source)


def test_evolve_options_are_checked_and_llm_settings_ignored():
    oracle = make_oracle("evolve", {"model": "gpt-x", "base_url": "http://127.0.0.1:9/v1", "islands": 3})
    assert oracle.settings.islands == 3 and oracle.operator.name == "ast"
    with pytest.raises(ConfigError, match="unknown option\\(s\\) island "):
        make_oracle("evolve", {"island": 3})
    with pytest.raises(ConfigError, match="exploitation must be at most 1.0"):
        make_oracle("evolve", {"exploitation": 2})


def test_the_engine_runs_offline_evolution_iterations():
    engine = Engine(
        config=RunConfig(game="toy", oracle="evolve", iterations=2, oracle_options={"budget": 8}),
        spec=ToySpec(),
        oracle=make_oracle("evolve", {"budget": 8}),
        reviewer=AutoReviewer(),
        evaluator=ToyEvaluator(),
        meta_solve=best_member_solve,
        versions={"csro_tui": "test"},
    )
    outcome = engine.run()
    assert outcome.reason == "completed"
    added = [m for m in outcome.state.population if m.origin == "evolve"]
    assert len(added) == 2
    assert strength(added[0].source) > 0 and added[1].source != added[0].source


# ------------------------------------------------------------------ RRPS in the sandbox
def test_offline_evolution_beats_constant_rock_on_rrps():
    """Population = [constant rock]; the search starts from it alone (no other seeds)."""
    spec = get_game("rrps(num_repetitions=100)")
    rock = spec.seed_policies()["constant_rock"]
    population = [PolicyRecord("p0", "constant_rock", rock, "seed")]
    gate = Gate(GameEvaluator(spec, workers=1), GateSettings(seed=0, smoke_episodes=2))
    context = OracleContext(
        spec=spec, iteration=1, population=population, meta_strategy=[1.0],
        preview=lambda source: gate.check(source, population, {"p0": 1.0}, key="rrps-evolve"), seed=0,
    )
    oracle = make_oracle("evolve", {"budget": 8, "game_seeds": False, "finalists": 2, "reevaluation_episodes": 4})

    proposal = oracle.propose(context)

    summary = oracle.last_search
    assert summary.best_seed_fitness == 0.0  # rock against rock: every throw a tie
    assert summary.champion_fitness >= 90.0 and summary.champion_reevaluated >= 90.0
    # Checked again with seeds the search never used.
    check = play_match(spec, CodePolicy("evolved", proposal.source), CodePolicy("rock", rock), episodes=6, seed=987)
    assert check.failure is None and check.mean >= 90.0


def test_a_champion_from_a_game_seed_says_so_and_an_unchanged_seed_keeps_its_name():
    """Issue 36: evolve's lineage was lost: "No parent" while the rationale named seed:cycle,
    and a game seed proposed verbatim was called evolve-N."""
    strong = {"strong": toy_policy(0.5)}
    context = toy_context()
    context.spec.seeds = strong  # a game seed better than the only member, not a member itself
    unchanged = EvolutionOracle(EchoOperator(uses_llm=False), EvolutionSettings(budget=4, islands=1, children=2),
                                name="evolve").propose(context)
    assert unchanged.name == "strong" and unchanged.parent is None
    assert unchanged.rationale.startswith("This is the game's seed policy strong, unchanged")

    context = toy_context()
    context.spec.seeds = strong
    derived = EvolutionOracle(HalfFailingOperator(), EvolutionSettings(budget=4, islands=1, children=2),
                              name="evolve").propose(context)
    assert derived.name == "evolve-1" and strength(derived.source) > 0.5
    assert derived.rationale.startswith("Derived from the game's seed policy strong")
