"""Returns an integer with 5,000 digits (more than JSON may carry here)."""
EXPECT = {
    "tries": "return 10**5000",
    "static": "valid",
    "runtime": "malformed",
    "message": r"^malformed: act returned a 16610-bit int; expected an action id",
}


class Policy:
    def __init__(self, player, game):
        self.player = player

    def act(self, obs):
        return 10**5000
