"""Uniform random (hand-written seed policy for RRPS, not LLM-generated).

The Nash equilibrium of rock-paper-scissors: each move with probability 1/3.
It cannot lose in expectation against anyone, and cannot win either.
Returns the distribution; the referee samples from it.
"""


class Policy:
    def __init__(self, player, game):
        self.player = player

    def act(self, obs):
        return {0: 1 / 3, 1: 1 / 3, 2: 1 / 3}
