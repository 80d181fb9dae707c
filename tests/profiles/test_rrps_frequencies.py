"""Honest RRPS behaviour (issue 36): a profile says what a policy throws, overall and after
each last throw, with the noise of each frequency, and "plays uniformly" when it does; the
review's behaviour hint agrees with the gate about copied code.  Real sandbox, 100 throws."""

from __future__ import annotations

import pytest

from csro_tui.evaluation.participants import CodePolicy
from csro_tui.games.registry import get_game
from csro_tui.profiles.compute import profile_policy
from csro_tui.profiles.describe import describe, describe_frequencies
from csro_tui.profiles.model import Profile

SPEC = get_game("rrps(num_repetitions=100)")
SEEDS = SPEC.seed_policies()
# Rock half the time, sampled by the policy itself from its seeded generator.
BIASED = '''import random


class Policy:
    def __init__(self, player, game):
        self.rng = random.Random(game["seed"])

    def act(self, obs):
        return self.rng.choices([0, 1, 2], weights=[2, 1, 1])[0]
'''


@pytest.fixture(scope="module")
def profiles():
    return {name: profile_policy(SPEC, CodePolicy(name, source), seed=11)
            for name, source in (("uniform", SEEDS["uniform_random"]), ("biased", BIASED),
                                 ("beat_last", SEEDS["beat_last"]))}


def test_the_uniform_seed_plays_uniformly_and_says_so_first(profiles):
    profile = profiles["uniform"]
    overall = profile.frequencies[0]
    assert overall.condition == "all throws" and overall.throws == 8 * 4 * 100  # 8 probes x 4 episodes
    assert overall.distribution == pytest.approx({"Rock": 1 / 3, "Paper": 1 / 3, "Scissors": 1 / 3})
    assert {row.condition for row in profile.frequencies} >= {"after its own Rock", "after the opponent's Paper"}
    lines = describe(profile)
    assert lines[0].startswith("plays uniformly: Rock 33.3%, Paper 33.3%, Scissors 33.3% of 3,200 throws")


def test_a_biased_policy_is_not_called_uniform_and_its_frequencies_carry_their_noise(profiles):
    profile = profiles["biased"]
    overall = profile.frequencies[0]
    assert overall.distribution["Rock"] == pytest.approx(0.5, abs=0.05)
    assert 0.005 < overall.stderr["Rock"] < 0.02  # sampled by the policy: the binomial error of 3,200 throws
    first = describe_frequencies(profile)[0]
    assert first.startswith("throws Rock 5") and "± 0." in first and "uniform" not in first
    assert first.endswith("whatever the last throws")  # its bias does not depend on them


def test_a_reactive_policy_shows_the_conditions_that_move_it(profiles):
    lines = describe_frequencies(profiles["beat_last"])
    assert "a third each overall, but not after every last throw" in lines[0]
    assert "after the opponent's Rock: Rock 0.0%, Paper 100.0%, Scissors 0.0%" in "\n".join(lines)


def test_frequencies_survive_the_record_and_older_records_have_none(profiles):
    recorded = profiles["biased"].to_record()
    again = Profile.from_dict(recorded)
    assert again.frequencies == profiles["biased"].frequencies
    older = dict(recorded)
    del older["frequencies"]
    assert Profile.from_dict(older).frequencies == [] and describe_frequencies(Profile.from_dict(older)) == []


def test_the_behaviour_hint_agrees_with_the_gate_about_copied_code(profiles):
    from types import SimpleNamespace

    from csro_tui.profiles.session import ReviewBehaviour

    same = SimpleNamespace(same_within_noise=True, stderr=0.01, distance=0.0)
    copy = ReviewBehaviour(profiles["uniform"], [], [], [("p1", same)], same_code_as=["p1"])
    assert copy.hint().endswith("its code is the same") and "its own" not in copy.hint()
    other = ReviewBehaviour(profiles["uniform"], [], [], [("p1", same)])
    assert other.hint().endswith("though its code is its own")
