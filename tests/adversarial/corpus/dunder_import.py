"""Imports os with the __import__ builtin."""
EXPECT = {
    "tries": "__import__('os')",
    "static": "invalid",
    "runtime": "forbidden",
    "message": r"^forbidden: blocked import of 'os'",
}


class Policy:
    def __init__(self, player, game):
        self.player = player

    def act(self, obs):
        os = __import__("os")  # <- rejected
        os.system("touch @@SENTINEL@@/@@MARKER@@")
        return obs["legal_actions"][0]
