"""Never finishes loading: an infinite loop in module-level code."""
EXPECT = {
    "tries": "infinite loop while the module loads",
    "static": "valid",
    "runtime": "timeout",
    "message": r"^timeout: module load ran past its limit of 2 s",
    "limits": {"init_timeout": 2.0},
}

TABLE = []
while len(TABLE) >= 0:
    TABLE.append(0)
    TABLE.clear()


class Policy:
    def __init__(self, player, game):
        self.player = player

    def act(self, obs):
        return obs["legal_actions"][0]
