"""Section 4: meta-solvers on random antisymmetric zero-sum matrices.

Our Nash LP (`csro_tui.meta.solvers.nash`, one HiGHS LP) against OpenSpiel's
`projected_replicator_dynamics` at its defaults (1e5 steps, dt 1e-3, gamma
1e-6, time-averaged), both scored by NashConv on the same matrix.
"""

from __future__ import annotations

import numpy as np

from bench.common import Table, fmt_seconds, ratio, timed

SIZES = (50, 200, 500)


def random_antisymmetric(size: int, seed: int) -> np.ndarray:
    values = np.random.default_rng(seed).normal(size=(size, size))
    return values - values.T


def meta_solvers(table: Table, quick: bool) -> None:
    from open_spiel.python.algorithms.projected_replicator_dynamics import projected_replicator_dynamics

    from csro_tui.meta.solvers import nash, nash_conv

    for size in SIZES:
        matrix = random_antisymmetric(size, size)
        ours = timed(lambda: nash(matrix), 3)
        prd = timed(lambda: projected_replicator_dynamics([matrix, -matrix]), 1)
        ours_conv = ours.value.nash_conv
        row, col = prd.value
        prd_conv = nash_conv(matrix, row, col)
        speedup = ratio(prd.best, ours.best)
        targeted = size == 200
        table.add("4", f"{size}x{size} antisymmetric: Nash LP vs PRD (defaults)",
                  f"{fmt_seconds(ours.best)}, NashConv {ours_conv:.1e}",
                  f"{fmt_seconds(prd.best)}, NashConv {prd_conv:.1e}",
                  f"{speedup:.0f}x faster",
                  ">= 10x, NashConv <= PRD's" if targeted else "",
                  (speedup >= 10 and ours_conv <= prd_conv) if targeted else None,
                  note=f"Nash LP {ours.describe()}; PRD {prd.describe()}")
