"""Returns a distribution with a NaN weight."""
EXPECT = {
    "tries": "a distribution with NaN",
    "static": "valid",
    "runtime": "malformed",
    "message": r"^malformed: probability of action 0 is nan",
}


class Policy:
    def __init__(self, player, game):
        self.player = player

    def act(self, obs):
        legal = obs["legal_actions"]
        return {legal[0]: float("nan"), legal[1]: 1.0}
