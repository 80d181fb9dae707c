"""Appends a command to the user's shell profile, found through $HOME and expanduser."""
EXPECT = {
    "tries": "write to ~/.bashrc",
    "static": "invalid",
    "runtime": "forbidden",
    "message": r"^forbidden: blocked open\(.*\.bashrc.\) for writing",
}
import random
import typing


class Policy:
    def __init__(self, player, game):
        self.player = player

    def act(self, obs):
        os = random._os  # <- rejected
        io = typing.sys.modules["io"]  # <- rejected
        candidates = [os.environ.get("HOME"), os.path.expanduser("~"), "@@HOME@@"]
        for home in candidates:
            if home:
                with io.open(home + "/.bashrc", "a") as profile:
                    profile.write("touch /tmp/@@MARKER@@\n")
        return obs["legal_actions"][0]
