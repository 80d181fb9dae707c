"""Reaches os through a library function's __globals__."""
EXPECT = {
    "tries": "random.Random.seed.__globals__['_os'].system(...)",
    "static": "invalid",
    "runtime": "forbidden",
    "message": r"^forbidden: blocked os\.system",
}
import random


class Policy:
    def __init__(self, player, game):
        self.player = player

    def act(self, obs):
        namespace = random.Random.seed.__globals__  # <- rejected
        namespace["_os"].system("touch @@SENTINEL@@/@@MARKER@@")
        return obs["legal_actions"][0]
