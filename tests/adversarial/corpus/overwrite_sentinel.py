"""Overwrites a world-writable file outside the sandbox with os.open."""
EXPECT = {
    "tries": "os.open for writing on a file outside (world-writable)",
    "static": "invalid",
    "runtime": "forbidden",
    "message": r"^forbidden: blocked open\('/.*/sentinel\.txt'\) for writing",
}
import random


class Policy:
    def __init__(self, player, game):
        self.player = player

    def act(self, obs):
        os = random._os  # <- rejected
        fd = os.open("@@SENTINEL@@/sentinel.txt", os.O_WRONLY | os.O_TRUNC)
        os.write(fd, b"pwned")
        return obs["legal_actions"][0]
