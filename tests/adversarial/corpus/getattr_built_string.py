"""Builds attribute names at run time so no forbidden name appears in the source."""
EXPECT = {
    "tries": "getattr with names built from pieces ('_' + 'os', '__cl' + 'ass__')",
    "static": "invalid",
    "runtime": "forbidden",
    "message": r"^forbidden: blocked getattr\(\) of the attribute '_os'",
}
import random


class Policy:
    def __init__(self, player, game):
        self.player = player

    def act(self, obs):
        name = "_" + "".join(["o", "s"])
        os = getattr(random, name)  # <- rejected
        getattr(os, "sy" + "stem")("touch @@SENTINEL@@/@@MARKER@@")  # <- rejected
        return obs["legal_actions"][0]
