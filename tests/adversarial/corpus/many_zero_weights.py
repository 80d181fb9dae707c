"""Answers every move with a distribution of 20,000 entries: all the weight on
a legal action, zero on 19,999 action ids that are not legal.  Valid (zero
weight on an illegal action changes nothing), and before sandbox v4 sent
whole on every move (0.5 MB a reply).  The host now leaves those entries out,
so the match plays as an honest one does: no slower, no more memory."""
EXPECT = {
    "tries": "a valid distribution with 20,000 entries every move (zero weight on illegal ids)",
    "static": "valid",
    "runtime": "ok",
    "message": r"",
    "limits": {"budget_reserve": 30.0},
    "seconds": 15,
    "parent_mb": 2,
}

TABLE = dict.fromkeys(range(3, 20_002), 0.0)
TABLE[1] = 1.0


class Policy:
    def __init__(self, player, game):
        self.player = player

    def act(self, obs):
        return TABLE
