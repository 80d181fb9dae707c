"""Aborts the host process (SIGABRT)."""
EXPECT = {
    "tries": "os.abort()",
    "static": "invalid",
    "runtime": "crash",
    "message": r"^crash: host crashed with SIGABRT while act",
}
import random


class Policy:
    def __init__(self, player, game):
        self.player = player

    def act(self, obs):
        random._os.abort()  # <- rejected
