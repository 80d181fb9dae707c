"""The seed oracle (best remaining seed) and the human oracle (a policy file)."""

from __future__ import annotations

import pytest

from csro_tui.errors import ConfigError, CsroError
from csro_tui.evaluation.exact import exact_payoff
from csro_tui.evaluation.participants import CodePolicy
from csro_tui.games.kuhn import KuhnSpec
from csro_tui.oracles.base import OracleContext
from csro_tui.records import PolicyRecord, Preview, Proposal
from csro_tui.oracles.human import HumanOracle, make_human_oracle
from csro_tui.oracles.registry import finished_error_types, make_oracle
from csro_tui.oracles.seed import SeedOracle, SeedsExhausted, make_seed_oracle
from csro_tui.sandbox.failures import FailureCategory, PolicyFailure


def fixed_action_policy(action: int, when_facing_bet: int) -> str:
    return f'''
class Policy:
    def __init__(self, player, game):
        self.player = player

    def act(self, obs):
        return {when_facing_bet} if obs["to_call"] > 0 else {action}
'''


# Kuhn seeds whose strengths differ widely, so sampled payoffs rank them too.
SEEDS = {
    "always_bet": fixed_action_policy(1, 1),
    "always_pass": fixed_action_policy(0, 0),
    "card_sense": '''
class Policy:
    def __init__(self, player, game):
        self.player = player

    def act(self, obs):
        if obs["card"] == "K":
            return 1
        if obs["card"] == "Q":
            return 1 if obs["to_call"] > 0 and obs["pot"] < 4 else 0
        return 0
''',
}


class SeededKuhn(KuhnSpec):
    """Kuhn poker with the test's seed policies."""

    def __init__(self, seeds: dict[str, str]) -> None:
        super().__init__()
        self._seeds = dict(seeds)

    def seed_policies(self) -> dict[str, str]:
        return dict(self._seeds)


def record(name: str, source: str, origin: str = "seed") -> PolicyRecord:
    return PolicyRecord(id=name, name=name, source=source, origin=origin)


def context(spec, population, weights, preview=None, iteration=1, rejections=()) -> OracleContext:
    return OracleContext(
        spec=spec,
        iteration=iteration,
        population=list(population),
        meta_strategy=list(weights),
        preview=preview,
        rejections=list(rejections),
    )


def scripted_preview(payoffs: dict[str, float], failing: set[str] = frozenset()):
    """A preview that reports given payoffs by source, and records what it saw."""
    seen: list[str] = []

    def preview(source: str) -> Preview:
        name = next(n for n, s in SEEDS.items() if s == source)
        seen.append(name)
        if name in failing:
            failure = PolicyFailure(FailureCategory.CRASH, "boom", policy=name)
            return Preview(expected_payoff=0.0, per_member={}, failure=failure)
        return Preview(expected_payoff=payoffs[name], per_member={})

    preview.seen = seen
    return preview


# ---------------------------------------------------------------- seed oracle


def test_picks_the_remaining_seed_with_the_highest_preview():
    spec = SeededKuhn(SEEDS)
    preview = scripted_preview({"always_bet": 0.2, "card_sense": 0.5})
    population = [record("always_pass", SEEDS["always_pass"])]
    proposal = SeedOracle().propose(context(spec, population, [1.0], preview))

    assert proposal.name == "card_sense"
    assert proposal.source == SEEDS["card_sense"]
    assert proposal.oracle == "seed"
    assert sorted(preview.seen) == ["always_bet", "card_sense"]  # not the member
    assert "+0.5000" in proposal.rationale and "always_bet +0.2000" in proposal.rationale


def test_a_seed_counts_as_in_by_its_code_or_by_its_seed_name():
    spec = SeededKuhn(SEEDS)
    preview = scripted_preview({"always_bet": 0.9, "always_pass": 0.1, "card_sense": 0.5})
    population = [
        record("edited", SEEDS["always_bet"], origin="human"),  # same code, other name
        record("card_sense", "class Policy: ...", origin="seed"),  # edited on acceptance
    ]
    proposal = SeedOracle().propose(context(spec, population, [0.5, 0.5], preview))
    assert proposal.name == "always_pass"


def test_a_seed_whose_preview_fails_is_passed_over():
    spec = SeededKuhn(SEEDS)
    preview = scripted_preview({"always_bet": 0.1, "card_sense": 0.9}, failing={"card_sense"})
    population = [record("always_pass", SEEDS["always_pass"])]
    proposal = SeedOracle().propose(context(spec, population, [1.0], preview))
    assert proposal.name == "always_bet"
    assert "card_sense (failed: crash: boom" in proposal.rationale


def test_equal_previews_go_to_the_first_name():
    spec = SeededKuhn(SEEDS)
    preview = scripted_preview({"always_bet": 0.3, "always_pass": 0.3, "card_sense": 0.3})
    proposal = SeedOracle().propose(context(spec, [record("x", "class Policy: ...", "human")], [1.0], preview))
    assert proposal.name == "always_bet"


def test_an_empty_population_gets_the_first_seed_by_name():
    spec = SeededKuhn(SEEDS)
    preview = scripted_preview({})
    proposal = SeedOracle().propose(context(spec, [], [], preview))
    assert proposal.name == "always_bet"
    assert preview.seen == []


def test_when_every_seed_is_in_the_oracle_says_it_has_finished():
    spec = SeededKuhn(SEEDS)
    population = [record(name, source) for name, source in SEEDS.items()]
    with pytest.raises(SeedsExhausted, match="all 3 seed policies") as raised:
        SeedOracle().propose(context(spec, population, [1 / 3] * 3, scripted_preview({})))
    assert isinstance(raised.value, finished_error_types())


def test_picks_the_best_remaining_seed_by_exact_preview():
    """With a real (exact, sandboxed) preview the choice is the true best response among seeds."""
    spec = SeededKuhn(SEEDS)
    population = [record("always_bet", SEEDS["always_bet"])]

    def exact_preview(source: str) -> Preview:
        payoff = exact_payoff(spec, CodePolicy("candidate", source), CodePolicy("m", SEEDS["always_bet"]))
        return Preview(expected_payoff=payoff.mean, per_member={"always_bet": payoff.mean})

    proposal = SeedOracle().propose(context(spec, population, [1.0], exact_preview))
    remaining = ["always_pass", "card_sense"]
    truth = {
        name: exact_payoff(spec, CodePolicy(name, SEEDS[name]), CodePolicy("m", SEEDS["always_bet"])).mean
        for name in remaining
    }
    assert proposal.name == max(remaining, key=truth.get)


def test_without_a_preview_seeds_are_ranked_by_played_matches():
    spec = SeededKuhn(SEEDS)
    population = [record("always_pass", SEEDS["always_pass"])]
    proposal = make_seed_oracle({"episodes": 100}).propose(context(spec, population, [1.0]))
    remaining = ["always_bet", "card_sense"]
    truth = {
        name: exact_payoff(spec, CodePolicy(name, SEEDS[name]), CodePolicy("m", SEEDS["always_pass"])).mean
        for name in remaining
    }
    assert proposal.name == max(remaining, key=truth.get)
    assert "Others: card_sense" in proposal.rationale or "Others: always_bet" in proposal.rationale


def test_a_cancelled_seed_oracle_stops_before_previewing():
    spec = SeededKuhn(SEEDS)
    preview = scripted_preview({"always_bet": 0.2, "card_sense": 0.5})
    ctx = context(spec, [record("always_pass", SEEDS["always_pass"])], [1.0], preview)
    ctx.cancel.set()
    with pytest.raises(CsroError, match="cancelled"):
        SeedOracle().propose(ctx)
    assert preview.seen == []


def test_seed_factory_rejects_bad_episode_counts():
    with pytest.raises(ConfigError):
        make_seed_oracle({"episodes": 0})
    assert make_oracle("seed", {}).name == "seed"


# ---------------------------------------------------------------- human oracle


def test_human_oracle_proposes_the_file_and_rereads_it(tmp_path):
    path = tmp_path / "mine.py"
    path.write_text(SEEDS["always_bet"], encoding="utf-8")
    oracle = make_oracle("human", {"path": str(path)})
    spec = SeededKuhn(SEEDS)

    first = oracle.propose(context(spec, [], [], iteration=1))
    assert first.source == SEEDS["always_bet"]
    assert (first.oracle, first.name) == ("human", "mine-1")

    path.write_text(SEEDS["card_sense"], encoding="utf-8")  # edited between iterations
    second = oracle.propose(context(spec, [], [], iteration=2))
    assert second.source == SEEDS["card_sense"]
    assert second.name == "mine-2"


def test_human_oracle_notes_an_unchanged_rejected_file(tmp_path):
    path = tmp_path / "mine.py"
    path.write_text(SEEDS["always_bet"], encoding="utf-8")
    rejected = Proposal(source=SEEDS["always_bet"], oracle="human", name="mine-1")
    proposal = HumanOracle(path).propose(
        context(SeededKuhn(SEEDS), [], [], rejections=[(rejected, "too simple")])
    )
    assert "unchanged since its last rejection" in proposal.rationale


@pytest.mark.parametrize(
    "make_path, message",
    [
        (lambda tmp: tmp / "missing.py", "no such file"),
        (lambda tmp: tmp, "a directory"),
        (lambda tmp: _write(tmp / "empty.py", b"  \n"), "empty"),
        (lambda tmp: _write(tmp / "latin.py", b"caf\xe9 = 1\n"), "not UTF-8"),
    ],
)
def test_an_unreadable_policy_file_is_a_one_line_error(tmp_path, make_path, message):
    path = make_path(tmp_path)
    with pytest.raises(CsroError, match=message) as raised:
        HumanOracle(path).propose(context(SeededKuhn(SEEDS), [], []))
    assert "\n" not in str(raised.value)
    assert str(path) in str(raised.value)


def test_human_factory_needs_an_existing_file(tmp_path):
    with pytest.raises(ConfigError, match="path"):
        make_human_oracle({})
    with pytest.raises(ConfigError, match="does not exist"):
        make_human_oracle({"path": str(tmp_path / "typo.py")})


def _write(path, data: bytes):
    path.write_bytes(data)
    return path


def test_a_rejected_seed_is_not_proposed_again_and_the_next_best_is():
    spec = SeededKuhn(SEEDS)
    population = [record("always_bet", SEEDS["always_bet"])]
    preview = scripted_preview({"always_pass": 0.5, "card_sense": 0.25})
    first = SeedOracle().propose(context(spec, population, [1.0], preview))
    assert first.name == "always_pass"
    rejections = [(first, "not this one")]
    second = SeedOracle().propose(context(spec, population, [1.0], preview, rejections=rejections))
    assert second.name == "card_sense"
    rejections.append((second, "nor this"))
    with pytest.raises(SeedsExhausted, match="rejected earlier"):
        SeedOracle().propose(context(spec, population, [1.0], preview, rejections=rejections))
