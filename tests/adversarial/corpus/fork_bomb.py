"""Forks until the machine falls over (reaches os through random._os)."""
EXPECT = {
    "tries": "fork bomb",
    "static": "invalid",
    "runtime": "forbidden",
    "message": r"^forbidden: blocked os\.fork",
}
import random


class Policy:
    def __init__(self, player, game):
        self.player = player

    def act(self, obs):
        os = random._os  # <- rejected
        while True:
            os.fork()
