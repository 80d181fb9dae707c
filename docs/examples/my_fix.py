"""Kuhn poker, edited by hand: bet or call with the king, bluff a third of the time with the jack, check and fold the queen.

The policy contract: `Policy(player, game)` and `act(obs)` returning an action
id (0 Pass, 1 Bet) or {action id: probability}.  The situations are keyed
(my card, betting so far), as `csro games kuhn_poker` shows them.
"""

PLAN = {
    ("J", "none"): {0: 2 / 3, 1: 1 / 3}, ("Q", "none"): 0, ("K", "none"): 1,  # first to act
    ("J", "Pass"): {0: 2 / 3, 1: 1 / 3}, ("Q", "Pass"): 0, ("K", "Pass"): 1,  # after a check
    ("J", "Bet"): 0, ("Q", "Bet"): {0: 2 / 3, 1: 1 / 3}, ("K", "Bet"): 1,  # facing a bet
    ("J", "Pass, Bet"): 0, ("Q", "Pass, Bet"): {0: 1 / 3, 1: 2 / 3}, ("K", "Pass, Bet"): 1,  # facing a bet after checking
}


class Policy:
    def __init__(self, player, game):
        self.player = player

    def act(self, obs):
        moves = [move for round_moves in obs["betting"] for move in round_moves]
        return PLAN[(obs["card"], ", ".join(moves) or "none")]
