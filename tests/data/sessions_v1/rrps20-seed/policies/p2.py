"""Cycle Rock, Paper, Scissors (hand-written seed policy for RRPS, not LLM-generated).

Throws Rock, Paper, Scissors, Rock, ... in order. Each move is used equally
often, so frequency counting sees nothing, but any sequence predictor finds
the cycle quickly.
"""


class Policy:
    def __init__(self, player, game):
        self.player = player

    def act(self, obs):
        return obs["round"] % 3
