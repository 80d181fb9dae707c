"""Tests for the incremental one-population meta-game."""

from __future__ import annotations

import json

import numpy as np
import pytest

from csro_tui.meta.metagame import (
    IncompleteMetaGameError,
    MetaGame,
    PayoffEntry,
    UnknownPolicyError,
)


def fill(game: MetaGame, payoff: np.ndarray) -> None:
    """Sets every missing pair from an antisymmetric `payoff` matrix."""
    ids = game.policy_ids
    for row, col in game.missing_pairs():
        i, j = ids.index(row), ids.index(col)
        game.set_entry(
            PayoffEntry(row, col, float(payoff[i, j]), 0.1, 100, [i, j], False)
        )


def random_antisymmetric(size: int, seed: int) -> np.ndarray:
    base = np.random.default_rng(seed).normal(size=(size, size))
    return base - base.T


def test_adding_the_nth_policy_asks_only_for_its_n_minus_1_pairs():
    game = MetaGame()
    assert game.add_policy("a") == []
    assert game.add_policy("b") == [("b", "a")]
    game.set_entry(PayoffEntry("b", "a", 0.5))
    new_pairs = game.add_policy("c")
    assert new_pairs == [("c", "a"), ("c", "b")]
    assert game.missing_pairs() == new_pairs
    for count in range(4, 12):
        assert len(game.add_policy(f"p{count}")) == count - 1


def test_missing_pairs_lists_every_unevaluated_pair_once():
    game = MetaGame(["a", "b", "c", "d"])
    game.set_entry(PayoffEntry("a", "c", 1.0))  # set in the other orientation
    missing = game.missing_pairs()
    assert len(missing) == 5
    assert {frozenset(pair) for pair in missing} == {
        frozenset(pair)
        for pair in [("a", "b"), ("b", "c"), ("a", "d"), ("b", "d"), ("c", "d")]
    }
    assert not game.is_complete()


def test_set_entry_fills_the_mirror_with_the_negated_mean():
    game = MetaGame(["a", "b"])
    game.set_entry(PayoffEntry("a", "b", 0.25, 0.05, 400, [7, 8], exact=False))
    mirror = game.entry("b", "a")
    assert mirror == PayoffEntry("b", "a", -0.25, 0.05, 400, [7, 8], False)
    assert game.entry("a", "b").mean == 0.25
    assert game.missing_pairs() == []
    # Re-evaluating replaces both orientations.
    game.set_entry(PayoffEntry("b", "a", 0.1, 0.0, 0, [], exact=True))
    assert game.entry("a", "b").mean == -0.1
    assert game.entry("a", "b").exact


def test_matrix_of_a_complete_game_is_antisymmetric_in_insertion_order():
    payoff = random_antisymmetric(6, seed=3)
    game = MetaGame()
    for index in range(6):
        game.add_policy(f"policy-{index}")
        fill(game, payoff)
        assert game.is_complete()
    matrix = game.matrix()
    np.testing.assert_array_equal(matrix, payoff)
    np.testing.assert_array_equal(matrix, -matrix.T)
    np.testing.assert_array_equal(np.diag(matrix), np.zeros(6))


def test_matrix_refuses_an_incomplete_game():
    game = MetaGame(["a", "b", "c"])
    game.set_entry(PayoffEntry("b", "a", 1.0))
    with pytest.raises(IncompleteMetaGameError, match="lacks 2 of 3"):
        game.matrix()


def test_partial_matrix_marks_missing_pairs_with_nan():
    game = MetaGame(["a", "b", "c"])
    game.set_entry(PayoffEntry("c", "a", 0.5))
    partial = game.partial_matrix()
    assert partial[2, 0] == 0.5 and partial[0, 2] == -0.5
    assert np.isnan(partial[1, 0]) and np.isnan(partial[2, 1])
    np.testing.assert_array_equal(np.diag(partial), np.zeros(3))


def test_entry_is_none_until_evaluated_and_the_diagonal_is_an_exact_zero():
    game = MetaGame(["a", "b"])
    assert game.entry("a", "b") is None
    diagonal = game.entry("a", "a")
    assert diagonal.mean == 0.0 and diagonal.exact and diagonal.episodes == 0


def test_returned_entries_are_copies():
    game = MetaGame(["a", "b"])
    entry = PayoffEntry("a", "b", 1.0, seeds=[1])
    game.set_entry(entry)
    entry.mean = 99.0
    entry.seeds.append(2)
    fetched = game.entry("a", "b")
    fetched.mean = -5.0
    assert game.entry("a", "b") == PayoffEntry("a", "b", 1.0, seeds=[1])
    assert game.matrix()[0, 1] == 1.0


def test_unknown_ids_raise_a_readable_error():
    game = MetaGame(["a", "b"])
    with pytest.raises(UnknownPolicyError) as caught:
        game.entry("a", "zz")
    assert str(caught.value) == "unknown policy id 'zz' in the meta-game"
    with pytest.raises(KeyError):  # UnknownPolicyError is a KeyError
        game.set_entry(PayoffEntry("nope", "a", 1.0))
    with pytest.raises(UnknownPolicyError):
        game.index("nope")


@pytest.mark.parametrize(
    "entry, message",
    [
        (PayoffEntry("a", "a", 0.0), "against itself"),
        (PayoffEntry("a", "b", float("nan")), "not finite"),
        (PayoffEntry("a", "b", 1.0, stderr=-1.0), "stderr"),
        (PayoffEntry("a", "b", 1.0, episodes=-3), "episodes"),
    ],
)
def test_bad_entries_are_rejected(entry, message):
    game = MetaGame(["a", "b"])
    with pytest.raises(ValueError, match=message):
        game.set_entry(entry)
    assert game.entry("a", "b") is None


def test_duplicate_and_empty_ids_are_rejected():
    game = MetaGame(["a"])
    with pytest.raises(ValueError, match="already"):
        game.add_policy("a")
    with pytest.raises(ValueError, match="non-empty"):
        game.add_policy("")
    assert game.policy_ids == ["a"]


def test_round_trip_through_json_keeps_every_entry():
    payoff = random_antisymmetric(5, seed=11)
    game = MetaGame([f"p{index}" for index in range(5)])
    fill(game, payoff)
    game.add_policy("late")  # its pairs are still missing
    game.set_entry(PayoffEntry("p2", "late", 0.75, 0.0, 0, [], exact=True))

    restored = MetaGame.from_dict(json.loads(json.dumps(game.to_dict())))

    assert restored.policy_ids == game.policy_ids
    assert restored.missing_pairs() == game.missing_pairs()
    for row in game.policy_ids:
        for col in game.policy_ids:
            assert restored.entry(row, col) == game.entry(row, col)
    assert len(game.to_dict()["entries"]) == 10 + 1  # one per evaluated pair


def test_from_dict_rejects_malformed_data():
    with pytest.raises(ValueError, match="version"):
        MetaGame.from_dict({"version": 99, "policy_ids": [], "entries": []})
    with pytest.raises(ValueError, match="lists"):
        MetaGame.from_dict({"policy_ids": "ab"})
    with pytest.raises(ValueError, match="unknown policy id 'c'"):
        MetaGame.from_dict(
            {"policy_ids": ["a", "b"], "entries": [{"row": "a", "col": "c", "mean": 1}]}
        )
    with pytest.raises(ValueError, match="malformed payoff entry"):
        MetaGame.from_dict({"policy_ids": ["a", "b"], "entries": [{"row": "a"}]})


# --- two populations (issue 23) ------------------------------------------------


def two_population_game() -> MetaGame:
    game = MetaGame()
    assert game.add_policy("a0", seat=0) == []
    assert game.add_policy("a1", seat=1) == [("a0", "a1")]
    assert game.add_policy("b0", seat=0) == [("b0", "a1")]
    assert game.add_policy("b1", seat=1) == [("a0", "b1"), ("b0", "b1")]
    return game


def test_two_populations_ask_only_for_seat_0_by_seat_1_pairs():
    game = two_population_game()
    assert game.populations == 2
    assert game.seat_ids(0) == ["a0", "b0"] and game.seat_ids(1) == ["a1", "b1"]
    assert sorted(game.missing_pairs()) == [("a0", "a1"), ("a0", "b1"), ("b0", "a1"), ("b0", "b1")]
    with pytest.raises(ValueError, match="both in seat 0"):
        game.set_entry(PayoffEntry("a0", "b0", 1.0))
    assert game.entry("a0", "b0") is None and game.entry("a1", "a1") is None  # never evaluated


def test_two_populations_give_the_solvers_a_rectangular_seat_0_by_seat_1_matrix():
    game = two_population_game()
    game.set_entry(PayoffEntry("a0", "a1", -0.25))
    game.set_entry(PayoffEntry("b1", "b0", 0.5))  # given from seat 1: stored as seat 0's -0.5
    with pytest.raises(IncompleteMetaGameError, match="lacks 2 of 4"):
        game.matrix()
    game.set_entry(PayoffEntry("a0", "b1", 1.0))
    game.set_entry(PayoffEntry("b0", "a1", 2.0))
    assert game.matrix().tolist() == [[-0.25, 1.0], [2.0, -0.5]]
    assert game.entry("a1", "a0").mean == 0.25  # the seat-1 member's return
    assert game.entry("b0", "b1").mean == -0.5
    restored = MetaGame.from_dict(json.loads(json.dumps(game.to_dict())))
    assert restored.seat_ids(1) == ["a1", "b1"]
    assert restored.matrix().tolist() == game.matrix().tolist()
    assert all(entry["row"] in ("a0", "b0") for entry in game.to_dict()["entries"])


def test_one_population_and_two_do_not_mix():
    game = MetaGame(["a"])
    with pytest.raises(ValueError, match="cannot join a meta-game of one population"):
        game.add_policy("b", seat=0)
    seated = MetaGame()
    seated.add_policy("a", seat=1)
    with pytest.raises(ValueError, match="two populations"):
        seated.add_policy("b")
    assert "seats" not in MetaGame(["a", "b"]).to_dict()  # one population: the format as it was
