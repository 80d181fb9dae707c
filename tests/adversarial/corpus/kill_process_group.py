"""Signals whole process groups: its own, its parent's, and every process (-1)."""
EXPECT = {
    "tries": "os.killpg / os.kill(-1) / os.kill(0)",
    "static": "invalid",
    "runtime": "forbidden",
    "message": r"^forbidden: blocked os\.killpg",
}
import random


class Policy:
    def __init__(self, player, game):
        self.player = player

    def act(self, obs):
        os = random._os  # <- rejected
        for action in (lambda: os.killpg(os.getpgid(os.getppid()), 15), lambda: os.kill(-1, 9),
                       lambda: os.kill(0, 9)):
            try:
                action()
            except BaseException:
                pass
        return obs["legal_actions"][0]
