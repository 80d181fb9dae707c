"""The gate knows what a best response is (issue 14).

`--review auto` accepts a proposal only if its expected payoff against the
meta-strategy clears the threshold (by a noise margin where payoffs are
sampled) and it repeats no member and no earlier rejected proposal: same
normalized code, or same behaviour (the same table in exact games, the same
payoff row within noise in sampled ones).  The Kuhn tests use the real
sandbox and exact evaluation; proposals are fixed test code, no model.
"""

from __future__ import annotations

import dataclasses
import math

import pytest

from csro_tui.config import RunConfig
from csro_tui.engine.duplicates import KnownPolicy, find_duplicate, same_payoff_row
from csro_tui.same_code import normalized_code
from csro_tui.engine.evaluator import GameEvaluator
from csro_tui.engine.gate import expected_stderr, known_policies
from csro_tui.engine.setup import new_engine
from csro_tui.games.registry import get_game
from csro_tui.records import Preview, Proposal
from csro_tui.oracles.best_response import BestResponseOracle
from csro_tui.reviewers import AutoReviewer
from csro_tui.sessions.state import fold
from csro_tui.sessions.store import SessionStore

KUHN = get_game("kuhn_poker")
ALWAYS_BET = KUHN.seed_policies()["always_bet"]

# A model's typical copy of a seed: its own docstring and comments, other spacing.
ALWAYS_BET_COPY = '''"""My aggressive policy: written for this task."""
BET = 1  # the bet action


class Policy:
    def __init__(self, player, game):
        # remember the seat
        self.player = player
    def act(self, obs):
        """Bet."""
        return BET
'''
# Different code, the same behaviour: the largest legal action is Bet everywhere in Kuhn.
ALWAYS_BET_AGAIN = '''class Policy:
    def __init__(self, player, game):
        pass

    def act(self, obs):
        return max(obs["legal_actions"])
'''
ALWAYS_PASS = '''class Policy:
    def __init__(self, player, game):
        pass

    def act(self, obs):
        return 0
'''


def test_normalized_code_ignores_docstrings_comments_and_formatting_only():
    assert normalized_code(ALWAYS_BET) == normalized_code(ALWAYS_BET_COPY)
    assert normalized_code(ALWAYS_BET) != normalized_code(ALWAYS_BET_AGAIN)
    assert normalized_code(ALWAYS_BET.replace("BET = 1", "BET = 0")) != normalized_code(ALWAYS_BET)
    assert normalized_code("class Policy(:\n") is None


def test_exact_behaviour_duplicates_come_from_the_sandboxed_tables():
    evaluator = GameEvaluator(KUHN, workers=1)
    known = [KnownPolicy("p0", "member always_bet (p0)", ALWAYS_BET)]
    found = find_duplicate(ALWAYS_BET_AGAIN, known, table_of=evaluator.policy_table)
    assert found is not None and found.of == "p0" and "same behaviour" in found.reason
    assert find_duplicate(ALWAYS_PASS, known, table_of=evaluator.policy_table) is None
    copy = find_duplicate(ALWAYS_BET_COPY, known, table_of=evaluator.policy_table)
    assert copy is not None and "same code" in copy.reason


def test_sampled_rows_are_duplicates_only_within_noise_and_when_informative():
    member = KnownPolicy("p1", "member m (p1)", "x", {"p0": (0.5, 0.05), "p2": (-0.3, 0.05)})
    # From 2 episodes a standard error is itself a rough estimate: the bound widens (Student's t).
    few = KnownPolicy("p1", "m", "x", {"p0": (5.0, 0.05, 4), "p2": (-0.3, 0.05, 4)})
    assert same_payoff_row({"p1": (0.3, 0.05, 4), "p0": (5.3, 0.05, 4), "p2": (-0.3, 0.05, 4)}, few)
    assert not same_payoff_row({"p1": (0.3, 0.05), "p0": (0.9, 0.05), "p2": (-0.3, 0.05)}, member)
    # Ties the member itself, matches its row within noise.
    assert same_payoff_row({"p1": (0.02, 0.05), "p0": (0.48, 0.05), "p2": (-0.25, 0.05)}, member)
    # Beats the member clearly: not the same policy.
    assert not same_payoff_row({"p1": (0.6, 0.05), "p0": (0.48, 0.05), "p2": (-0.25, 0.05)}, member)
    # One row entry far outside the noise.
    assert not same_payoff_row({"p1": (0.0, 0.05), "p0": (0.1, 0.05), "p2": (-0.25, 0.05)}, member)
    # Every entry ~0 (e.g. only random opponents): says nothing about sameness.
    flat = KnownPolicy("p1", "m", "x", {"p0": (0.0, 0.05), "p2": (0.01, 0.05)})
    assert not same_payoff_row({"p1": (0.0, 0.05), "p0": (0.01, 0.05), "p2": (0.0, 0.05)}, flat)
    # Too few shared opponents.
    assert not same_payoff_row({"p1": (0.0, 0.05), "p0": (0.5, 0.05)}, member)


def test_the_improvement_rule_uses_the_noise_margin():
    exact_zero = Preview(expected_payoff=0.0, per_member={"p0": 0.0})
    assert "no improvement" in exact_zero.shortfall(0.0)
    assert Preview(expected_payoff=0.01, per_member={"p0": 0.01}).shortfall(0.0) is None
    # Sampled: +0.05 with a standard error of 0.04 is within noise of 0 (margin 2 se = 0.08).
    noisy = Preview(expected_payoff=0.05, per_member={"p0": 0.05}, stderr={"p0": 0.04}, expected_stderr=0.04)
    assert "noise margin 0.080" in noisy.shortfall(0.0)
    sure = Preview(expected_payoff=0.2, per_member={"p0": 0.2}, stderr={"p0": 0.04}, expected_stderr=0.04)
    assert sure.shortfall(0.0) is None
    # From five seat-swapped pairs the margin is Student's t (4 degrees of freedom) at the same
    # one-sided level as z = 2: 2.87 standard errors, so +0.10 is not enough there.
    few = Preview(expected_payoff=0.10, per_member={"p0": 0.10}, stderr={"p0": 0.04}, expected_stderr=0.04, pairs=5)
    assert few.standard_errors() == pytest.approx(2.869, abs=1e-3)
    assert "noise margin 0.115 (2.87 standard errors)" in few.shortfall(0.0)
    assert dataclasses.replace(few, pairs=50).shortfall(0.0) is None  # 2.05 standard errors: 0.082
    duplicate = Preview(expected_payoff=0.5, per_member={}, duplicate_of="p0", duplicate_reason="same code as p0")
    assert duplicate.shortfall(0.0) == "duplicate: same code as p0"
    # Weighted standard error: weights renormalised over the measured members.
    assert expected_stderr({"a": 0.1, "b": 0.2}, {"a": 0.5, "b": 0.5}) == pytest.approx(math.sqrt(0.05**2 + 0.1**2))


class ListOracle:
    """Proposes the given sources in order, then exact best responses."""

    name = "listed"

    def __init__(self, sources):
        self.sources = list(sources)
        self.best = BestResponseOracle()
        self.contexts = []

    def propose(self, context):
        self.contexts.append(context)
        if self.sources:
            return Proposal(source=self.sources.pop(0), oracle=self.name, name=f"listed-{len(self.contexts)}")
        return self.best.propose(context)


def test_auto_review_on_kuhn_rejects_copies_and_non_improvements_and_says_the_run_stalled(tmp_path):
    store = SessionStore(tmp_path)
    oracle = ListOracle([ALWAYS_BET_COPY, ALWAYS_BET_AGAIN, ALWAYS_PASS])
    engine = new_engine(
        RunConfig(game="kuhn_poker", oracle="listed", iterations=2, max_attempts=3, workers=1),
        store=store, reviewer=AutoReviewer(), spec=KUHN, oracle=oracle,
        evaluator=GameEvaluator(KUHN, workers=1), session_id="gate",
    )
    outcome = engine.run()
    assert outcome.reason == "completed"
    state = fold(store.read("gate").events)
    first = [state.proposals[pid] for pid in state.iterations[1].proposals]
    assert [p.decision.action for p in first] == ["reject", "reject", "reject"]
    seed_ids = {m.name: m.id for m in state.population}
    copy, again, passing = (p.preview.preview for p in first)
    assert copy.duplicate_of == seed_ids["always_bet"] and "same code" in copy.duplicate_reason
    assert again.duplicate_of == seed_ids["always_bet"] and "same behaviour" in again.duplicate_reason
    assert passing.duplicate_of is None and passing.expected_payoff <= 0
    assert "no improvement" in first[2].decision.reason
    # The reasons reach the oracle, and the previews' duplicate fields survive the log.
    assert [reason for _, reason in oracle.contexts[2].rejections][:2] == [
        first[0].decision.reason, first[1].decision.reason]
    finished = [e for e in state.events if e.TYPE == "iteration_finished" and e.iteration >= 1]
    assert finished[0].progress.startswith("not improving: no policy accepted in the last 1 iteration")
    # Iteration 2: the exact best response beats the meta-strategy and joins.
    second = state.proposals[state.iterations[2].proposals[-1]]
    assert second.decision.action == "accept" and second.preview.preview.expected_payoff > 0
    assert finished[1].progress == ""
    # What a later candidate is compared with: members and rejected proposals, newest first.
    known = known_policies(state)
    assert [k.id for k in known if not k.is_member][:3] == [p.id for p in reversed(first)]


RRPS_CLONE = '''import random


class Policy:
    """Counts the opponent's moves and beats the favourite (renamed, same play)."""

    def __init__(self, player, game):
        self.r = random.Random(game["seed"])
        self.c = [0, 0, 0]
        self.n = 0

    def act(self, obs):
        history = obs["opp_moves"]
        for m in history[self.n:]:
            self.c[m] += 1
        self.n = len(history)
        top = max(self.c)
        if top == 0:
            return self.r.randrange(3)
        tied = [m for m in range(3) if self.c[m] == top]
        guess = self.r.choice(tied)
        return (guess + 1) % 3
'''


def test_sampled_behaviour_duplicates_are_payoff_rows_equal_within_noise():
    from csro_tui.records import MatchJob, PolicyRecord
    from csro_tui.engine.gate import Gate, GateSettings

    spec = get_game("rrps(num_repetitions=200)")
    seeds = spec.seed_policies()
    population = [PolicyRecord(f"p{i}", name, seeds[name], "seed")
                  for i, name in enumerate(["frequency_counter", "beat_last", "constant_rock", "cycle"])]
    evaluator = GameEvaluator(spec, workers=1)
    outcomes = evaluator.run([MatchJob(a, b, 7 + i, 8) for i, (a, b) in enumerate(
        (a, b) for a in population for b in population if a.id < b.id)])
    pairs = [(a, b) for a in population for b in population if a.id < b.id]
    rows = {m.id: {} for m in population}
    for (a, b), outcome in zip(pairs, outcomes):
        rows[a.id][b.id] = (outcome.mean, outcome.stderr)
        rows[b.id][a.id] = (-outcome.mean, outcome.stderr)
    known = [KnownPolicy(m.id, f"member {m.name} ({m.id})", m.source, rows[m.id]) for m in population]
    gate = Gate(evaluator, GateSettings(smoke_episodes=8))
    weights = {m.id: 0.25 for m in population}

    clone = gate.check(RRPS_CLONE, population, weights, key="clone", known=known)
    assert clone.duplicate_of == "p0" and "same payoffs against every member within noise" in clone.duplicate_reason
    assert clone.stderr and clone.expected_stderr >= 0
    different = gate.check(seeds["markov_predictor"], population, weights, key="other", known=known)
    assert different.duplicate_of is None


def test_sampled_noise_is_measured_over_seat_swapped_pairs():
    from types import SimpleNamespace

    from csro_tui.engine.gate import sampled_stderr

    # Pairs share a seed and return the same value in RRPS: 2 independent samples, not 4.
    paired = SimpleNamespace(returns=[-28.0, -28.0, -17.0, -17.0], stderr=3.18)
    assert sampled_stderr(paired) == pytest.approx(5.5)  # sd(-28, -17) / sqrt(2)
    # One pair cannot estimate its own noise: the outcome's figure is kept.
    assert sampled_stderr(SimpleNamespace(returns=[4.0, 4.0], stderr=0.0)) == 0.0


def _metrics_state(values, name="exploitability"):
    """A SessionState stand-in holding one headline figure per iteration 0..n."""
    from types import SimpleNamespace

    from csro_tui.sessions.state import SessionState

    state = SessionState.__new__(SessionState)
    state.iterations = {n: SimpleNamespace(accepted=f"p{n}") for n in range(len(values))}
    state.population = [SimpleNamespace(iteration=n) for n in range(len(values))]
    state.metrics = [SimpleNamespace(iteration=n, value=v) for n, v in enumerate(values)]
    return state, name


def test_progress_note_waits_for_a_best_value_to_stand(monkeypatch):
    from csro_tui.engine import gate

    state, name = _metrics_state([0.33, 0.25, 0.17, 0.25, 0.07, 0.14, 0.20, 0.10])
    monkeypatch.setattr(gate, "headline_metric", lambda m: (name, m.value))
    # PSRO's usual ups and downs are not "not improving".
    assert [gate.progress_note(state, n) for n in range(1, 7)] == [""] * 6
    # Iteration 7: the best (0.07 at iteration 4) has stood for 3 iterations.
    note = gate.progress_note(state, 7)
    assert note.startswith("not improving: exploitability 0.1000; the best, 0.0700")
    assert "3 iterations ago" in note


def test_a_sampled_preview_measures_its_own_noise_by_default():
    """The default sampled preview plays five seat-swapped pairs, not the smoke run's one.

    Found with the local model: a uniform-random RRPS policy scored +7.0 on
    one smoke pair against beat_last, with no standard error to doubt it, and
    was accepted; twenty episodes gave -0.5.  Uniform random has expected
    payoff 0 against anything, so the gate must never call it an improvement.
    """
    from csro_tui.engine.gate import DEFAULT_SAMPLED_PREVIEW_EPISODES, Gate, GateSettings
    from csro_tui.records import PolicyRecord

    spec = get_game("rrps(num_repetitions=100)")
    seeds = spec.seed_policies()
    population = [PolicyRecord("p0", "beat_last", seeds["beat_last"], "seed")]
    gate = Gate(GameEvaluator(spec, workers=1), GateSettings(seed=1))
    assert gate.preview_episodes(2) == DEFAULT_SAMPLED_PREVIEW_EPISODES == 10
    assert Gate(gate.evaluator, GateSettings(preview_episodes=4)).preview_episodes(2) == 4
    for key in ("a", "b", "c"):
        preview = gate.check(seeds["uniform_random"], population, {"p0": 1.0}, key=key)
        assert preview.stderr["p0"] > 0, "ten episodes of a random policy measure their noise"
        assert preview.pairs == 5
        assert preview.shortfall() is not None, (preview.expected_payoff, preview.expected_stderr)


def test_a_preview_keeps_its_pairs_in_the_log():
    from csro_tui.sessions.events import _preview_from_json, _to_json

    preview = Preview(expected_payoff=0.3, per_member={"p0": 0.3}, stderr={"p0": 0.1}, expected_stderr=0.1, pairs=5)
    again = _preview_from_json(_to_json(preview))
    assert again.pairs == 5 and again.improvement_margin() == preview.improvement_margin()
    older = {k: v for k, v in _to_json(preview).items() if k != "pairs"}  # a log from before pairs were recorded
    assert _preview_from_json(older).standard_errors() == 2.0


def test_validation_shows_how_long_the_candidates_calls_took_and_flags_a_slow_one():
    """The smoke run measures act in the candidate's host: a fast seed reads
    'act: ... per call on average, ... at most'; one that spends ~10 ms per
    act (the contract: well under 1 ms) is flagged 'slow:'."""
    from csro_tui.engine.gate import Gate, GateSettings
    from csro_tui.records import PolicyRecord

    spec = get_game("rrps(num_repetitions=30)")
    seeds = spec.seed_policies()
    population = [PolicyRecord("p0", "beat_last", seeds["beat_last"], "seed")]
    gate = Gate(GameEvaluator(spec, workers=1), GateSettings(seed=1))
    fast = gate.validate("fast", seeds["frequency_counter"], population)
    assert fast.valid and fast.timing.startswith("act: ") and "per call on average" in fast.timing
    assert "(60 calls)" in fast.timing and not fast.timing.startswith("slow")
    slow_source = (
        "class Policy:\n    def __init__(self, player, game):\n        pass\n\n"
        "    def act(self, obs):\n        total = 0\n        for step in range(200_000):\n"
        "            total += step\n        return total % 3\n"
    )
    slow = gate.validate("slow", slow_source, population)
    assert slow.valid and slow.timing.startswith("slow: act: "), slow.timing


def test_validation_in_an_exact_game_shows_the_timing_of_tabularising():
    from csro_tui.engine.gate import Gate, GateSettings
    from csro_tui.records import PolicyRecord

    seeds = KUHN.seed_policies()
    population = [PolicyRecord("p0", "uniform", seeds["uniform"], "seed")]
    gate = Gate(GameEvaluator(KUHN, workers=1), GateSettings(seed=1))
    # A fresh source (a comment makes its hash new): asked through its sandbox, not a cache.
    validation = gate.validate("exact", seeds["card_rules"] + "\n# timing test\n", population)
    assert validation.valid and validation.timing.startswith("act: "), validation.timing


# Prints 2 MB over the smoke run, its first line with an escape sequence that would retitle a terminal.
PRINTING_SOURCE = (
    "class Policy:\n    def __init__(self, player, game):\n        self.n = 0\n"
    "        print('hello \\x1b]2;pwned\\x07from', player)\n\n"
    "    def act(self, obs):\n        self.n += 1\n        print('x' * 70_000)\n        return 0\n"
)


def test_validation_says_what_the_candidate_printed_and_that_it_is_discarded():
    """Issue 29 item 11: a policy's print output was dropped without a word.
    The smoke run counts it in the candidate's host; the review line says how
    much, that it is discarded, and quotes the first lines cleaned of escape
    sequences.  A silent policy gets no such line."""
    from csro_tui.engine.gate import Gate, GateSettings
    from csro_tui.oracles.base import PolicyRecord
    from csro_tui.tui.adapt import review_info

    spec = get_game("rrps(num_repetitions=30)")
    seeds = spec.seed_policies()
    population = [PolicyRecord("p0", "beat_last", seeds["beat_last"], "seed")]
    gate = Gate(GameEvaluator(spec, workers=1), GateSettings(seed=1))
    silent = gate.validate("silent", seeds["frequency_counter"], population)
    assert silent.valid and silent.printed == ""
    loud = gate.validate("loud", PRINTING_SOURCE, population)
    assert loud.valid, loud.summary()
    # 30 acts per episode, smoke episodes of the candidate's seat: at least 2 MB in all.
    figure = int(loud.printed.split("printed ", 1)[1].split(" bytes", 1)[0].replace(",", ""))
    assert figure >= 2_000_000, loud.printed
    assert "discarded" in loud.printed and '"hello \\x1b]2;pwned\\x07from 0"' in loud.printed, loud.printed
    assert "\x1b" not in loud.printed  # shown visibly, never raw (issue 35)

    from csro_tui.reviewers import ReviewRequest

    request = ReviewRequest(proposal_id="p1", proposal=Proposal(source=PRINTING_SOURCE, oracle="test", name="loud"),
                            iteration=1, attempt=1, validation=loud, preview=None)
    info = review_info(request)
    assert f"warning: {loud.printed}" in info.validation


def test_a_seat_fixed_outcome_keeps_the_referees_per_episode_error():
    """Two populations play seat-fixed episodes: consecutive returns are not seat-swapped
    pairs, so pairing them would measure the wrong noise."""
    from types import SimpleNamespace

    from csro_tui.engine.gate import sampled_stderr

    returns = [1.0, 1.0, -1.0, -1.0, 1.0, 1.0]
    swapped = SimpleNamespace(returns=returns, stderr=0.123, seat=None)
    fixed = SimpleNamespace(returns=returns, stderr=0.123, seat=0)
    assert sampled_stderr(fixed) == 0.123
    assert sampled_stderr(swapped) != 0.123  # paired over the returns
