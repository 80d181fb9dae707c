"""Single-population alpha-rank for a symmetric two-player meta-game.

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
    """rho[s, r]: probability that one mutant r takes over a population of s.

    Written with expm1 of non-positive arguments only, so that strong
    selection underflows to 0 instead of overflowing to inf / inf.
    """
    selection = alpha * (payoffs.T - payoffs)  # [s, r] -> alpha (M[r,s] - M[s,r])
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
