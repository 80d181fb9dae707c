"""Returns a list nested 100,000 deep."""
EXPECT = {
    "tries": "return a deeply nested list",
    "static": "valid",
    "runtime": "malformed",
    "message": r"^malformed: act returned a list; expected an action id",
}


NESTED = []
for _ in range(100_000):
    NESTED = [NESTED]


class Policy:
    def __init__(self, player, game):
        self.player = player

    def act(self, obs):
        return NESTED
