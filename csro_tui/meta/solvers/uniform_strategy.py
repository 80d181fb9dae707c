"""The uniform meta-strategy: every policy equally likely.

PSRO with this meta-solver best-responds to the whole population mixed
evenly, which makes it a form of fictitious play.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from csro_tui.meta.solvers.base import MetaSolution, as_payoff_matrix, make_solution


def uniform(matrix: Any) -> MetaSolution:
    """Uniform strategies for both players of `matrix`."""
    payoffs = as_payoff_matrix(matrix)
    row_count, col_count = payoffs.shape
    return make_solution(payoffs, np.ones(row_count), np.ones(col_count), "uniform")
