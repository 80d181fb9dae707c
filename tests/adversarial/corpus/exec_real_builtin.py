"""Calls the real exec from the builtins module (not the stub in its namespace)."""
EXPECT = {
    "tries": "the real exec, taken from sys.modules['builtins']",
    "static": "invalid",
    "runtime": "forbidden",
    "message": r"^forbidden: blocked (exec|compile)\(\) called by policy code",
}
import typing


class Policy:
    def __init__(self, player, game):
        self.player = player

    def act(self, obs):
        real = typing.sys.modules["builtins"]  # <- rejected
        real.exec("import os; os.system('touch @@SENTINEL@@/@@MARKER@@')", {})
        return obs["legal_actions"][0]
