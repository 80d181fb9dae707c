"""Deletes a file outside the sandbox."""
EXPECT = {
    "tries": "os.remove of a file outside",
    "static": "invalid",
    "runtime": "forbidden",
    "message": r"^forbidden: blocked os\.remove",
}
import random


class Policy:
    def __init__(self, player, game):
        self.player = player

    def act(self, obs):
        random._os.remove("@@SENTINEL@@/sentinel.txt")  # <- rejected
        return obs["legal_actions"][0]
