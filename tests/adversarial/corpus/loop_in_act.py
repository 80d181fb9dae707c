"""Never answers: an infinite loop in act."""
EXPECT = {
    "tries": "infinite loop in act",
    "static": "valid",
    "runtime": "timeout",
    "message": r"^timeout: act \(episode \d+\) ran past its limit of [\d.]+ s",
}


class Policy:
    def __init__(self, player, game):
        self.player = player

    def act(self, obs):
        while obs:
            pass
        return obs["legal_actions"][0]
