"""Closes every descriptor above stderr, the host's own channel included."""
EXPECT = {
    "tries": "os.closerange(3, 1024) mid-match",
    "static": "invalid",
    "runtime": "crash",
    "message": r"^crash: host exited with code 3 while act",
}
import random


class Policy:
    def __init__(self, player, game):
        self.player = player

    def act(self, obs):
        random._os.closerange(3, 1024)  # <- rejected
        return obs["legal_actions"][0]
