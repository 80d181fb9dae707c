"""Beat the last move (hand-written seed policy for RRPS, not LLM-generated).

Plays what beats the opponent's previous move, betting that it repeats
itself. Strong against constant and "sticky" players, weak against anyone
who cycles ahead of it.
"""

import random


def beats(move):
    """The move that beats `move` (0 Rock, 1 Paper, 2 Scissors)."""
    return (move + 1) % 3


class Policy:
    def __init__(self, player, game):
        self.player = player
        self.rng = random.Random(game["seed"])

    def act(self, obs):
        if not obs["opp_moves"]:
            return self.rng.randrange(3)
        return beats(obs["opp_moves"][-1])
