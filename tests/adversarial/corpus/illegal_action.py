"""Raises when facing a bet by answering an action that does not exist."""
EXPECT = {
    "tries": "return an action id that is not legal",
    "static": "valid",
    "runtime": "illegal_action",
    "message": r"^illegal_action: act returned action 7, which is not legal \(legal: \[0, 1\]\)",
    "game": "kuhn_poker",
}


class Policy:
    def __init__(self, player, game):
        self.player = player

    def act(self, obs):
        return 7
