"""Every move within its own limit, but the match as a whole overruns its wall-time limit.

The limit leaves the clean bystander match, which shares the lockstep and is
given a fresh `match_seconds` once this one is cut, room for its remaining
moves on a loaded machine: at 0.2 s it lost on time in 2 of 4 runs of the
adversarial suite here (load average 7-18 on 2 cores), blamed on its
opponent (the remaining moves' replies waited on the scheduler).  The
adversary spins long enough per move to overrun even an idle machine."""
EXPECT = {
    "tries": "moves within the per-move limit that add up past the match limit",
    "static": "valid",
    "runtime": "timeout",
    "message": r"^timeout: the match overran its limit of 2 s \(adversary\)$",
    "limits": {"move_timeout": 5.0, "budget_reserve": 60.0},
    "match_seconds": 2.0,
}


class Policy:
    def __init__(self, player, game):
        self.player = player

    def act(self, obs):
        total = 0
        for step in range(5_000_000):
            total += step
        return obs["legal_actions"][total % len(obs["legal_actions"])]
