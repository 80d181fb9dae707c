"""Nash equilibrium of a two-player zero-sum matrix game by one linear program.

The row player maximises the value v it can guarantee:

    maximise v  subject to  (x^T M)_j >= v for every column j,
                            sum_i x_i = 1,  x >= 0,  v free.

HiGHS (scipy.optimize.linprog, method="highs") solves it; the row strategy is
the primal x, and the column strategy is the vector of duals of the column
constraints.  linprog minimises -v with the constraints written as
v - (x^T M)_j <= 0, so each dual (`ineqlin.marginals`) is the change of -v per
unit loosening of its constraint: non-positive, summing to -1.  Negated, the
duals are the column player's minimax strategy y (LP duality: min_y max_i
(M y)_i = v).

Stability among equal equilibria (duplicated policies are common in CSRO
populations) comes from `duplicates.merge_duplicates`: copies are merged
before solving and share their weight equally.  When the payoff matrix is
antisymmetric (CSRO's one-population meta-game, M = -M^T) both players face
the same game, the two equilibrium sets coincide and are convex, so both are
reported as the midpoint (x + y) / 2: one meta-strategy for the population.
Ties that are not copies (a policy that plays like a mixture of others) keep
HiGHS's vertex, which is deterministic for a given matrix.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy.optimize import linprog

from csro_tui.meta.solvers.base import (
    MetaSolution,
    as_payoff_matrix,
    make_solution,
    payoff_scale,
)
from csro_tui.meta.solvers.merged_copies import merge_duplicates, split_weights


def solve_zero_sum_lp(matrix: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Returns minimax strategies (row, col) of `matrix` from one HiGHS LP."""
    row_count, col_count = matrix.shape
    # Variables: x_1..x_m, v.  Objective: minimise -v.
    objective = np.zeros(row_count + 1)
    objective[-1] = -1.0
    # v - sum_i x_i M[i, j] <= 0 for every column j.
    upper_bound_rows = np.hstack([-matrix.T, np.ones((col_count, 1))])
    simplex_row = np.ones((1, row_count + 1))
    simplex_row[0, -1] = 0.0
    bounds = [(0.0, None)] * row_count + [(None, None)]
    result = linprog(
        objective,
        A_ub=upper_bound_rows,
        b_ub=np.zeros(col_count),
        A_eq=simplex_row,
        b_eq=np.ones(1),
        bounds=bounds,
        method="highs",
    )
    if result.status != 0:
        raise RuntimeError(f"the Nash LP failed: {result.message}")
    return result.x[:row_count], -result.ineqlin.marginals


def is_antisymmetric(matrix: np.ndarray, tol: float) -> bool:
    """True for a square matrix with M = -M^T within `tol`."""
    rows, cols = matrix.shape
    return rows == cols and bool(np.all(np.abs(matrix + matrix.T) <= tol))


def nash(matrix: Any, *, duplicate_tol: float = 1e-9) -> MetaSolution:
    """Nash equilibrium of the zero-sum game `matrix` (row player's payoffs).

    Args:
      matrix: payoffs for the row player, any shape (m, n).
      duplicate_tol: strategies whose payoffs differ by at most this much,
        relative to the largest absolute payoff, are merged as copies and
        share their weight equally (and so are near-antisymmetric matrices
        symmetrised); 0 merges exact copies only.

    Returns:
      A MetaSolution with NashConv at the LP's round-off (~1e-12 relative).
    """
    payoffs = as_payoff_matrix(matrix)
    if duplicate_tol < 0:
        raise ValueError("duplicate_tol must be >= 0")
    scale = payoff_scale(payoffs)
    # Unit-scale payoffs keep HiGHS's absolute feasibility tolerances meaningful.
    scaled = payoffs / scale
    reduced, row_labels, col_labels = merge_duplicates(scaled, duplicate_tol)
    reduced_row, reduced_col = solve_zero_sum_lp(reduced)
    row = split_weights(reduced_row, row_labels)
    col = split_weights(reduced_col, col_labels)
    if is_antisymmetric(scaled, duplicate_tol):
        row = col = (row + col) / 2.0
    return make_solution(payoffs, row, col, "nash")
