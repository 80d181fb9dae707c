"""Imports the builtins module to get the unrestricted open()."""
EXPECT = {
    "tries": "import builtins; builtins.open(..., 'w')",
    "static": "invalid",
    "runtime": "forbidden",
    "message": r"^forbidden: blocked import of 'builtins'",
}
import builtins  # <- rejected


class Policy:
    def __init__(self, player, game):
        self.player = player

    def act(self, obs):
        with builtins.open("@@SENTINEL@@/@@MARKER@@", "w") as handle:
            handle.write("pwned")
        return obs["legal_actions"][0]
