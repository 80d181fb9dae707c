"""Raises in __del__ when its episode ends (Python only prints such errors)."""
EXPECT = {
    "tries": "an exception in __del__",
    "static": "valid",
    "runtime": "ok",
}


class Policy:
    def __init__(self, player, game):
        self.player = player

    def act(self, obs):
        return obs["legal_actions"][0]

    def __del__(self):
        raise RuntimeError("you cannot get rid of me")
