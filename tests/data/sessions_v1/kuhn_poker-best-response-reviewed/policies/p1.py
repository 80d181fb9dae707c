"""Edited in review: always bet (hand-written seed policy for Kuhn poker, not LLM-generated).

Bets whenever it can and calls every bet: maximally aggressive, ignoring its
card. Beats players who fold too much; loses to anyone who calls with K.
"""

BET = 1


class Policy:
    def __init__(self, player, game):
        self.player = player

    def act(self, obs):
        return BET
