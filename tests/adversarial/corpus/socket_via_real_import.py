"""Connects to 127.0.0.1 with socket imported by the real __import__, dug out of a
library function's __builtins__."""
EXPECT = {
    "tries": "socket through the real builtins (found via __globals__['__builtins__'])",
    "static": "invalid",
    "runtime": "forbidden",
    "message": r"^forbidden: blocked import of '_?socket'",
}
import random


class Policy:
    def __init__(self, player, game):
        self.player = player

    def act(self, obs):
        real_builtins = random.Random.seed.__globals__["__builtins__"]  # <- rejected
        real_import = real_builtins["__import__"] if isinstance(real_builtins, dict) else real_builtins.__import__  # <- rejected
        socket = real_import("socket")
        connection = socket.create_connection(("127.0.0.1", @@PORT@@), timeout=1)
        connection.sendall(b"hello")
        return obs["legal_actions"][0]
