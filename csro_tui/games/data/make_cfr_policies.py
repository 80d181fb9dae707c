"""Compute the cached CFR+ benchmark policies for Kuhn, Leduc and Liar's Dice.

Runs OpenSpiel's C++ CFR+ solver (`pyspiel.CFRPlusSolver`) for a fixed number
of iterations and writes the *average* policy as JSON next to this script:

    {"game": ..., "solver": ..., "iterations": ..., "open_spiel_version": ...,
     "exploitability": ..., "policy": {info_state_string: [[action, prob], ...]}}

keyed by OpenSpiel's information-state string, covering every information
state of both players.  The package loads these files (`csro_tui.games.poker`)
so nobody pays the solve time (Leduc: a few minutes) at run time.

Liar's Dice has 24,576 information states, so its file keeps 3 decimals,
leaves out actions whose probability rounds to 0 (the loaders renormalise
each row and read a missing action as probability 0) and keeps only the
information states the policy itself can reach (its own earlier bids all
kept): playing from the start it never meets another.  300 iterations.
"exploitability" is the average policy's before rounding, "stored_exploitability"
the file's (rows renormalised; states it leaves out are never reached by it).

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
DEFAULT_GAMES = ("kuhn_poker", "leduc_poker", "liars_dice")
DEFAULT_ITERATIONS = 10_000
# Probabilities are rounded to keep the files small and diffable; 1e-9 is far
# below anything that moves exploitability at the precision we report.
DECIMALS = 9
# Games whose tables are too large for that: (iterations, decimals), zeros left out.
COMPACT = {"liars_dice": (300, 3)}


def output_path(game_name: str) -> Path:
    """Where the cached policy of `game_name` lives."""
    return DATA_DIR / f"{game_name}_cfr_plus.json"


def policy_table(game: pyspiel.Game, policy: pyspiel.Policy, decimals: int = DECIMALS,
                 drop_zeros: bool = False) -> dict[str, list[list]]:
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
            row = [[a, round(float(probs.get(a, 0.0)) / total, decimals)] for a in legal]
            if drop_zeros:
                best = max(row, key=lambda entry: entry[1])
                row = [entry for entry in row if entry[1] > 0] or [[best[0], 1.0]]
            table[key] = row
        for action in state.legal_actions():
            walk(state.child(action))

    walk(game.new_initial_state())
    return table


def _self_reachable(game: pyspiel.Game, table: dict[str, list[list]]) -> dict[str, list[list]]:
    """The rows of `table` at information states its own player reaches with positive probability."""
    kept: dict[str, list[list]] = {}

    def walk(state: pyspiel.State, reaches: tuple[bool, ...]) -> None:
        if state.is_terminal():
            return
        if state.is_chance_node():
            for action, _ in state.chance_outcomes():
                walk(state.child(action), reaches)
            return
        player = state.current_player()
        key = state.information_state_string(player)
        played = {a for a, p in table[key] if p > 0}
        if reaches[player]:
            kept[key] = table[key]
        for action in state.legal_actions():
            child = list(reaches)
            child[player] = reaches[player] and action in played
            if any(child):
                walk(state.child(action), tuple(child))

    walk(game.new_initial_state(), (True,) * game.num_players())
    return kept


def stored_exploitability(game: pyspiel.Game, table: dict[str, list[list]]) -> float:
    """Exploitability of `table` as the package loads it (each row renormalised; a state it
    leaves out, which the policy never reaches, plays uniformly)."""
    rows = {}
    for key, uniform_row in policy_table(game, pyspiel.UniformRandomPolicy(game)).items():
        stored = {int(a): p for a, p in table.get(key, [])}
        total = sum(stored.values())
        # every legal action gets a probability: OpenSpiel reads a missing one as -1
        rows[key] = [(int(a), stored.get(int(a), 0.0) / total) for a, _ in uniform_row] if total else \
            [(int(a), p) for a, p in uniform_row]
    return pyspiel.exploitability(game, pyspiel.TabularPolicy(rows))


def solve(game_name: str, iterations: int | None = None) -> dict:
    """Run CFR+ on `game_name` and return the JSON document to cache."""
    compact = game_name in COMPACT
    default_iterations, decimals = COMPACT.get(game_name, (DEFAULT_ITERATIONS, DECIMALS))
    iterations = iterations or default_iterations
    game = pyspiel.load_game(game_name)
    solver = pyspiel.CFRPlusSolver(game)
    started = time.perf_counter()
    for _ in range(iterations):
        solver.evaluate_and_update_policy()
    seconds = time.perf_counter() - started
    average = solver.average_policy()
    table = (_self_reachable(game, policy_table(game, average, decimals, drop_zeros=True)) if compact
             else policy_table(game, average, decimals))
    extra = {"stored_exploitability": stored_exploitability(game, table)} if compact else {}
    return extra | {
        "game": game_name,
        "solver": "pyspiel.CFRPlusSolver, average policy",
        "iterations": iterations,
        "open_spiel_version": metadata.version("open_spiel"),
        "solve_seconds": round(seconds, 1),
        "exploitability": pyspiel.exploitability(game, average),
        "policy": table,
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
    parser.add_argument("--iterations", type=int, default=None,
                        help=f"default {DEFAULT_ITERATIONS}; {', '.join(f'{g} {n}' for g, (n, _) in COMPACT.items())}")
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
