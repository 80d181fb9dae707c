"""Raises SystemExit from act, as if it could end the host politely."""
EXPECT = {
    "tries": "raise SystemExit(0) in act",
    "static": "valid",
    "runtime": "crash",
    "message": r"^crash: SystemExit: 0 in act",
}


class Policy:
    def __init__(self, player, game):
        self.player = player

    def act(self, obs):
        raise SystemExit(0)
