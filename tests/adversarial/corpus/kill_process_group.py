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
        # Signal 0 for "every process" and "my group": the guard must block the
        # call itself (if it ever did not, this would still harm nothing).
        for action in (lambda: os.killpg(os.getpgid(os.getppid()), 15), lambda: os.kill(-1, 0),
                       lambda: os.kill(0, 0)):
            try:
                action()
            except BaseException:
                pass
        return obs["legal_actions"][0]
