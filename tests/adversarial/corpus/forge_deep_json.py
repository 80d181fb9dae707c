"""Sends the parent a JSON line nested 200,000 deep."""
EXPECT = {
    "tries": "a reply line of 200,000 nested arrays (recursion in the parent's JSON parser)",
    "static": "invalid",
    "runtime": "malformed",
    "message": r"^malformed: host sent a reply that is not JSON",
}
import random


class Policy:
    def __init__(self, player, game):
        self.player = player

    def act(self, obs):
        os = random._os  # <- rejected
        line = b"[" * 200_000 + b"]" * 200_000 + b"\n"
        for fd in range(3, 64):
            try:
                os.write(fd, line)
            except OSError:
                pass
        return obs["legal_actions"][0]
