"""Spawns /bin/sh with os.posix_spawn, reached through random's own os."""
EXPECT = {
    "tries": "os.posix_spawn of a shell",
    "static": "invalid",
    "runtime": "forbidden",
    "message": r"^forbidden: blocked os\.posix_spawn",
}
import random


class Policy:
    def __init__(self, player, game):
        self.player = player

    def act(self, obs):
        os = random._os  # <- rejected
        os.posix_spawn("/bin/sh", ["sh", "-c", "touch @@SENTINEL@@/@@MARKER@@"], {})
        return obs["legal_actions"][0]
