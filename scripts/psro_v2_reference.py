"""Reference figures of OpenSpiel's psro_v2 on Kuhn poker, exact entries, two populations.

Writes `tests/data/psro_v2_kuhn.json`, the reference the two-population
fidelity test (`tests/engine/test_psro_v2_fidelity.py`) compares our engine
with, so that the test needs no cvxpy (the bench extra) in CI.  Re-run it only
to regenerate the file (needs `pip install -e '.[bench]'`):

    .venv/bin/python scripts/psro_v2_reference.py [--iterations 12] [--out tests/data/psro_v2_kuhn.json]

What runs: `psro_v2.PSROSolver` with `symmetric_game=False` (one population
per player), every meta-game entry the exact expected return of the joint
policy (`expected_game_score.policy_value`, overriding `sample_episodes`;
`sims_per_entry` is then irrelevant and set to 1), 12 iterations after the
initial population, in five variants (`VARIANTS`), one run each:

- "nash": psro_v2 as people run it: `BestResponseOracle` (cpp backend,
  `pyspiel.TabularBestResponse`) and psro_v2's own `nash_strategy` (two LPs
  through `lp_solver` / cvxpy with ECOS, an interior-point solver: ~1e-8
  accurate, and near the centre of the optimal face where the meta-game's
  equilibrium is not unique, not on a vertex).  Every best response joins.
- "exact_lp": the same with the meta-game solved by our Nash LP
  (`csro_tui.meta.solvers.nash`: HiGHS simplex, copies of a strategy merged
  and their weight shared), the meta-solver our engine uses.  Why not ECOS
  for the reference: its answers are approximate (exploitability ~1e-10 at
  an exact equilibrium) and its choice among equal equilibria is not one
  our LP can reproduce; the exact LP separates "a different equilibrium of
  the meta-game" from every other difference.
- "exact_lp_our_best_response": "exact_lp" with the best responses chosen by
  our oracle's own function (`oracles.best_response.seat_best_response`, its
  tie rules below), to the opponent mixture built as our engine builds it.
- "exact_lp_gated", "exact_lp_our_best_response_gated": the two above with
  our gate: a player's new best response joins only if its expected payoff
  against the other player's meta-strategy beats the player's meta-game
  value by more than 1e-9 (what `--review auto` and our best-response oracle
  do: nothing for a seat whose population already holds a best response);
  the run ends after an iteration in which neither joins.  "exact_lp_gated"
  is the like-for-like reference of the fidelity test (our engine with
  `--populations 2 --review auto`, from the uniform seed).

On Kuhn all five have the same exploitability per iteration up to the exact
equilibrium at iteration 6 (0.4583 0.4167 0.1667 0.1 0.0833 0.0321 0); the
meta-strategies differ from iteration 4 on between ECOS and the LP, and the
gated runs hold fewer members (seat 1 adds nothing at iteration 3, seat 0
nothing at 5, seat 1 nothing at 6).

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
from open_spiel.python import policy as os_policy

REPOSITORY = Path(__file__).resolve().parents[1]
DEFAULT_OUT = REPOSITORY / "tests" / "data" / "psro_v2_kuhn.json"
GAME = "kuhn_poker"

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
    "our_best_response_ties": (
        "variant exact_lp_our_best_response: csro_tui.oracles.best_response.seat_best_response - the lowest "
        "action id within 1e-12 of the best value; where the opponent's mixture never reaches an information "
        "state, the best response to a uniform random opponent there"
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


class OurBestResponseOracle:
    """A psro_v2 oracle that answers with our best-response oracle's choices.

    The opponent is built as our engine builds it: each of the other seat's
    members as a table over the game's states, mixed by reach
    (`evaluation.exact.mixture_policy_of_tables`), then `seat_best_response`
    (the function behind our `best-response` oracle) gives the responder's
    table, played as an OpenSpiel policy.  (psro_v2's own aggregation leaves
    ~1e-41 of probability on actions a pure member never takes, which our
    oracle, tolerance 1e-12, would read as ties where the engine sees
    unreached states.)
    """

    def __init__(self, game) -> None:
        from csro_tui.evaluation.exact import game_tables
        from csro_tui.games.registry import get_game
        from csro_tui.oracles.render import decision_points

        self._spec = get_game(game.get_type().short_name)
        self._template = game_tables(self._spec).template
        self._points = {seat: decision_points(self._spec, seat) for seat in range(2)}

    def _table(self, member, seat: int) -> os_policy.TabularPolicy:
        """`member` (a policy for `seat`) as a table over the game's states."""
        table = os_policy.TabularPolicy(self._template.game)
        for key in self._template.states_per_player[seat]:
            row = self._template.state_lookup[key]
            table.action_probability_array[row, :] = 0.0
            for action, probability in member.action_probabilities(self._template.states[row]).items():
                table.action_probability_array[row, action] = probability
        return table

    def __call__(self, game, training_parameters, strategy_sampler=None, using_joint_strategies=False, **kwargs):
        from csro_tui.evaluation.exact import mixture_policy_of_tables
        from csro_tui.oracles.best_response import seat_best_response

        answers = []
        for player_parameters in training_parameters:
            policies = []
            for params in player_parameters:
                seat = params["current_player"]
                other = 1 - seat
                total, probabilities = params["total_policies"], params["probabilities_of_playing_policies"]
                if using_joint_strategies:  # joint over (seat 0, seat 1): the other seat's marginal
                    joint = np.asarray(probabilities).reshape(len(total[0]), len(total[1]))
                    weights = joint.sum(axis=seat)
                else:
                    weights = np.asarray(probabilities[other])
                members = [self._table(member, other) for member in total[other]]
                opponent = mixture_policy_of_tables(self._spec, members, weights)
                table = seat_best_response(self._spec, seat, opponent, self._points[seat])
                policies.append(TablePolicy(game, seat, {
                    point.history: table.actions[point.key] for point in self._points[seat]}))
            answers.append(policies)
        return answers


class TablePolicy(os_policy.Policy):
    """A deterministic policy for one seat: history_str -> action."""

    def __init__(self, game, seat: int, action_of_history: dict[str, int]) -> None:
        super().__init__(game, [seat])
        self._action_of_history = action_of_history

    def action_probabilities(self, state, player_id=None):
        return {self._action_of_history[state.history_str()]: 1.0}


# Variant -> (meta-solver, best-response oracle, gated).
VARIANTS = {
    "nash": ("nash", "cpp", False),
    "exact_lp": ("exact_lp", "cpp", False),
    "exact_lp_our_best_response": ("exact_lp", "ours", False),
    "exact_lp_gated": ("exact_lp", "cpp", True),
    "exact_lp_our_best_response_gated": ("exact_lp", "ours", True),
}
# A new policy improves when it beats its seat's meta-game value by more than
# this (our gate's `_EXACT_SLACK`, and the best-response oracle's own bar).
GATE_SLACK = 1e-9


def run(variant: str, iterations: int, game_name: str = GAME) -> tuple[list[dict], list[list[float]]]:
    """psro_v2 on `game_name` with exact entries: one dict of figures per iteration
    (0 = initial), and the final meta-game for player 0 (rows: player 0's
    members in joining order, columns player 1's; each iteration's meta-game
    is its top-left block).

    A gated run stops after the first iteration in which neither seat's new
    policy improves (nothing joins), as our engine's run ends there.
    """
    import pyspiel
    from open_spiel.python.algorithms import exploitability, expected_game_score, policy_aggregator
    from open_spiel.python.algorithms.psro_v2 import best_response_oracle, psro_v2

    meta_solver, responder, gated = VARIANTS[variant]

    def exact_value(policies) -> np.ndarray:
        return np.asarray(expected_game_score.policy_value(game.new_initial_state(), policies))

    class ExactEntriesPSRO(psro_v2.PSROSolver):
        """psro_v2 with every meta-game entry the exact expected return; gated: a
        seat's new policy joins only if it improves on the seat's meta-game value."""

        joined: list[int] = [1, 1]

        def sample_episodes(self, policies, num_episodes):
            return exact_value(policies)

        def update_agents(self):
            super().update_agents()
            self.joined = [len(new) for new in self._new_policies]
            if not gated:
                return
            policies, strategies = self.get_policies(), self.get_meta_strategies()
            value = float(strategies[0] @ self.get_meta_game()[0] @ strategies[1])
            for seat in range(2):
                other = 1 - seat
                kept = []
                for new in self._new_policies[seat]:
                    payoff = sum(
                        weight * exact_value([new, member] if seat == 0 else [member, new])[seat]
                        for member, weight in zip(policies[other], strategies[other])
                    )
                    if payoff > (value if seat == 0 else -value) + GATE_SLACK:
                        kept.append(new)
                self._new_policies[seat] = kept
            self.joined = [len(new) for new in self._new_policies]

    game = pyspiel.load_game(game_name)
    np.random.seed(0)
    with contextlib.redirect_stdout(io.StringIO()):  # psro_v2 prints its settings
        if responder == "ours":
            oracle = OurBestResponseOracle(game)
        else:
            oracle = best_response_oracle.BestResponseOracle(game=game, best_response_backend="cpp")
        solver = ExactEntriesPSRO(
            game, oracle, sims_per_entry=1,
            initial_policies=[os_policy.UniformRandomPolicy(game) for _ in range(2)],
            meta_strategy_method="nash" if meta_solver == "nash" else exact_lp_strategy,
            training_strategy_selector="probabilistic",
            symmetric_game=False,
        )
    aggregator = policy_aggregator.PolicyAggregator(game)
    rows = []
    for iteration in range(iterations + 1):
        if iteration > 0:
            with contextlib.redirect_stdout(io.StringIO()):
                solver.iteration()
            if gated and not any(solver.joined):
                break
        policies = solver.get_policies()
        strategies = solver.get_meta_strategies()
        joint = aggregator.aggregate(range(2), policies, strategies)
        report = exploitability.nash_conv(game, joint, return_only_nash_conv=False)
        nash_conv = float(report.nash_conv)
        table = np.asarray(solver.get_meta_game()[0], dtype=float)
        rows.append({
            "iteration": iteration,
            "population_sizes": [len(policies[0]), len(policies[1])],
            "joined": list(solver.joined) if iteration > 0 else [1, 1],
            "meta_strategies": [[float(w) for w in s] for s in strategies],
            "meta_value": float(np.asarray(strategies[0]) @ table @ np.asarray(strategies[1])),
            # What each player's best response gains over the profile (sums to NashConv).
            "player_improvements": [float(x) for x in report.player_improvements],
            "nash_conv": nash_conv,
            "exploitability": nash_conv / 2.0,
        })
    return rows, np.asarray(solver.get_meta_game()[0], dtype=float).tolist()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=12, help="PSRO iterations after the initial population")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args(argv)
    results = {name: run(name, args.iterations) for name in VARIANTS}
    runs = {name: rows for name, (rows, _) in results.items()}
    meta_games = {name: table for name, (_, table) in results.items()}
    data = {
        "what": (
            "OpenSpiel psro_v2 on kuhn_poker: two populations (symmetric_game=False), exact entries, exact "
            "best-response oracle; runs: per iteration the population sizes, the policies that joined, the "
            "meta-strategies, the meta-game value (player 0), each player's best-response improvement, NashConv "
            "and exploitability (= NashConv / 2) of the joint profile; meta_games: each run's final meta-game for "
            "player 0 (rows: player 0's members in joining order; an iteration's meta-game is its top-left block)"
        ),
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
        "meta_games": meta_games,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(data, indent=1) + "\n")
    for name, rows in runs.items():
        print(name, " ".join(f"{row['exploitability']:.4g}" for row in rows))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
