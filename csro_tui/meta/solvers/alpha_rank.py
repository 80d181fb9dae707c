"""Alpha-rank of a two-player meta-game: one population, or one per seat.

Alpha-rank (Omidshafiei et al. 2019, https://arxiv.org/abs/1903.01373) ranks
strategies by the stationary distribution of a Markov chain over monomorphic
populations: from a population playing s, a mutant r appears (each other
strategy with probability 1/(n-1)) and takes over with the Moran fixation
probability

    rho(s -> r) = (1 - exp(-u)) / (1 - exp(-population_size * u)),
    u = alpha * (M[r, s] - M[s, r]),

(1/population_size when u = 0).  This is OpenSpiel's `egt.alpharank.compute`
for one population with its default local selection model; that module cannot
be imported here because its visualiser requires matplotlib.  The result is a
ranking, not an equilibrium: its NashConv is reported as is.  Payoffs are
divided by the largest absolute payoff first, so `alpha` is the selection
intensity for a payoff gap of the whole range.

With two populations (`alpharank_two_populations`, one per seat, payoff
tables [A, -A] of the zero-sum bimatrix game A) the chain runs over joint
profiles (i, j): a mutant appears in one population while the other stays
(each of the (n0 - 1) + (n1 - 1) possible mutants with probability eta =
1 / ((n0 - 1) + (n1 - 1))) and fixes with the same Moran probability,
u = alpha * (its payoff - the resident's payoff) against the other
population's strategy.  Each seat's meta-strategy is the marginal of the
stationary distribution.  This is OpenSpiel's multi-population
`egt.alpharank.compute([A, -A])`.  Cost: n0 * n1 profiles; up to
`DENSE_PROFILE_LIMIT` (63 x 63) a dense solve (0.3 s at 38 x 38, 4.4 s at
63 x 63 on a loaded 2-core machine), beyond it a sparse one that grows
steeply (318 s at 125 x 125).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from csro_tui.meta.solvers.base import (
    MetaSolution,
    as_payoff_matrix,
    make_solution,
    payoff_scale,
)

DEFAULT_ALPHA = 100.0
DEFAULT_POPULATION_SIZE = 50


def fixation_probabilities(
    payoffs: np.ndarray, alpha: float, population_size: int
) -> np.ndarray:
    """rho[s, r]: probability that one mutant r takes over a population of s."""
    return moran_fixation(alpha * (payoffs.T - payoffs), population_size)  # [s, r] -> alpha (M[r,s] - M[s,r])


def moran_fixation(selection: np.ndarray, population_size: int) -> np.ndarray:
    """(1 - exp(-u)) / (1 - exp(-m u)) for each u in `selection` (1/m at u = 0).

    Written with expm1 of non-positive arguments only, so that strong
    selection underflows to 0 instead of overflowing to inf / inf.
    """
    magnitude = np.abs(selection)
    with np.errstate(invalid="ignore", divide="ignore"):
        favourable = np.expm1(-magnitude) / np.expm1(-population_size * magnitude)
    # For u < 0: rho(-|u|) = exp(-(m-1)|u|) rho(|u|).
    rho = np.where(
        selection >= 0.0,
        favourable,
        np.exp(-(population_size - 1) * magnitude) * favourable,
    )
    return np.where(magnitude < 1e-14, 1.0 / population_size, rho)


def stationary_distribution(transitions: np.ndarray) -> np.ndarray:
    """pi with pi P = pi and sum pi = 1, by least squares (robust to underflow)."""
    size = transitions.shape[0]
    system = np.vstack([transitions.T - np.eye(size), np.ones((1, size))])
    target = np.zeros(size + 1)
    target[-1] = 1.0
    distribution, *_ = np.linalg.lstsq(system, target, rcond=None)
    return distribution


def alpharank(
    matrix: Any,
    *,
    alpha: float = DEFAULT_ALPHA,
    population_size: int = DEFAULT_POPULATION_SIZE,
) -> MetaSolution:
    """Alpha-rank distribution of the one-population meta-game `matrix`.

    Args:
      matrix: square payoffs, matrix[i][j] = payoff of strategy i against j.
      alpha: selection intensity on payoffs scaled to max |entry| = 1.
      population_size: the finite population size m of the Moran process.

    Returns:
      A MetaSolution with the same distribution for both players.
    """
    payoffs = as_payoff_matrix(matrix)
    size, other = payoffs.shape
    if size != other:
        raise ValueError(
            f"alpharank needs a square one-population matrix, got {size}x{other}"
        )
    if alpha < 0 or population_size < 2:
        raise ValueError("alpharank needs alpha >= 0 and population_size >= 2")
    if size == 1:
        return make_solution(payoffs, np.ones(1), np.ones(1), "alpharank")
    rho = fixation_probabilities(payoffs / payoff_scale(payoffs), alpha, population_size)
    transitions = rho / (size - 1)
    np.fill_diagonal(transitions, 0.0)
    np.fill_diagonal(transitions, 1.0 - transitions.sum(axis=1))
    distribution = stationary_distribution(transitions)
    return make_solution(payoffs, distribution, distribution, "alpharank")


# Up to this many joint profiles the chain is solved densely (LU; 4.4 s at
# 3969 on a loaded 2-core machine); above it by a sparse LU, whose fill-in on
# this chain (every profile moves to each profile in its row and its column)
# makes it slow: 318 s for 125 x 125.  OpenSpiel eigendecomposes the dense
# matrix at every size.
DENSE_PROFILE_LIMIT = 4000


def alpharank_two_populations(
    matrix: Any,
    *,
    alpha: float = DEFAULT_ALPHA,
    population_size: int = DEFAULT_POPULATION_SIZE,
) -> MetaSolution:
    """Multi-population alpha-rank of the zero-sum bimatrix game `matrix`.

    Args:
      matrix: seat 0's payoffs, matrix[i][j] = seat-0 member i against seat-1
        member j (seat 1 receives the negation); any shape.
      alpha: selection intensity on payoffs scaled to max |entry| = 1.
      population_size: the finite size m of each seat's population.

    Returns:
      A MetaSolution: row = seat 0's marginal, col = seat 1's.
    """
    payoffs = as_payoff_matrix(matrix)
    if alpha < 0 or population_size < 2:
        raise ValueError("alpharank needs alpha >= 0 and population_size >= 2")
    rows, cols = payoffs.shape
    if rows == 1 and cols == 1:
        return make_solution(payoffs, np.ones(1), np.ones(1), "alpharank")
    scaled = payoffs / payoff_scale(payoffs)
    eta = 1.0 / ((rows - 1) + (cols - 1))
    # Profile (i, j) has id i * cols + j, as OpenSpiel numbers them.
    ids = np.arange(rows * cols).reshape(rows, cols)
    # Seat 0's mutant r replaces i against j: u = alpha * (A[r, j] - A[i, j]).
    seat0 = eta * moran_fixation(alpha * (scaled[None, :, :] - scaled[:, None, :]), population_size)  # [i, r, j]
    seat0_from = np.broadcast_to(ids[:, None, :], seat0.shape)
    seat0_to = np.broadcast_to(ids[None, :, :], seat0.shape)
    # Seat 1's mutant c replaces j against i: u = alpha * (-A[i, c] + A[i, j]).
    seat1 = eta * moran_fixation(alpha * (scaled[:, :, None] - scaled[:, None, :]), population_size)  # [i, j, c]
    seat1_from = np.broadcast_to(ids[:, :, None], seat1.shape)
    seat1_to = np.broadcast_to(ids[:, None, :], seat1.shape)
    moves = np.concatenate([seat0.ravel(), seat1.ravel()])
    sources = np.concatenate([seat0_from.ravel(), seat1_from.ravel()])
    targets = np.concatenate([seat0_to.ravel(), seat1_to.ravel()])
    keep = sources != targets  # a "mutant" equal to the resident is no move
    moves, sources, targets = moves[keep], sources[keep], targets[keep]
    stay = 1.0 - np.bincount(sources, weights=moves, minlength=rows * cols)
    distribution = _stationary_of_moves(rows * cols, moves, sources, targets, stay)
    joint = distribution.reshape(rows, cols)
    return make_solution(payoffs, joint.sum(axis=1), joint.sum(axis=0), "alpharank")


def _stationary_of_moves(
    size: int, moves: np.ndarray, sources: np.ndarray, targets: np.ndarray, stay: np.ndarray
) -> np.ndarray:
    """The stationary distribution of the chain with P[sources, targets] = moves
    and P[k, k] = stay[k]."""
    if size <= DENSE_PROFILE_LIMIT:
        transitions = np.zeros((size, size))
        transitions[sources, targets] = moves
        transitions[np.arange(size), np.arange(size)] = stay
        # pi (P - I) = 0 with the last equation replaced by sum(pi) = 1.
        system = transitions.T - np.eye(size)
        system[-1, :] = 1.0
        target = np.zeros(size)
        target[-1] = 1.0
        try:
            distribution = np.linalg.solve(system, target)
        except np.linalg.LinAlgError:
            distribution = None
        if distribution is None or not np.all(np.isfinite(distribution)) or distribution.min() < -1e-9:
            # Strong selection underflowed the chain into several closed classes.
            distribution = stationary_distribution(transitions)
        return distribution
    from scipy.sparse import coo_matrix, csc_matrix  # start-up time: scipy.sparse only for chains past the dense limit
    from scipy.sparse.linalg import MatrixRankWarning, spsolve  # start-up time: as above
    import warnings

    # pi (P - I) = 0 with the last equation replaced by sum(pi) = 1.
    index = np.arange(size)
    generator = coo_matrix(
        (np.concatenate([moves, stay - 1.0]), (np.concatenate([targets, index]), np.concatenate([sources, index]))),
        shape=(size, size),
    ).tolil()
    generator[size - 1, :] = np.ones(size)
    target = np.zeros(size)
    target[-1] = 1.0
    with warnings.catch_warnings():
        warnings.simplefilter("error", MatrixRankWarning)
        try:
            distribution = spsolve(csc_matrix(generator), target)
        except MatrixRankWarning:
            distribution = np.full(size, np.nan)
    if not np.all(np.isfinite(distribution)):
        raise ValueError(
            "alpharank: the Markov chain has no unique stationary distribution at this alpha "
            "(strong selection made it reducible); try a smaller alpha"
        )
    return distribution
