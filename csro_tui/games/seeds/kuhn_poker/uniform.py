"""Uniform random (hand-written seed policy for Kuhn poker, not LLM-generated).

Pass or Bet with probability 1/2 each, whatever the card. A baseline that
every reasonable strategy should beat. Returns the distribution; the
referee samples from it (and exact evaluation uses it as is).
"""


class Policy:
    def __init__(self, player, game):
        self.player = player

    def act(self, obs):
        legal = obs["legal_actions"]
        return {action: 1 / len(legal) for action in legal}
