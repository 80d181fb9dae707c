"""Valid: plays a uniformly random legal action from its own seeded generator."""
import random


class Policy:
    def __init__(self, player, game):
        self.player = player
        self.rng = random.Random(game["seed"])

    def act(self, obs):
        return self.rng.choice(obs["legal_actions"])
