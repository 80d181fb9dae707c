"""Asks numpy for an 800 GB array."""
EXPECT = {
    "tries": "one impossible numpy allocation",
    "static": "valid",
    "runtime": "memory",
    "message": r"^memory: ran out of memory in act",
}
import numpy as np


class Policy:
    def __init__(self, player, game):
        self.player = player

    def act(self, obs):
        weights = np.ones(10**11)
        return int(weights.argmax()) + obs["legal_actions"][0]
