"""Uniform random (hand-written seed policy for Liar's Dice, not LLM-generated).

Every legal action with equal probability: any higher bid, or Liar once a
bid stands. A baseline that every reasonable strategy should beat. Returns
the distribution; the referee samples from it.
"""


class Policy:
    def __init__(self, player, game):
        self.player = player

    def act(self, obs):
        legal = obs["legal_actions"]
        return {action: 1 / len(legal) for action in legal}
