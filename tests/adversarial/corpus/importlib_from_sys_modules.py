"""Uses the import machinery itself (always loaded, as _frozen_importlib) to import subprocess."""
EXPECT = {
    "tries": "sys.modules['_frozen_importlib']._gcd_import('subprocess')",
    "static": "invalid",
    "runtime": "forbidden",
    "message": r"^forbidden: blocked import of 'subprocess'",
}
import typing


class Policy:
    def __init__(self, player, game):
        self.player = player

    def act(self, obs):
        machinery = typing.sys.modules["_frozen_importlib"]  # <- rejected
        machinery._gcd_import("subprocess").run(["touch", "@@SENTINEL@@/@@MARKER@@"])
        return obs["legal_actions"][0]
