"""Reads a file outside through a library that opens files for it (linecache)."""
EXPECT = {
    "tries": "read the key file through linecache.getline (library code opens it)",
    "static": "invalid",
    # Outside the installation paths look missing while policy code runs (and in
    # bubblewrap they are): linecache finds no file to open, and returns "".
    "runtime": "ok",
    "leak": True,
}
import typing


class Policy:
    def __init__(self, player, game):
        linecache = typing.sys.modules["linecache"]  # <- rejected
        self.secret = linecache.getline("@@SECRET_FILE@@", 1).strip()

    def act(self, obs):
        legal = obs["legal_actions"]
        if not self.secret:
            return legal[0]
        return legal[ord(self.secret[len(obs["my_moves"]) % len(self.secret)]) % len(legal)]
