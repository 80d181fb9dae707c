"""Source that is not UTF-8: a Latin-1 byte in a string literal."""
EXPECT = {
    "tries": "source with bytes that are not UTF-8",
    "static": "invalid",
    "runtime": "crash",
    "message": r"^crash: .*in module load",
}


class Policy:
    def __init__(self, player, game):
        self.name = "café"  # <- rejected

    def act(self, obs):
        return obs["legal_actions"][0]
