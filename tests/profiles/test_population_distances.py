"""A population's distances at once (numpy) are the pairwise comparisons' (issue 36: 200
Leduc members compared pair by pair took minutes)."""

from __future__ import annotations

import numpy as np
import pytest

from csro_tui.evaluation.participants import resolve_participant
from csro_tui.games.registry import get_game
from csro_tui.profiles.compute import profile_policy
from csro_tui.profiles.distance import _exact_distances, compare, distance_matrix


@pytest.mark.parametrize("game", ["kuhn_poker", "leduc_poker"])
def test_exact_distances_at_once_are_the_pairwise_ones(game):
    spec = get_game(game)
    profiles = [profile_policy(spec, resolve_participant(spec, f"seed:{name}")) for name in spec.seed_policies()]
    profiles.append(profiles[0])  # a member that behaves as another: distance exactly 0
    assert _exact_distances(profiles, None) is not None  # the matrix at once, not the pairs' fallback
    for seat in (None, 0, 1):
        distances, errors = distance_matrix(profiles, seat=seat)
        pairwise = np.array([[0.0 if i == j else compare(a, b, differences=False, seat=seat).distance
                              for j, b in enumerate(profiles)] for i, a in enumerate(profiles)])
        assert np.allclose(distances, pairwise, rtol=0, atol=1e-12)
        assert ((distances == 0) == (pairwise == 0)).all()  # "the same behaviour" stays exact
        assert not errors.any()
        assert distances[0, -1] == 0 and distances[0, 1] > 0


def test_the_same_profiles_are_not_compared_again(monkeypatch):
    """The diversity view opened again (or at an earlier step: fewer members) takes a recent
    matrix of the same profile objects, in the order asked for; other profiles are compared."""
    from csro_tui.profiles import distance

    spec = get_game("kuhn_poker")
    profiles = [profile_policy(spec, resolve_participant(spec, f"seed:{name}")) for name in spec.seed_policies()]
    distances, _ = distance_matrix(profiles, seat=0)
    computed = []
    monkeypatch.setattr(distance, "_distance_matrix",
                        lambda profiles, seat: computed.append(seat) or (np.zeros((len(profiles),) * 2),) * 2)
    again, _ = distance_matrix(profiles, seat=0)
    fewer, errors = distance_matrix(profiles[:0:-1], seat=0)  # an earlier step's members, another order
    assert computed == [] and np.array_equal(again, distances)
    assert np.array_equal(fewer, distances[np.ix_(range(len(profiles) - 1, 0, -1), range(len(profiles) - 1, 0, -1))])
    assert errors.shape == fewer.shape
    distance_matrix(profiles, seat=1)  # another seat's distances
    distance_matrix([profile_policy(spec, resolve_participant(spec, "seed:" + next(iter(spec.seed_policies()))), seed=7)] + profiles)
    assert len(computed) == 2
