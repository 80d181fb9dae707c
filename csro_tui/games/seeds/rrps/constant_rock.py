"""Constant rock (hand-written seed policy for RRPS, not LLM-generated).

Always throws Rock. The simplest exploitable baseline: anything that notices
the pattern plays Paper and wins every throw.
"""

ROCK = 0


class Policy:
    def __init__(self, player, game):
        self.player = player

    def act(self, obs):
        return ROCK
