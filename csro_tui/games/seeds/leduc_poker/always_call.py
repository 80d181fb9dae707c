"""Always call (hand-written seed policy for Leduc poker, not LLM-generated).

A "calling station": checks or calls every time, never raises, never folds.
Beats bluffers; loses to anyone who value-bets strong hands against it.
"""

CALL = 1


class Policy:
    def __init__(self, player, game):
        self.player = player

    def act(self, obs):
        return CALL
