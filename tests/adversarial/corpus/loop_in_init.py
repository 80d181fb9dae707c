"""Never finishes constructing: an infinite loop in Policy.__init__."""
EXPECT = {
    "tries": "infinite loop in __init__",
    "static": "valid",
    "runtime": "timeout",
    "message": r"^timeout: no answer in time while constructing",
}


class Policy:
    def __init__(self, player, game):
        spins = 0
        while True:
            spins += 1

    def act(self, obs):
        return obs["legal_actions"][0]
