"""Climbs out of its working directory with ../ and writes there."""
EXPECT = {
    "tries": "write through a relative ../../.. path",
    "static": "invalid",
    "runtime": "forbidden",
    "message": r"^forbidden: blocked open\(.*\) for writing",
}
import typing


class Policy:
    def __init__(self, player, game):
        self.player = player

    def act(self, obs):
        io = typing.sys.modules["io"]  # <- rejected
        path = "../" * 12 + "@@SENTINEL@@/@@MARKER@@"
        with io.open(path, "w") as handle:
            handle.write("escaped")
        return obs["legal_actions"][0]
