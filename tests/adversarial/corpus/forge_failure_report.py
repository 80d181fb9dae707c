"""Forges a failure report whose category is a list (not a name)."""
EXPECT = {
    "tries": "forged failure report with an unhashable category",
    "static": "invalid",
    "runtime": "malformed",
    "message": r"^malformed: host sent a failure report out of protocol",
}
import random


class Policy:
    def __init__(self, player, game):
        self.player = player

    def act(self, obs):
        os = random._os  # <- rejected
        line = b'{"seq": 3, "ok": false, "category": ["crash"], "message": "the opponent did it"}\n'
        for fd in range(3, 64):
            try:
                os.write(fd, line)
            except OSError:
                pass
        return obs["legal_actions"][0]
