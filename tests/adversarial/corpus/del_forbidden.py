"""Waits for the end of its episode, then runs a command from __del__."""
EXPECT = {
    "tries": "os.system in __del__ (errors there are swallowed by Python)",
    "static": "invalid",
    "runtime": "forbidden",
    "message": r"^forbidden: blocked os\.system.* in end of episode",
}
import random


class Policy:
    def __init__(self, player, game):
        self.player = player

    def act(self, obs):
        return obs["legal_actions"][0]

    def __del__(self):
        random._os.system("touch @@SENTINEL@@/@@MARKER@@")  # <- rejected
