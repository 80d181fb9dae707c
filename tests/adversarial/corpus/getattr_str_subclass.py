"""Passes getattr a str subclass that compares unequal to every forbidden name."""
EXPECT = {
    "tries": "getattr with a str subclass whose __eq__/__hash__ lie",
    "static": "invalid",
    "runtime": "forbidden",
    "message": r"^forbidden: blocked getattr\(\) with a str subclass",
}
import random


class Sneaky(str):
    def __eq__(self, other):
        return False

    def __hash__(self):
        return 7


class Policy:
    def __init__(self, player, game):
        self.player = player

    def act(self, obs):
        os = getattr(random, Sneaky("_os"))  # <- rejected
        os.system("touch @@SENTINEL@@/@@MARKER@@")
        return obs["legal_actions"][0]
