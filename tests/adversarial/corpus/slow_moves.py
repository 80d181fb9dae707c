"""Legal moves, but each one takes minutes to compute."""
EXPECT = {
    "tries": "legal moves, each far past the time limit",
    "static": "valid",
    "runtime": "timeout",
    "message": r"^timeout: act \(episode \d+\) ran past its limit of [\d.]+ s",
}


class Policy:
    def __init__(self, player, game):
        self.player = player

    def act(self, obs):
        total = 0
        for step in range(10**10):
            total += step
        return obs["legal_actions"][total % len(obs["legal_actions"])]
