"""Reference figures of OpenSpiel's psro_v2 on Kuhn poker, exact entries, two populations.

Writes `tests/data/psro_v2_kuhn.json`, the reference the two-population
fidelity test (`tests/engine/test_psro_v2_fidelity.py`) compares our engine
with, so that the test needs no cvxpy (the bench extra) in CI.  Re-run it only
to regenerate the file (needs `pip install -e '.[bench]'`):

    .venv/bin/python scripts/psro_v2_reference.py [--iterations 12] [--out tests/data/psro_v2_kuhn.json]

What runs: `psro_v2.PSROSolver` with `symmetric_game=False` (one population
per player), `BestResponseOracle` (cpp backend: `pyspiel.TabularBestResponse`),
every meta-game entry the exact expected return of the joint policy
(`expected_game_score.policy_value`, overriding `sample_episodes`; with it
`sims_per_entry` is irrelevant and is set to 1), and two meta-solvers, one
run each:

- "nash": psro_v2's own `meta_strategies.nash_strategy` (two LPs through
  `lp_solver` / cvxpy with ECOS, an interior-point solver).  This is psro_v2
  as people run it.  ECOS stops at ~1e-8 accuracy and, where the meta-game's
  equilibrium is not unique, lands near the centre of the optimal face rather
  than on a vertex.
- "exact_lp": the same loop with the meta-game solved by our Nash LP
  (`csro_tui.meta.solvers.nash`: HiGHS simplex, copies of a strategy merged
  and their weight shared), i.e. the meta-solver our engine uses.  With it
  the only remaining differences from our engine are the loop itself, the
  best-response oracle and the evaluation: this is the like-for-like
  reference the fidelity test holds our engine to.

Random and tie-breaking choices in psro_v2 (OpenSpiel 2.0.2; they are listed
in the data file too):

- initial population: one `policy.UniformRandomPolicy` per player (passed
  explicitly here; psro_v2's default is the same).
- training strategy selector "probabilistic" draws, with `np.random`, which
  member each player's new policy starts from; `BestResponseOracle` ignores
  the starting policy, so the draw changes nothing.  `np.random.seed(0)`
  anyway.
- both players' best responses in an iteration answer the meta-strategies
  solved at the end of the previous iteration (the joint, non-marginalised
  profile, which for Nash is the product of the two mixtures).
- best response ties: `TabularBestResponse::BestResponseAction` keeps the
  first legal action (lowest id) whose value is strictly greater than the
  best so far (`value > best_value`, no tolerance), so among exact ties the
  lowest id wins; at an information state the opponent's mixture never
  reaches every action's value is 0 and the lowest id (Kuhn: 0, pass)
  is played.  Ours (`oracles/best_response.py`) takes the lowest id within
  1e-12 of the best, and at unreached states plays the best response to a
  uniform random opponent instead.
- exploitability: `exploitability.exploitability` (NashConv / 2) of the
  joint profile, each player playing its population's mixture
  (`policy_aggregator.PolicyAggregator`); measured outside the solver's loop.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import sys
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path

import numpy as np

REPOSITORY = Path(__file__).resolve().parents[1]
DEFAULT_OUT = REPOSITORY / "tests" / "data" / "psro_v2_kuhn.json"
GAME = "kuhn_poker"
META_SOLVERS = ("nash", "exact_lp")

RANDOMNESS_AND_TIES = {
    "initial_policies": "one open_spiel.python.policy.UniformRandomPolicy per player (psro_v2's default too)",
    "training_strategy_selector": (
        "'probabilistic' (np.random, seeded 0): picks the member each player's new policy starts from; "
        "BestResponseOracle ignores it, so the choice changes nothing"
    ),
    "best_response_targets": (
        "both players' best responses in an iteration answer the meta-strategies of the previous "
        "meta-solve (the joint profile = product of the two Nash mixtures)"
    ),
    "best_response_ties": (
        "pyspiel.TabularBestResponse (cpp backend): the lowest legal action id whose value is strictly "
        "greater than every lower id's (exact float comparison, no tolerance); at information states the "
        "opponent's mixture never reaches, every value is 0 and action 0 (pass) is played"
    ),
    "meta_solver_nash": (
        "meta_strategies.nash_strategy: lp_solver.solve_zero_sum_matrix_game, cvxpy + ECOS (interior point, "
        "~1e-8 accurate; near the centre of the optimal face when the equilibrium is not unique); negative "
        "round-off clipped to 0 and renormalised"
    ),
    "meta_solver_exact_lp": (
        "csro_tui.meta.solvers.nash (HiGHS simplex via scipy; copies of a strategy merged and their weight "
        "shared; otherwise HiGHS's vertex): the meta-solver of our engine"
    ),
    "entries": "expected_game_score.policy_value of the joint policy (exact), not sampled episodes",
}


def exact_lp_strategy(solver, return_joint=False):
    """psro_v2 meta-strategy method: our Nash LP on the row player's table."""
    from open_spiel.python.algorithms.psro_v2 import meta_strategies

    from csro_tui.meta.solvers import solve

    row_table = solver.get_meta_game()[0]
    solution = solve("nash", row_table)
    result = [np.array(solution.row, dtype=float), np.array(solution.col, dtype=float)]
    if not return_joint:
        return result
    return result, meta_strategies.get_joint_strategy_from_marginals(result)


def run(meta_solver: str, iterations: int) -> list[dict]:
    """psro_v2 on Kuhn with exact entries; one dict of figures per iteration (0 = initial)."""
    import pyspiel
    from open_spiel.python import policy as os_policy
    from open_spiel.python.algorithms import exploitability, expected_game_score, policy_aggregator
    from open_spiel.python.algorithms.psro_v2 import best_response_oracle, psro_v2

    class ExactEntriesPSRO(psro_v2.PSROSolver):
        """psro_v2 with every meta-game entry the exact expected return."""

        def sample_episodes(self, policies, num_episodes):
            return np.asarray(expected_game_score.policy_value(self._game.new_initial_state(), policies))

    game = pyspiel.load_game(GAME)
    np.random.seed(0)
    method = "nash" if meta_solver == "nash" else exact_lp_strategy
    with contextlib.redirect_stdout(io.StringIO()):  # psro_v2 prints its settings
        oracle = best_response_oracle.BestResponseOracle(game=game, best_response_backend="cpp")
        solver = ExactEntriesPSRO(
            game, oracle, sims_per_entry=1,
            initial_policies=[os_policy.UniformRandomPolicy(game) for _ in range(2)],
            meta_strategy_method=method, training_strategy_selector="probabilistic",
            symmetric_game=False,
        )
    aggregator = policy_aggregator.PolicyAggregator(game)
    rows = []
    for iteration in range(iterations + 1):
        if iteration > 0:
            with contextlib.redirect_stdout(io.StringIO()):
                solver.iteration()
        policies = solver.get_policies()
        strategies = solver.get_meta_strategies()
        joint = aggregator.aggregate(range(2), policies, strategies)
        nash_conv = float(exploitability.nash_conv(game, joint))
        table = np.asarray(solver.get_meta_game()[0], dtype=float)
        rows.append({
            "iteration": iteration,
            "population_sizes": [len(policies[0]), len(policies[1])],
            "meta_strategies": [[float(w) for w in s] for s in strategies],
            "meta_value": float(np.asarray(strategies[0]) @ table @ np.asarray(strategies[1])),
            "nash_conv": nash_conv,
            "exploitability": nash_conv / 2.0,
        })
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=12, help="PSRO iterations after the initial population")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args(argv)
    runs = {name: run(name, args.iterations) for name in META_SOLVERS}
    data = {
        "what": "OpenSpiel psro_v2 on kuhn_poker: two populations (symmetric_game=False), exact entries, "
                "exact best-response oracle (cpp); per iteration: population sizes, meta-strategies, meta-game "
                "value (player 0), NashConv and exploitability (= NashConv / 2) of the joint profile",
        "made_by": "scripts/psro_v2_reference.py",
        "made_at": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "open_spiel_version": metadata.version("open_spiel"),
        "numpy_version": np.__version__,
        "cvxpy_version": metadata.version("cvxpy"),
        "python_version": sys.version.split()[0],
        "game": GAME,
        "iterations": args.iterations,
        "randomness_and_ties": RANDOMNESS_AND_TIES,
        "runs": runs,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(data, indent=1) + "\n")
    for name, rows in runs.items():
        print(name, " ".join(f"{row['exploitability']:.4g}" for row in rows))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
