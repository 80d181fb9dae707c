"""Ends the host process at once with os._exit(0), mid-match."""
EXPECT = {
    "tries": "os._exit(0) in act",
    "static": "invalid",
    "runtime": "crash",
    "message": r"^crash: host exited with code 0 while act",
}
import random


class Policy:
    def __init__(self, player, game):
        self.player = player

    def act(self, obs):
        if len(obs["my_moves"]) == 3:
            random._os._exit(0)  # <- rejected
        return obs["legal_actions"][0]
