"""Walking small OpenSpiel game trees in tests."""

from __future__ import annotations

from typing import Iterator

import pyspiel


def decision_states(game: pyspiel.Game) -> Iterator[pyspiel.State]:
    """Every non-chance, non-terminal state of a small sequential game."""
    stack = [game.new_initial_state()]
    while stack:
        state = stack.pop()
        if state.is_terminal():
            continue
        if state.is_chance_node():
            stack.extend(state.child(a) for a, _ in state.chance_outcomes())
            continue
        yield state
        stack.extend(state.child(a) for a in state.legal_actions())
