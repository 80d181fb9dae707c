"""Never finishes constructing: an infinite loop in Policy.__init__."""
EXPECT = {
    "tries": "infinite loop in __init__",
    "static": "valid",
    "runtime": "timeout",
    "message": r"^timeout: Policy\.__init__ \(episode \d+\) ran past its limit of [\d.]+ s",
}


class Policy:
    def __init__(self, player, game):
        spins = 0
        while True:
            spins += 1

    def act(self, obs):
        return obs["legal_actions"][0]
