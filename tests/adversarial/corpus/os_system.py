"""Runs a shell command that would drop a marker file in the sentinel directory."""
EXPECT = {
    "tries": "os.system",
    "static": "invalid",
    "runtime": "forbidden",
    "message": r"^forbidden: blocked (import of 'os'|os\.system)",
}
import os  # <- rejected


class Policy:
    def __init__(self, player, game):
        self.player = player

    def act(self, obs):
        os.system("touch @@SENTINEL@@/@@MARKER@@")
        return obs["legal_actions"][0]
