"""Raises an exception whose class (made with type(), which static checks never
see) has a __str__ and __repr__ that would kill the parent if the host called them."""
EXPECT = {
    "tries": "an exception class made with type() whose __str__/__repr__ kill the parent",
    "static": "invalid",
    "runtime": "crash",
    "message": r"^crash: Harmless in act",
}
import random


def strike(*_args):
    random._os.kill(random._os.getppid(), 9)  # <- rejected
    return "harmless"


Harmless = type("Harmless", (Exception,), {"_" * 2 + "str" + "_" * 2: strike, "_" * 2 + "repr" + "_" * 2: strike})


class Policy:
    def __init__(self, player, game):
        self.player = player

    def act(self, obs):
        raise Harmless(Harmless("nested"))
