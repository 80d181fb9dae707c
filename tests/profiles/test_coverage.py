"""Branches that never ran while a policy was profiled (issue 22's hint "branches that
never ran against any probe"): an instrumented copy of the code plays in the sandbox and
reports the outcomes of its conditions; line numbers stay the policy's own."""

from __future__ import annotations

import ast
import re

import pytest

from csro_tui.evaluation.participants import CodePolicy, resolve_participant
from csro_tui.games.registry import get_game
from csro_tui.profiles import compute
from csro_tui.profiles.compute import profile_policy
from csro_tui.profiles.coverage import instrument
from csro_tui.profiles.hints import profile_hints

KUHN_WITH_DEAD_CODE = '''class Policy:
    def __init__(self, player, game):
        self.player = player

    def act(self, obs):
        if obs["card"] == "A":  # Kuhn has no Ace
            return 1
        if obs["to_call"] > 0:
            return 1 if obs["card"] in ("Q", "K") else 0
        elif obs["card"] == "K":
            return 1
        else:
            return 0 if obs["pot"] < 100 else 1
'''

# The example: the counts are updated in a method the referee never calls,
# so `best == 0` is always true and the frequency counting after it never runs.
COUNTS_NEVER_UPDATED = '''import random


class Policy:
    def __init__(self, player, game):
        self.rng = random.Random(game["seed"])
        self.counts = [0, 0, 0]

    def update(self, obs, action):
        for move in obs["opp_moves"][-1:]:
            self.counts[move] += 1

    def act(self, obs):
        best = max(self.counts)
        if best == 0:
            return self.rng.randrange(3)
        favourites = [m for m in range(3) if self.counts[m] == best]
        return (self.rng.choice(favourites) + 1) % 3
'''

# The same, its counts updated from act: every branch runs.
COUNTS_UPDATED = '''import random


class Policy:
    def __init__(self, player, game):
        self.rng = random.Random(game["seed"])
        self.counts = [0, 0, 0]

    def act(self, obs):
        self.update(obs, None)
        return self.choose()

    def update(self, obs, action):
        for move in obs["opp_moves"][-1:]:
            self.counts[move] += 1

    def choose(self):
        best = max(self.counts)
        if best == 0:
            return self.rng.randrange(3)
        favourites = [m for m in range(3) if self.counts[m] == best]
        return (self.rng.choice(favourites) + 1) % 3
'''

CRASHES_ON_SCISSORS = '''class Policy:
    def __init__(self, player, game):
        pass

    def act(self, obs):
        if 2 in obs["opp_moves"][-1:]:
            raise RuntimeError("no plan for scissors")
        return 1 if obs["opp_moves"] else 0
'''

STATIC_ACT = '''class Policy:
    def __init__(self, player, game):
        pass

    @staticmethod
    def act(obs):
        if obs["to_call"] > 99:
            return 0
        return 1
'''


@pytest.fixture(autouse=True)
def _fresh_profiles():
    compute._cache.clear()
    yield


def messages(never_ran) -> dict[int, str]:
    return {entry["line"]: entry["message"] for entry in never_ran}


def test_instrumenting_keeps_every_line_where_it_was():
    instrumented = instrument(KUHN_WITH_DEAD_CODE)
    assert instrumented is not None
    original = KUHN_WITH_DEAD_CODE.splitlines()
    copy = instrumented.source.splitlines()
    for number, line in enumerate(original):
        # Each line is the original with `csro_coverage_taken_(N, ` and `)` inserted, nothing else.
        unwrapped = re.sub(r"csro_coverage_taken_\(\d+, ", "", copy[number])
        assert unwrapped.replace(")", "") == line.replace(")", "")
    assert copy[5] == '        if csro_coverage_taken_(0, obs["card"] == "A"):  # Kuhn has no Ace'
    assert [(b.kind, b.line) for b in instrumented.branches] == [("if", 6), ("if", 8), ("expression", 9),
                                                                 ("elif", 10), ("expression", 13)]
    ast.parse(instrumented.source)
    assert instrument("def broken(:\n") is None


def test_exact_games_name_the_branches_no_information_state_makes_run():
    spec = get_game("kuhn_poker")
    profile = profile_policy(spec, CodePolicy("dead", KUHN_WITH_DEAD_CODE), branches=True)
    found = messages(profile.never_ran)
    assert sorted(found) == [6, 13]
    assert found[6] == '`obs["card"] == "A"` was never true in any information state: the code under it never ran'
    assert "`obs[\"pot\"] < 100` was never false" in found[13] and "after `else` was never used" in found[13]
    # The behaviour is the policy's own: the instrumented copy only reported what ran.
    plain = profile_policy(get_game("kuhn_poker"), CodePolicy("dead", KUHN_WITH_DEAD_CODE))
    assert [row.distribution for row in plain.situations] == [row.distribution for row in profile.situations]
    # A seed policy whose every branch runs has none.
    assert profile_policy(spec, resolve_participant(spec, "seed:card_rules"), branches=True).never_ran == []
    # Not asked for: not measured (the exact pass is a second tabularisation).
    compute._cache.clear()
    assert profile_policy(spec, CodePolicy("dead", KUHN_WITH_DEAD_CODE)).never_ran is None


def test_a_frequency_counter_whose_counts_never_change_is_caught_against_the_probes():
    spec = get_game("rrps(num_repetitions=30)")
    profile = profile_policy(spec, CodePolicy("broken", COUNTS_NEVER_UPDATED), seed=3)
    assert messages(profile.never_ran) == {
        15: "`best == 0` was always true against any probe: its branch leaves, so the code after it never ran"}
    hints = [(hint.line, hint.message) for hint in profile_hints(COUNTS_NEVER_UPDATED, profile)]
    assert hints[0][0] == 9 and "update() is never called" in hints[0][1]
    assert hints[1] == (15, profile.never_ran[0]["message"])
    assert profile_policy(spec, CodePolicy("works", COUNTS_UPDATED), seed=3).never_ran == []


def test_no_branch_is_said_to_have_never_run_when_the_coverage_is_incomplete():
    spec = get_game("rrps(num_repetitions=30)")
    crashed = profile_policy(spec, CodePolicy("crashes", CRASHES_ON_SCISSORS), seed=1)
    assert any(row.failure for row in crashed.probes)
    assert crashed.never_ran is None
    # An act the wrapper cannot report through (a staticmethod): exact games measure nothing,
    # and the profile itself is the policy's own.
    kuhn = get_game("kuhn_poker")
    profile = profile_policy(kuhn, CodePolicy("static", STATIC_ACT), branches=True)
    assert profile.failure is None and profile.never_ran is None
    assert all(row.distribution.get("bet", row.distribution.get("call")) == 1.0 for row in profile.situations)


def test_a_copy_that_would_not_be_the_policy_plus_its_notes_is_not_made():
    """Lines are counted as the parser counts them (a form feed is no line break), and the
    copy is checked: read without its notes, its code is the original's."""
    with_form_feed = KUHN_WITH_DEAD_CODE.replace("    def act(self, obs):", "\x0c\n    def act(self, obs):")
    instrumented = instrument(with_form_feed)
    assert instrumented is not None and [b.line for b in instrumented.branches] == [7, 9, 10, 11, 14]
    text_in_a_string = 'class Policy:\n    def act(self, obs):\n        note = "a\u2028b"\n        if obs["to_call"] > 0:\n            return 1\n        return 0\n'
    copy = instrument(text_in_a_string)
    assert copy is not None and 'note = "a\u2028b"' in copy.source
    assert 'if csro_coverage_taken_(0, obs["to_call"] > 0):' in copy.source


def test_the_instrumented_copy_plays_exactly_as_the_policy(monkeypatch):
    """Played profiles run the copy: same seed, same results as the plain code."""
    spec = get_game("rrps(num_repetitions=30)")
    source = get_game("rrps").seed_policies()["frequency_counter"]
    measured = profile_policy(spec, CodePolicy("counter", source), seed=4)
    assert measured.never_ran == []
    compute._cache.clear()
    monkeypatch.setattr(compute, "instrument", lambda _source: None)
    plain = profile_policy(spec, CodePolicy("counter", source), seed=4)
    assert plain.never_ran is None
    assert [(p.name, p.mean, p.stderr, p.thirds) for p in plain.probes] == [
        (p.name, p.mean, p.stderr, p.thirds) for p in measured.probes]
