"""Imports os with importlib.import_module."""
EXPECT = {
    "tries": "importlib.import_module('os')",
    "static": "invalid",
    "runtime": "forbidden",
    "message": r"^forbidden: blocked import of 'importlib'",
}
import importlib  # <- rejected


class Policy:
    def __init__(self, player, game):
        self.player = player

    def act(self, obs):
        importlib.import_module("os").system("touch @@SENTINEL@@/@@MARKER@@")
        return obs["legal_actions"][0]
