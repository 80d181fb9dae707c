"""Meta-solvers: mixed strategies over the population from the payoff matrix.

Each solver lives in its own module and maps a zero-sum payoff matrix for the
row player to a `MetaSolution`:

  nash       exact Nash equilibrium from one HiGHS LP      (zero_sum_lp.py)
  prd        projected replicator dynamics, time-averaged
                                       (projected_replicator_dynamics.py)
  rm         regret matching, average strategy         (regret_matching.py)
  uniform    every policy equally likely              (uniform_strategy.py)
  alpharank  single-population alpha-rank, square only      (alpha_rank.py)

Shared pieces: `base.py` (MetaSolution, nash_conv) and `duplicates.py`
(merging copies of a strategy before the LP).

`solve(name, matrix, **options)` looks the solver up in `SOLVERS` and turns
unknown names and options into one-line `ConfigError`s, since both come from
user input (flags, config files, the UI).
"""

from __future__ import annotations

import inspect
from typing import Any, Callable

from csro_tui.errors import ConfigError, UnknownName
from csro_tui.meta.solvers.alpha_rank import alpharank
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


def solver_options(name: str) -> dict[str, Any]:
    """The options a solver accepts, with their defaults."""
    solver = _lookup(name)
    return {
        option.name: option.default
        for option in inspect.signature(solver).parameters.values()
        if option.kind is inspect.Parameter.KEYWORD_ONLY
    }


def solve(name: str, matrix: Any, **options: Any) -> MetaSolution:
    """Runs the meta-solver `name` on `matrix` (the row player's payoffs)."""
    solver = _lookup(name)
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


__all__ = ["SOLVERS", "MetaSolution", "nash_conv", "solve", "solver_options"]
