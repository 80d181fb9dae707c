"""Raises an exception whose __str__ raises again (and whose class name lies)."""
EXPECT = {
    "tries": "an exception whose __str__ raises",
    "static": "valid",
    "runtime": "crash",
    "message": r"^crash: ForbiddenOperation in act",
}


class ForbiddenOperation(Exception):
    def __str__(self):
        raise RuntimeError("no string for you")


class Policy:
    def __init__(self, player, game):
        self.player = player

    def act(self, obs):
        raise ForbiddenOperation()
