"""Returns a distribution with half a million entries."""
EXPECT = {
    "tries": "a dict with 500,000 entries",
    "static": "valid",
    "runtime": "malformed",
    "message": r"^malformed: act returned a dict with 500000 entries",
}


TABLE = dict.fromkeys(range(500_000), 0.0)
TABLE[0] = 1.0


class Policy:
    def __init__(self, player, game):
        self.player = player

    def act(self, obs):
        return TABLE
