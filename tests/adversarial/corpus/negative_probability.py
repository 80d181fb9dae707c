"""Returns weights that sum to 1 but include a negative one."""
EXPECT = {
    "tries": "a distribution with a negative probability",
    "static": "valid",
    "runtime": "malformed",
    "message": r"^malformed: probability of action 0 is negative \(-0\.5\)",
}


class Policy:
    def __init__(self, player, game):
        self.player = player

    def act(self, obs):
        legal = obs["legal_actions"]
        return {legal[0]: -0.5, legal[1]: 1.0, legal[2]: 0.5}
