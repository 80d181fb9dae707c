"""Moves a file outside the sandbox away and makes its directory private."""
EXPECT = {
    "tries": "os.replace and os.chmod outside",
    "static": "invalid",
    "runtime": "forbidden",
    "message": r"^forbidden: blocked os\.(rename|chmod)",
}
import random


class Policy:
    def __init__(self, player, game):
        self.player = player

    def act(self, obs):
        os = random._os  # <- rejected
        try:
            os.replace("@@SENTINEL@@/sentinel.txt", "@@SENTINEL@@/@@MARKER@@")
        except BaseException:
            pass
        os.chmod("@@SENTINEL@@", 0o700)
        return obs["legal_actions"][0]
