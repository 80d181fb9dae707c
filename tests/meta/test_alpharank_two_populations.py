"""Alpha-rank with two populations (one per seat) against OpenSpiel's multi-population alpha-rank."""

from __future__ import annotations

import sys
import types

import numpy as np
import pytest

from csro_tui.meta.solvers import alpha_rank, solve

MATCHING_PENNIES = np.array([[1.0, -1.0], [-1.0, 1.0]])


@pytest.fixture
def openspiel_alpharank(monkeypatch):
    # OpenSpiel's module imports a matplotlib visualiser at import time; a
    # stand-in module lets the reference implementation load without it.
    monkeypatch.setitem(
        sys.modules, "open_spiel.python.egt.alpharank_visualizer", types.ModuleType("alpharank_visualizer")
    )
    monkeypatch.delitem(sys.modules, "open_spiel.python.egt.alpharank", raising=False)
    from open_spiel.python.egt import alpharank

    return alpharank


def openspiel_marginals(module, matrix: np.ndarray, alpha: float, population_size: int):
    """Seat 0's and seat 1's marginals of OpenSpiel's alpha-rank on tables [A, -A]
    (A scaled to max |entry| = 1, as ours scales it)."""
    scaled = matrix / np.abs(matrix).max()
    _, _, joint, _, _ = module.compute([scaled, -scaled], alpha=alpha, m=population_size)
    joint = np.asarray(joint).reshape(matrix.shape)  # profile id = i * cols + j
    return joint.sum(axis=1), joint.sum(axis=0)


@pytest.mark.parametrize(
    ("shape", "alpha", "population_size", "seed"),
    [((3, 4), 0.5, 20, 1), ((5, 5), 5.0, 50, 2), ((4, 2), 100.0, 50, 3), ((1, 4), 2.0, 10, 4), ((6, 3), 1.0, 2, 5)],
)
def test_matches_openspiel_multipopulation_alpharank(openspiel_alpharank, shape, alpha, population_size, seed):
    matrix = np.random.default_rng(seed).normal(size=shape) * 3.0
    row, col = openspiel_marginals(openspiel_alpharank, matrix, alpha, population_size)
    solution = solve("alpharank", matrix, populations=2, alpha=alpha, population_size=population_size)
    np.testing.assert_allclose(solution.row, row, atol=1e-9)
    np.testing.assert_allclose(solution.col, col, atol=1e-9)
    assert solution.value == pytest.approx(solution.row @ matrix @ solution.col)


def test_matching_pennies_is_uniform_for_both_seats(openspiel_alpharank):
    solution = solve("alpharank", MATCHING_PENNIES, populations=2)
    np.testing.assert_allclose(solution.row, [0.5, 0.5], atol=1e-12)
    np.testing.assert_allclose(solution.col, [0.5, 0.5], atol=1e-12)
    row, col = openspiel_marginals(openspiel_alpharank, MATCHING_PENNIES, 100.0, 50)
    np.testing.assert_allclose(solution.row, row, atol=1e-9)


def test_a_square_antisymmetric_matrix_is_ranked_differently_with_two_populations():
    # Rock-paper-scissors with rock's win doubled: one population ranks the
    # three monomorphic populations; two populations rank the nine joint
    # profiles, whose marginals differ.  The caller's `populations` decides.
    biased = np.array([[0.0, -1.0, 2.0], [1.0, 0.0, -1.0], [-2.0, 1.0, 0.0]])
    one = solve("alpharank", biased, alpha=1.0, population_size=10)
    two = solve("alpharank", biased, populations=2, alpha=1.0, population_size=10)
    np.testing.assert_array_equal(one.row, one.col)
    assert np.abs(one.row - two.row).max() > 1e-3
    assert two.row.sum() == pytest.approx(1.0) and two.col.sum() == pytest.approx(1.0)


def test_a_dominant_seat_zero_member_takes_the_mass():
    # Row 0 beats every column by more than any other row does.
    matrix = np.array([[2.0, 1.5, 1.0], [0.0, -1.0, 0.5], [-1.0, 0.0, -0.5]])
    solution = solve("alpharank", matrix, populations=2)
    assert solution.row[0] > 0.99
    # Seat 1 loses least against row 0 with column 2.
    assert solution.col[2] > 0.99


def test_one_by_one_is_the_only_profile():
    solution = solve("alpharank", np.array([[0.3]]), populations=2)
    assert solution.row.tolist() == [1.0] and solution.col.tolist() == [1.0]


def test_the_sparse_solve_agrees_with_the_dense_one(monkeypatch):
    matrix = np.random.default_rng(7).normal(size=(12, 17))
    dense = solve("alpharank", matrix, populations=2, alpha=2.0, population_size=20)
    monkeypatch.setattr(alpha_rank, "DENSE_PROFILE_LIMIT", 10)
    sparse = solve("alpharank", matrix, populations=2, alpha=2.0, population_size=20)
    np.testing.assert_allclose(sparse.row, dense.row, atol=1e-10)
    np.testing.assert_allclose(sparse.col, dense.col, atol=1e-10)


def test_populations_must_be_one_or_two():
    with pytest.raises(ValueError, match="populations must be 1 or 2"):
        solve("alpharank", MATCHING_PENNIES, populations=3)


def test_other_solvers_serve_two_populations_unchanged():
    matrix = np.random.default_rng(9).normal(size=(4, 6))
    for name in ("nash", "uniform"):
        two = solve(name, matrix, populations=2)
        one = solve(name, matrix)
        np.testing.assert_array_equal(two.row, one.row)
        np.testing.assert_array_equal(two.col, one.col)
