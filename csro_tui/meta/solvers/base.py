"""What every meta-solver returns, and the NashConv of a matrix-game profile.

A meta-solver reads the payoff matrix of a two-player zero-sum game for the
row player (`matrix[i][j]` = row's payoff when row plays i and column plays
j; the column player receives the negation) and returns one mixed strategy
per player.  CSRO's meta-game is one square antisymmetric matrix (one
population, seats swapped), but every solver also accepts rectangular ones.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass(frozen=True)
class MetaSolution:
    """A mixed-strategy profile of a matrix game and how good it is.

    The arrays are read-only so that a solution shared between the engine,
    the session log and the UI cannot be changed behind anyone's back.
    """

    row: np.ndarray  # row player's mixed strategy
    col: np.ndarray  # column player's mixed strategy
    value: float  # row's expected payoff row @ M @ col
    nash_conv: float  # sum of both players' best-response gains, >= 0
    solver: str

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable copy (for session events)."""
        return {
            "row": self.row.tolist(),
            "col": self.col.tolist(),
            "value": self.value,
            "nash_conv": self.nash_conv,
            "solver": self.solver,
        }


def as_payoff_matrix(matrix: Any) -> np.ndarray:
    """Returns `matrix` as a float64 2-D array; raises ValueError if unusable."""
    array = np.array(matrix, dtype=np.float64)
    if array.ndim != 2 or array.shape[0] == 0 or array.shape[1] == 0:
        raise ValueError(
            f"a payoff matrix must be 2-D and non-empty, got shape {array.shape}"
        )
    if not np.all(np.isfinite(array)):
        raise ValueError("a payoff matrix must not contain NaN or infinite entries")
    return array


def as_mixed_strategy(weights: Any, size: int) -> np.ndarray:
    """Clips tiny negative round-off to 0 and renormalises to sum to 1."""
    strategy = np.clip(np.asarray(weights, dtype=np.float64).reshape(-1), 0.0, None)
    if strategy.shape != (size,):
        raise ValueError(f"expected a strategy over {size} actions, got {strategy.shape}")
    total = strategy.sum()
    if not np.isfinite(total) or total <= 0.0:
        raise ValueError("a mixed strategy needs positive, finite total weight")
    return strategy / total


def nash_conv(matrix: Any, row: Any, col: Any) -> float:
    """NashConv of (row, col) in the zero-sum matrix game `matrix`.

    The row player's best-response gain is max_i (M col)_i - row M col and the
    column player's is row M col - min_j (row M)_j; their sum, which is 0
    exactly at a Nash equilibrium, is max(M col) - min(row M).
    """
    payoffs = as_payoff_matrix(matrix)
    row = np.asarray(row, dtype=np.float64)
    col = np.asarray(col, dtype=np.float64)
    gain = float(np.max(payoffs @ col) - np.min(row @ payoffs))
    # Round-off can make an exact equilibrium look a hair negative.
    return max(gain, 0.0)


def make_solution(matrix: np.ndarray, row: Any, col: Any, solver: str) -> MetaSolution:
    """Normalises both strategies and packs them with value and NashConv."""
    row = as_mixed_strategy(row, matrix.shape[0])
    col = as_mixed_strategy(col, matrix.shape[1])
    row.flags.writeable = False
    col.flags.writeable = False
    return MetaSolution(
        row=row,
        col=col,
        value=float(row @ matrix @ col),
        nash_conv=nash_conv(matrix, row, col),
        solver=solver,
    )


def payoff_scale(matrix: np.ndarray) -> float:
    """The largest absolute payoff, or 1 for an all-zero matrix.

    Iterative solvers divide payoffs by it so that their step sizes and
    temperatures mean the same on a Kuhn meta-game (payoffs ~1) as on a
    1000-throw RRPS one (payoffs ~100).
    """
    scale = float(np.max(np.abs(matrix)))
    return scale if scale > 0.0 else 1.0
