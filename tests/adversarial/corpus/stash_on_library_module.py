"""Keeps its memory on an allowed library module (shared by every episode the
host serves) instead of its own globals."""
EXPECT = {
    "tries": "state kept as an attribute of the random module, across episodes",
    "static": "invalid",
    "runtime": "ok",
    # Shared library modules are not reset between episodes (see SECURITY.md):
    # this case records that the static check is what stops it.
    "actions": [0, 1, 2],
}
import random


class Policy:
    def __init__(self, player, game):
        random.csro_seen = getattr(random, "csro_seen", 0) + 1  # <- rejected

    def act(self, obs):
        return obs["legal_actions"][min(random.csro_seen - 1, 2)]
