"""Calls sys.exit while the episode is being constructed."""
EXPECT = {
    "tries": "sys.exit() in __init__",
    "static": "invalid",
    "runtime": "crash",
    "message": r"^crash: SystemExit: 3 in Policy.__init__",
}
import typing


class Policy:
    def __init__(self, player, game):
        typing.sys.exit(3)  # <- rejected

    def act(self, obs):
        return obs["legal_actions"][0]
