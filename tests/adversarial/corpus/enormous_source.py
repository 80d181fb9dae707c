"""A working policy followed by 150 kB of comments (the harness appends them)."""
EXPECT = {
    "tries": "source far over the 100 kB limit",
    "static": "invalid",
    "runtime": "ok",
    "pad_bytes": 150_000,
    "static_lines": [1],
}


class Policy:
    def __init__(self, player, game):
        self.player = player

    def act(self, obs):
        return obs["legal_actions"][0]
