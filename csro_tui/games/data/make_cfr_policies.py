"""Compute the cached CFR+ benchmark policies for Kuhn and Leduc poker.

Runs OpenSpiel's C++ CFR+ solver (`pyspiel.CFRPlusSolver`) for a fixed number
of iterations and writes the *average* policy as JSON next to this script:

    {"game": ..., "solver": ..., "iterations": ..., "open_spiel_version": ...,
     "exploitability": ..., "policy": {info_state_string: [[action, prob], ...]}}

keyed by OpenSpiel's information-state string, covering every information
state of both players.  The package loads these files (`csro_tui.games.poker`)
so nobody pays the solve time (Leduc: a few minutes) at run time.

Usage:  python -m csro_tui.games.data.make_cfr_policies [--iterations N] [GAME ...]
"""

from __future__ import annotations

import argparse
import json
import time
from importlib import metadata
from pathlib import Path

import pyspiel

DATA_DIR = Path(__file__).resolve().parent
DEFAULT_GAMES = ("kuhn_poker", "leduc_poker")
DEFAULT_ITERATIONS = 10_000
# Probabilities are rounded to keep the files small and diffable; 1e-9 is far
# below anything that moves exploitability at the precision we report.
DECIMALS = 9


def output_path(game_name: str) -> Path:
    """Where the cached policy of `game_name` lives."""
    return DATA_DIR / f"{game_name}_cfr_plus.json"


def policy_table(game: pyspiel.Game, policy: pyspiel.Policy) -> dict[str, list[list]]:
    """Every information state of every player -> [[action, probability], ...]."""
    table: dict[str, list[list]] = {}

    def walk(state: pyspiel.State) -> None:
        if state.is_terminal():
            return
        if state.is_chance_node():
            for action, _ in state.chance_outcomes():
                walk(state.child(action))
            return
        key = state.information_state_string(state.current_player())
        if key not in table:
            probs = policy.action_probabilities(state)
            legal = state.legal_actions()
            total = sum(float(probs.get(a, 0.0)) for a in legal)
            table[key] = [[a, round(float(probs.get(a, 0.0)) / total, DECIMALS)] for a in legal]
        for action in state.legal_actions():
            walk(state.child(action))

    walk(game.new_initial_state())
    return table


def solve(game_name: str, iterations: int) -> dict:
    """Run CFR+ on `game_name` and return the JSON document to cache."""
    game = pyspiel.load_game(game_name)
    solver = pyspiel.CFRPlusSolver(game)
    started = time.perf_counter()
    for _ in range(iterations):
        solver.evaluate_and_update_policy()
    seconds = time.perf_counter() - started
    average = solver.average_policy()
    return {
        "game": game_name,
        "solver": "pyspiel.CFRPlusSolver, average policy",
        "iterations": iterations,
        "open_spiel_version": metadata.version("open_spiel"),
        "solve_seconds": round(seconds, 1),
        "exploitability": pyspiel.exploitability(game, average),
        "policy": policy_table(game, average),
    }


def to_json(document: dict) -> str:
    """JSON with one line per information state, so diffs stay readable."""
    lines = ["{"]
    for key in sorted(k for k in document if k != "policy"):
        lines.append(f"  {json.dumps(key)}: {json.dumps(document[key])},")
    lines.append('  "policy": {')
    rows = [
        f"    {json.dumps(info_state)}: {json.dumps(row)}"
        for info_state, row in sorted(document["policy"].items())
    ]
    lines.append(",\n".join(rows))
    lines.append("  }")
    lines.append("}")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("games", nargs="*", default=list(DEFAULT_GAMES))
    parser.add_argument("--iterations", type=int, default=DEFAULT_ITERATIONS)
    args = parser.parse_args(argv)
    for game_name in args.games:
        document = solve(game_name, args.iterations)
        path = output_path(game_name)
        path.write_text(to_json(document))
        print(
            f"{game_name}: {len(document['policy'])} information states, "
            f"exploitability {document['exploitability']:.3g}, "
            f"{document['solve_seconds']} s -> {path}"
        )


if __name__ == "__main__":
    main()
