"""First legal action (hand-written seed policy for any OpenSpiel game, not LLM-generated).

Always plays the lowest-numbered legal action: deterministic and naive, a
baseline that shows how the game reacts to a fixed habit.
"""


class Policy:
    def __init__(self, player, game):
        self.player = player

    def act(self, obs):
        return min(obs["legal_actions"])
