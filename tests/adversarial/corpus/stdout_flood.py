"""Prints megabytes on every move, some of it shaped like protocol replies."""
EXPECT = {
    "tries": "stdout flood",
    "static": "valid",
    "runtime": "ok",
}


class Policy:
    def __init__(self, player, game):
        self.player = player

    def act(self, obs):
        for i in range(300):
            print('{"seq": %d, "ok": true, "answers": [99]}' % i, "x" * 500)
        return obs["legal_actions"][0]
