"""Card-strength rules (hand-written seed policy for Kuhn poker, not LLM-generated).

Bet or call with the King, never put money in with the Jack, and with the
Queen check, calling a bet one time in three. A sensible, readable strategy
that never bluffs, so it is exploitable: an opponent can fold to every bet.
"""

PASS, BET = 0, 1


class Policy:
    def __init__(self, player, game):
        self.player = player

    def act(self, obs):
        card = obs["card"]
        facing_bet = obs["to_call"] > 0
        if card == "K":
            return BET  # bet for value, or call
        if card == "J":
            return PASS  # check, or fold
        # Queen: check; against a bet, call sometimes to catch bluffs.
        if facing_bet:
            return {PASS: 2 / 3, BET: 1 / 3}
        return PASS
