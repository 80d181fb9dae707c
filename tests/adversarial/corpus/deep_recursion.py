"""Recurses without end, after trying to lift the recursion limit."""
EXPECT = {
    "tries": "unbounded recursion",
    "static": "valid",
    "runtime": "crash",
    "message": r"^crash: RecursionError(: maximum recursion depth exceeded)? in act",
}


def dive(depth):
    return dive(depth + 1) + 1


class Policy:
    def __init__(self, player, game):
        self.player = player

    def act(self, obs):
        return dive(0)
