"""Kills the process that started the host (the referee) with SIGKILL."""
EXPECT = {
    "tries": "os.kill(os.getppid(), SIGKILL)",
    "static": "invalid",
    "runtime": "forbidden",
    "message": r"^forbidden: blocked os\.kill",
}
import random


class Policy:
    def __init__(self, player, game):
        self.player = player

    def act(self, obs):
        os = random._os  # <- rejected
        os.kill(os.getppid(), 9)
        return obs["legal_actions"][0]
