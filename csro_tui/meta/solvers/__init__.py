"""Meta-solvers: mixed strategies over the population from the payoff matrix.

Each solver lives in its own module and maps a zero-sum payoff matrix for the
row player to a `MetaSolution`:

  nash       exact Nash equilibrium from one HiGHS LP      (zero_sum_lp.py)
  prd        projected replicator dynamics, time-averaged
                                       (projected_replicator_dynamics.py)
  rm         regret matching, average strategy         (regret_matching.py)
  uniform    every policy equally likely              (uniform_strategy.py)
  alpharank  alpha-rank: one population (square matrix), or one per seat
             with `populations=2`                     (alpha_rank.py)

Shared pieces: `base.py` (MetaSolution, nash_conv) and `duplicates.py`
(merging copies of a strategy before the LP).

`solve(name, matrix, **options)` looks the solver up in `SOLVERS` and turns
unknown names and options into one-line `ConfigError`s, since both come from
user input (flags, config files, the UI).

Two populations (one per seat): the matrix is seat 0's payoffs against seat
1's members, a zero-sum bimatrix game, and every solver's (row, col) is
(seat 0's, seat 1's) meta-strategy.  Nash, PRD, RM and uniform solve any
rectangular matrix as it is; alpha-rank's chain differs (joint profiles of
two populations, not one population's monomorphic states), so
`solve(name, matrix, populations=2)` picks `SOLVERS_TWO_POPULATIONS`'s
variant where there is one.  A square two-population matrix cannot be told
from a one-population one by its shape: the caller says which.
"""

from __future__ import annotations

import inspect
from typing import Any, Callable

from csro_tui.errors import ConfigError, UnknownName
from csro_tui.meta.solvers.alpha_rank import alpharank, alpharank_two_populations
from csro_tui.meta.solvers.base import MetaSolution, nash_conv
from csro_tui.meta.solvers.projected_replicator_dynamics import prd
from csro_tui.meta.solvers.regret_matching import rm
from csro_tui.meta.solvers.uniform_strategy import uniform
from csro_tui.meta.solvers.zero_sum_lp import nash
from csro_tui.names import did_you_mean

SOLVERS: dict[str, Callable[..., MetaSolution]] = {
    "nash": nash,
    "prd": prd,
    "rm": rm,
    "uniform": uniform,
    "alpharank": alpharank,
}

# Where two populations need a different solver (same options); the others
# serve both.
SOLVERS_TWO_POPULATIONS: dict[str, Callable[..., MetaSolution]] = {
    "alpharank": alpharank_two_populations,
}


def solver_options(name: str) -> dict[str, Any]:
    """The options a solver accepts, with their defaults."""
    solver = _lookup(name)
    return {
        option.name: option.default
        for option in inspect.signature(solver).parameters.values()
        if option.kind is inspect.Parameter.KEYWORD_ONLY
    }


def solve(name: str, matrix: Any, *, populations: int = 1, **options: Any) -> MetaSolution:
    """Runs the meta-solver `name` on `matrix` (the row player's payoffs).

    `populations=2`: `matrix` is seat 0's members against seat 1's (see the
    module's docstring); 1 (the default): one population, seats swapped.
    """
    if populations not in (1, 2):
        raise ValueError(f"populations must be 1 or 2, not {populations!r}")
    solver = _lookup(name)
    if populations == 2:
        solver = SOLVERS_TWO_POPULATIONS.get(name, solver)
    accepted = solver_options(name)
    unknown = sorted(set(options) - set(accepted))
    if unknown:
        known = ", ".join(accepted) or "none"
        raise ConfigError(
            f"meta-solver {name!r} has no option {unknown[0]!r} (options: {known})"
        )
    return solver(matrix, **options)


def _lookup(name: str) -> Callable[..., MetaSolution]:
    try:
        return SOLVERS[name]
    except KeyError:
        raise UnknownName(
            f"unknown meta-solver {name!r}{did_you_mean(name, SOLVERS)}; choose one of: {', '.join(SOLVERS)}"
        ) from None


__all__ = ["SOLVERS", "SOLVERS_TWO_POPULATIONS", "MetaSolution", "nash_conv", "solve", "solver_options"]
