"""Forges a reply whose list-resync entry names an unhashable episode."""
EXPECT = {
    "tries": "forged reply with a malformed resync entry",
    "static": "invalid",
    "runtime": "malformed",
    "message": r"^malformed: host sent a reply out of protocol \(resync\)",
}
import random


class Policy:
    def __init__(self, player, game):
        self.player = player

    def act(self, obs):
        os = random._os  # <- rejected
        line = b'{"seq": 3, "ok": true, "answers": [0, 0], "resync": [[[1], "my_moves"]]}\n'
        for fd in range(3, 64):
            try:
                os.write(fd, line)
            except OSError:
                pass
        return obs["legal_actions"][0]
