# What to play in each situation, keyed the way the evaluation names situations:
# (my card, betting so far) -> an action id (0 Pass, 1 Bet) or {action id: probability}.
# Pass is a check, or a fold when facing a bet; Bet is a bet, or a call when facing one.
PLAN = {
    ("J", "none"): 0, ("Q", "none"): 0, ("K", "none"): 1,  # seat 0, first to act
    ("J", "Pass"): {0: 0.7, 1: 0.3}, ("Q", "Pass"): 0, ("K", "Pass"): 1,  # seat 1 after a check
    ("J", "Bet"): 0, ("Q", "Bet"): 0, ("K", "Bet"): 1,  # seat 1 facing a bet
    ("J", "Pass, Bet"): 0, ("Q", "Pass, Bet"): 0, ("K", "Pass, Bet"): 1,  # seat 0 facing a bet
}


class Policy:
    def __init__(self, player, game):
        self.player = player  # 0 or 1; game["action_names"] is ["Pass", "Bet"]

    def act(self, obs):
        moves = [move for round_moves in obs["betting"] for move in round_moves]
        betting = ", ".join(moves) or "none"
        return PLAN[(obs["card"], betting)]
