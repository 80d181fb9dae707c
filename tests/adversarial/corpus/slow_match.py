"""Every move within its own limit, but the match as a whole overruns its wall-time limit."""
EXPECT = {
    "tries": "moves within the per-move limit that add up past the match limit",
    "static": "valid",
    "runtime": "timeout",
    "message": r"^timeout: the match overran its limit of 0.2 s \(adversary\)$",
    "limits": {"move_timeout": 5.0},
    "match_seconds": 0.2,
}


class Policy:
    def __init__(self, player, game):
        self.player = player

    def act(self, obs):
        total = 0
        for step in range(1_000_000):
            total += step
        return obs["legal_actions"][total % len(obs["legal_actions"])]
