"""Tests for the meta-solvers: exact Nash LP, PRD, RM, uniform, alpha-rank."""

from __future__ import annotations

import json
import sys
import types

import numpy as np
import pytest
from open_spiel.python.algorithms import projected_replicator_dynamics as openspiel_prd

from csro_tui.errors import ConfigError
from csro_tui.meta.solvers import SOLVERS, MetaSolution, nash_conv, solve, solver_options
from csro_tui.meta.solvers.merged_copies import group_duplicates
from csro_tui.meta.solvers.projected_replicator_dynamics import (
    lift_to_floor,
    project_to_floored_simplex,
)

ROCK_PAPER_SCISSORS = np.array([[0.0, -1.0, 1.0], [1.0, 0.0, -1.0], [-1.0, 1.0, 0.0]])
# Rock beats scissors by 2: the equilibrium moves to (1/4, 1/2, 1/4).
BIASED_RPS = np.array([[0.0, -1.0, 2.0], [1.0, 0.0, -1.0], [-2.0, 1.0, 0.0]])
BIASED_RPS_NASH = np.array([0.25, 0.5, 0.25])


def random_antisymmetric(size: int, seed: int) -> np.ndarray:
    base = np.random.default_rng(seed).normal(size=(size, size))
    return base - base.T


def brute_force_nash_conv(matrix, row, col) -> float:
    """Both players' best-response gains, one pure deviation at a time."""
    value = row @ matrix @ col
    row_gain = max(matrix[i] @ col for i in range(matrix.shape[0])) - value
    col_gain = value - min(row @ matrix[:, j] for j in range(matrix.shape[1]))
    return row_gain + col_gain


def assert_distribution(strategy: np.ndarray, size: int) -> None:
    assert strategy.shape == (size,)
    assert np.all(strategy >= 0.0)
    assert strategy.sum() == pytest.approx(1.0, abs=1e-12)


# --- nash_conv ---------------------------------------------------------------


def test_nash_conv_of_pure_rock_against_rock_is_both_gains():
    rock = np.array([1.0, 0.0, 0.0])
    # Each player gains 1 by switching to paper.
    assert nash_conv(ROCK_PAPER_SCISSORS, rock, rock) == pytest.approx(2.0)
    uniform = np.full(3, 1 / 3)
    assert nash_conv(ROCK_PAPER_SCISSORS, uniform, uniform) == pytest.approx(0.0, abs=1e-15)


def test_nash_conv_matches_brute_force_on_random_profiles():
    rng = np.random.default_rng(5)
    matrix = rng.normal(size=(4, 6))
    for _ in range(5):
        row, col = rng.dirichlet(np.ones(4)), rng.dirichlet(np.ones(6))
        assert nash_conv(matrix, row, col) == pytest.approx(
            brute_force_nash_conv(matrix, row, col), abs=1e-12
        )


# --- nash ----------------------------------------------------------------------


def test_nash_of_rock_paper_scissors_is_uniform_with_value_zero():
    solution = solve("nash", ROCK_PAPER_SCISSORS)
    np.testing.assert_allclose(solution.row, np.full(3, 1 / 3), atol=1e-12)
    np.testing.assert_allclose(solution.col, np.full(3, 1 / 3), atol=1e-12)
    assert solution.value == pytest.approx(0.0, abs=1e-12)
    assert solution.solver == "nash"


def test_nash_of_biased_rps():
    solution = solve("nash", BIASED_RPS)
    np.testing.assert_allclose(solution.row, BIASED_RPS_NASH, atol=1e-12)
    np.testing.assert_allclose(solution.col, BIASED_RPS_NASH, atol=1e-12)


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
@pytest.mark.parametrize("kind", ["antisymmetric", "general"])
def test_nash_conv_is_negligible_on_random_50x50_games(seed, kind):
    rng = np.random.default_rng(seed)
    matrix = random_antisymmetric(50, seed) if kind == "antisymmetric" else rng.normal(size=(50, 50))
    solution = solve("nash", matrix)
    assert_distribution(solution.row, 50)
    assert_distribution(solution.col, 50)
    assert solution.nash_conv < 1e-9
    assert brute_force_nash_conv(matrix, solution.row, solution.col) < 1e-9
    assert solution.value == pytest.approx(solution.row @ matrix @ solution.col, abs=1e-15)


def test_nash_value_of_a_general_game_matches_the_minimax_value():
    # Guarantees: row gets >= value against every column, col concedes <= value.
    matrix = np.random.default_rng(9).normal(loc=0.7, size=(30, 20))
    solution = solve("nash", matrix)
    assert np.min(solution.row @ matrix) == pytest.approx(solution.value, abs=1e-9)
    assert np.max(matrix @ solution.col) == pytest.approx(solution.value, abs=1e-9)
    assert solution.value > 0.0  # shifted payoffs favour the row player


def test_nash_finds_a_pure_saddle_point():
    matrix = np.array([[2.0, 3.0, 1.0], [4.0, 5.0, 3.0], [0.0, 7.0, 2.0]])
    solution = solve("nash", matrix)
    np.testing.assert_allclose(solution.row, [0.0, 1.0, 0.0], atol=1e-12)
    np.testing.assert_allclose(solution.col, [0.0, 0.0, 1.0], atol=1e-12)
    assert solution.value == pytest.approx(3.0)
    assert solution.nash_conv == pytest.approx(0.0, abs=1e-12)


def test_nash_on_rectangular_matrices():
    # Matching pennies plus a column that only helps the row player...
    wide = np.array([[1.0, -1.0, 2.0], [-1.0, 1.0, 2.0]])
    solution = solve("nash", wide)
    np.testing.assert_allclose(solution.row, [0.5, 0.5], atol=1e-12)
    np.testing.assert_allclose(solution.col, [0.5, 0.5, 0.0], atol=1e-12)
    # ...and plus a row that only hurts it.
    tall = np.array([[1.0, -1.0], [-1.0, 1.0], [-2.0, -2.0]])
    solution = solve("nash", tall)
    np.testing.assert_allclose(solution.row, [0.5, 0.5, 0.0], atol=1e-12)
    np.testing.assert_allclose(solution.col, [0.5, 0.5], atol=1e-12)
    for shape in [(7, 40), (40, 7), (1, 5), (5, 1)]:
        matrix = np.random.default_rng(sum(shape)).normal(size=shape)
        solution = solve("nash", matrix)
        assert_distribution(solution.row, shape[0])
        assert_distribution(solution.col, shape[1])
        assert solution.nash_conv < 1e-9


def test_a_duplicated_row_shares_the_weight_of_the_original():
    with_copy = np.vstack([ROCK_PAPER_SCISSORS, ROCK_PAPER_SCISSORS[0]])
    solution = solve("nash", with_copy)
    np.testing.assert_allclose(solution.row, [1 / 6, 1 / 3, 1 / 3, 1 / 6], atol=1e-12)
    np.testing.assert_allclose(solution.col, np.full(3, 1 / 3), atol=1e-12)
    assert solution.value == pytest.approx(0.0, abs=1e-12)


def duplicate_policy(matrix: np.ndarray, index: int, noise: float = 0.0) -> np.ndarray:
    """The meta-game after policy `index` joins the population again as a copy.

    `noise` is added to the copy's payoffs (and subtracted from its column),
    like a copy whose evaluation differed by round-off.
    """
    size = matrix.shape[0]
    grown = np.zeros((size + 1, size + 1))
    grown[:size, :size] = matrix
    grown[size, :size] = matrix[index] + noise
    grown[:size, size] = -grown[size, :size]
    return grown


@pytest.mark.parametrize("noise", [0.0, 1e-12])
def test_duplicated_policies_in_a_population_get_equal_weight(noise):
    matrix = duplicate_policy(duplicate_policy(BIASED_RPS, 1), 1, noise)
    np.testing.assert_array_equal(matrix, -matrix.T)
    solution = solve("nash", matrix)
    # Paper (weight 1/2) now has three copies.
    expected = [0.25, 1 / 6, 0.25, 1 / 6, 1 / 6]
    np.testing.assert_allclose(solution.row, expected, atol=1e-9)
    np.testing.assert_array_equal(solution.row, solution.col)


def test_group_duplicates_labels_copies_in_order_of_first_appearance():
    rows = np.array(
        [[1.0, 2.0, 3.0], [0.0, 0.0, 0.0], [1.0, 2.0, 3.0 + 1e-10], [0.0, 0.0, 1e-3], [0.0, 0.0, 0.0]]
    )
    np.testing.assert_array_equal(group_duplicates(rows, tol=1e-9), [0, 1, 0, 2, 1])
    np.testing.assert_array_equal(group_duplicates(rows, tol=0.0), [0, 1, 2, 3, 1])
    np.testing.assert_array_equal(group_duplicates(rows, tol=1e-2), [0, 1, 0, 1, 1])
    distinct = np.random.default_rng(0).normal(size=(300, 300))
    np.testing.assert_array_equal(group_duplicates(distinct, tol=1e-9), np.arange(300))


def test_merging_only_exact_copies_leaves_near_copies_apart():
    matrix = duplicate_policy(BIASED_RPS, 1, noise=1e-6)
    solution = solve("nash", matrix, duplicate_tol=0.0)
    assert solution.nash_conv < 1e-9
    merged = solve("nash", matrix, duplicate_tol=1e-5)
    assert merged.row[1] == pytest.approx(merged.row[3], abs=1e-12)
    assert merged.nash_conv < 1e-5


def test_nash_is_deterministic_across_calls():
    matrix = duplicate_policy(random_antisymmetric(40, seed=4), 7)
    first, second = solve("nash", matrix), solve("nash", matrix)
    np.testing.assert_array_equal(first.row, second.row)
    np.testing.assert_array_equal(first.col, second.col)
    assert first.value == second.value


def test_nash_follows_a_permutation_of_the_rows():
    rng = np.random.default_rng(8)
    matrix = rng.normal(size=(12, 9))
    matrix = np.vstack([matrix, matrix[3], matrix[3]])  # copies, too
    order = rng.permutation(matrix.shape[0])
    original, permuted = solve("nash", matrix), solve("nash", matrix[order])
    np.testing.assert_allclose(permuted.row, original.row[order], atol=1e-9)
    np.testing.assert_allclose(permuted.col, original.col, atol=1e-9)


def test_nash_follows_a_relabelling_of_the_population():
    matrix = duplicate_policy(random_antisymmetric(25, seed=2), 0)
    order = np.random.default_rng(1).permutation(matrix.shape[0])
    original = solve("nash", matrix)
    relabelled = solve("nash", matrix[np.ix_(order, order)])
    np.testing.assert_allclose(relabelled.row, original.row[order], atol=1e-9)


def test_nash_of_an_all_zero_matrix_is_uniform():
    solution = solve("nash", np.zeros((4, 4)))
    np.testing.assert_allclose(solution.row, np.full(4, 0.25))
    np.testing.assert_allclose(solution.col, np.full(4, 0.25))


def test_nash_does_not_depend_on_the_payoff_scale():
    matrix = random_antisymmetric(20, seed=6)
    small, large = solve("nash", matrix * 1e-3), solve("nash", matrix * 1e3)
    np.testing.assert_allclose(small.row, large.row, atol=1e-9)
    assert large.nash_conv < 1e-9 * 1e3


# --- prd and rm ----------------------------------------------------------------


@pytest.mark.parametrize("name", ["prd", "rm"])
def test_iterative_solvers_converge_on_biased_rps_with_defaults(name):
    solution = solve(name, BIASED_RPS)
    assert solution.solver == name
    assert solution.nash_conv < 1e-2
    np.testing.assert_allclose(solution.row, BIASED_RPS_NASH, atol=2e-2)
    np.testing.assert_allclose(solution.col, BIASED_RPS_NASH, atol=2e-2)


@pytest.mark.parametrize("name", ["prd", "rm"])
def test_iterative_solvers_stay_at_the_uniform_equilibrium_of_rps(name):
    # Both start uniform, which is RPS's equilibrium and a rest point.
    solution = solve(name, ROCK_PAPER_SCISSORS, iterations=500)
    np.testing.assert_allclose(solution.row, np.full(3, 1 / 3), atol=1e-12)
    assert solution.nash_conv < 1e-12


@pytest.mark.parametrize("name", ["prd", "rm"])
def test_iterative_solvers_converge_on_a_random_small_game(name):
    matrix = np.random.default_rng(0).uniform(-1.0, 1.0, size=(4, 5))
    exact = solve("nash", matrix)
    solution = solve(name, matrix)
    assert solution.nash_conv < 1e-2
    assert solution.value == pytest.approx(exact.value, abs=1e-2)


def test_prd_returns_the_average_of_the_uniform_start_and_one_euler_step():
    # u_row = M y = (1/2, 0), x.u = 1/4, so x1 = x0 * (1 + dt (u - 1/4)).
    matrix = np.array([[1.0, 0.0], [0.0, 0.0]])
    step = 0.4
    solution = solve("prd", matrix, iterations=1, step_size=step, gamma=0.0)
    np.testing.assert_allclose(solution.row, [0.5 + step / 16, 0.5 - step / 16])
    np.testing.assert_allclose(solution.col, [0.5 - step / 16, 0.5 + step / 16])


def test_prd_keeps_every_strategy_above_the_exploration_floor():
    # The last row is strictly dominated; PRD may not drive it below gamma.
    matrix = np.array([[0.0, -1.0, 1.0], [1.0, 0.0, -1.0], [-1.0, 1.0, 0.0], [-2.0, -2.0, -2.0]])
    solution = solve("prd", matrix, iterations=1000, step_size=0.5, gamma=0.01)
    assert solution.row[3] >= 0.01
    assert solution.row[3] < 0.05


def test_prd_solves_a_game_whose_value_is_not_zero():
    """Two populations' first meta-games (Kuhn: seat 0's seed against seat 1's seed and a best
    response): the strategies' rounding error grew each step where x.u != 0 until the solver
    raised "a mixed strategy needs positive, finite total weight"."""
    import warnings

    third, sixth = 1 / 3, 1 / 6
    for matrix in ([[0.0, -third]], [[0.0, -third, -third], [third, third, -sixth]],
                   [[0.0, -third, -third], [third, third, -sixth], [0.0, -sixth, sixth]]):
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # it divided by zero on the way
            solution = solve("prd", np.array(matrix))
        assert solution.row.sum() == pytest.approx(1.0) and solution.col.sum() == pytest.approx(1.0)
    assert solve("prd", np.array([[0.0, -1 / 3]])).col[1] > 0.99  # the column takes its +1/3


def test_prd_matches_openspiel_on_scaled_payoffs():
    matrix = 3.0 * np.random.default_rng(4).uniform(-1.0, 1.0, size=(4, 6))
    scaled = matrix / np.abs(matrix).max()
    options = {"iterations": 1500, "step_size": 0.05, "gamma": 1e-3}
    reference_row, reference_col = openspiel_prd.projected_replicator_dynamics(
        [scaled, -scaled],
        prd_iterations=options["iterations"],
        prd_dt=options["step_size"],
        prd_gamma=options["gamma"],
    )
    solution = solve("prd", matrix, **options)
    np.testing.assert_allclose(solution.row, reference_row, atol=1e-9)
    np.testing.assert_allclose(solution.col, reference_col, atol=1e-9)


def test_the_fast_floor_lift_is_the_exact_projection():
    rng = np.random.default_rng(3)
    for _ in range(300):
        size = int(rng.integers(2, 12))
        gamma = float(rng.choice([1e-6, 1e-2, 0.5 / size]))
        # Sum 1, a few entries below the floor (some negative), as after a step.
        weights = rng.dirichlet(np.full(size, 0.3))
        weights[rng.random(size) < 0.3] -= gamma
        weights /= weights.sum()
        lifted = lift_to_floor(weights.copy(), gamma)
        reference = openspiel_prd._simplex_projection(weights.copy(), gamma)
        np.testing.assert_allclose(lifted, reference, atol=1e-12)
        np.testing.assert_allclose(
            project_to_floored_simplex(weights.copy(), gamma), reference, atol=1e-12
        )
        assert lifted.min() >= gamma - 1e-15
        assert lifted.sum() == pytest.approx(1.0, abs=1e-12)


def test_rm_averages_its_iterates():
    # Round 1 plays uniform; regrets (1/4, -1/4) then make row play action 0
    # and the column player action 1.  The average of the two rounds:
    matrix = np.array([[1.0, 0.0], [0.0, 0.0]])
    solution = solve("rm", matrix, iterations=2, gamma=0.0)
    np.testing.assert_allclose(solution.row, [0.75, 0.25])
    np.testing.assert_allclose(solution.col, [0.25, 0.75])
    np.testing.assert_allclose(solve("rm", matrix, iterations=1).row, [0.5, 0.5])


def test_rm_mixes_in_gamma_of_uniform():
    matrix = np.array([[1.0, 0.0], [0.0, 0.0]])
    solution = solve("rm", matrix, iterations=2, gamma=0.2)
    # Round 2: 0.8 * (1, 0) + 0.2 * (1/2, 1/2) = (0.9, 0.1).
    np.testing.assert_allclose(solution.row, [(0.5 + 0.9) / 2, (0.5 + 0.1) / 2])


# --- uniform -------------------------------------------------------------------


def test_uniform_is_uniform_for_each_player():
    matrix = np.random.default_rng(2).normal(size=(3, 5))
    solution = solve("uniform", matrix)
    np.testing.assert_array_equal(solution.row, np.full(3, 1 / 3))
    np.testing.assert_array_equal(solution.col, np.full(5, 1 / 5))
    assert solution.value == pytest.approx(matrix.mean())
    assert solution.nash_conv == pytest.approx(
        brute_force_nash_conv(matrix, solution.row, solution.col)
    )


# --- alpharank -----------------------------------------------------------------


def test_alpharank_of_rock_paper_scissors_is_uniform():
    solution = solve("alpharank", ROCK_PAPER_SCISSORS)
    np.testing.assert_allclose(solution.row, np.full(3, 1 / 3), atol=1e-12)
    np.testing.assert_array_equal(solution.row, solution.col)


def test_alpharank_of_two_strategies_follows_the_moran_fixation_ratio():
    # With two strategies pi_0 / pi_1 = rho(1->0) / rho(0->1) = exp((m-1) u),
    # u = alpha * (M01 - M10) on payoffs scaled to max |entry| = 1.
    matrix = np.array([[0.0, 3.0], [-3.0, 0.0]])
    alpha, population = 0.1, 10
    solution = solve("alpharank", matrix, alpha=alpha, population_size=population)
    ratio = solution.row[0] / solution.row[1]
    assert ratio == pytest.approx(np.exp((population - 1) * alpha * 2.0), rel=1e-9)


def test_alpharank_puts_the_mass_on_a_dominant_policy():
    transitive = np.array([[0.0, 1.0, 1.0], [-1.0, 0.0, 1.0], [-1.0, -1.0, 0.0]])
    solution = solve("alpharank", transitive)
    assert solution.row[0] > 0.99
    assert solution.nash_conv < 1e-2


def test_alpharank_matches_openspiel(monkeypatch):
    # OpenSpiel's module imports a matplotlib visualiser at import time;
    # a stand-in module lets the reference implementation load without it.
    monkeypatch.setitem(
        sys.modules,
        "open_spiel.python.egt.alpharank_visualizer",
        types.ModuleType("alpharank_visualizer"),
    )
    monkeypatch.delitem(sys.modules, "open_spiel.python.egt.alpharank", raising=False)
    from open_spiel.python.egt import alpharank as openspiel_alpharank

    matrix = random_antisymmetric(6, seed=12)
    scaled = matrix / np.abs(matrix).max()
    for alpha, population in [(0.5, 20), (5.0, 50)]:
        _, _, reference, _, _ = openspiel_alpharank.compute(
            [scaled], alpha=alpha, m=population
        )
        solution = solve("alpharank", matrix, alpha=alpha, population_size=population)
        np.testing.assert_allclose(solution.row, reference, atol=1e-9)


def test_alpharank_needs_a_square_matrix():
    with pytest.raises(ValueError, match="square"):
        solve("alpharank", np.ones((2, 3)))


# --- registry and results ------------------------------------------------------


def test_unknown_solver_is_a_one_line_config_error_listing_the_names():
    with pytest.raises(ConfigError) as caught:
        solve("fictitious", ROCK_PAPER_SCISSORS)
    message = str(caught.value)
    assert "\n" not in message
    assert "'fictitious'" in message
    for name in SOLVERS:
        assert name in message


def test_unknown_option_is_a_config_error_naming_the_valid_ones():
    with pytest.raises(ConfigError, match="no option 'steps'.*iterations, step_size, gamma"):
        solve("prd", ROCK_PAPER_SCISSORS, steps=10)
    with pytest.raises(ConfigError, match="options: none"):
        solve("uniform", ROCK_PAPER_SCISSORS, iterations=10)


def test_solver_options_lists_defaults():
    assert set(SOLVERS) == {"nash", "prd", "rm", "uniform", "alpharank"}
    assert solver_options("rm") == {"iterations": 20_000, "gamma": 1e-6}
    assert solver_options("uniform") == {}


QUICK_OPTIONS = {"prd": {"iterations": 200}, "rm": {"iterations": 200}}


@pytest.mark.parametrize("name", sorted(SOLVERS))
def test_every_solver_returns_a_consistent_read_only_solution(name):
    matrix = random_antisymmetric(7, seed=21)
    solution = solve(name, matrix, **QUICK_OPTIONS.get(name, {}))
    assert isinstance(solution, MetaSolution)
    assert_distribution(solution.row, 7)
    assert_distribution(solution.col, 7)
    assert solution.value == pytest.approx(solution.row @ matrix @ solution.col)
    assert solution.nash_conv == pytest.approx(
        brute_force_nash_conv(matrix, solution.row, solution.col), abs=1e-12
    )
    with pytest.raises(ValueError):
        solution.row[0] = 1.0
    assert json.loads(json.dumps(solution.to_dict()))["solver"] == name


@pytest.mark.parametrize(
    "matrix", [[], [[]], [1.0, 2.0], [[0.0, float("nan")], [0.0, 0.0]]]
)
def test_unusable_matrices_are_rejected(matrix):
    with pytest.raises(ValueError):
        solve("nash", matrix)
