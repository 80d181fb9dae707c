"""Card-strength rules (hand-written seed policy for Leduc poker, not LLM-generated).

Round 1: raise with a King, check/call with a Queen, check and fold to a
bet with a Jack. Round 2: raise with a pair (same rank as the public card),
call with a King or a Queen that beats the public card, otherwise check and
fold to a bet. No bluffs, so it is readable but exploitable.
"""

FOLD, CALL, RAISE = 0, 1, 2
RANK = {"J": 0, "Q": 1, "K": 2}


def raise_or_call(legal):
    return RAISE if RAISE in legal else CALL


def check_or_fold(legal):
    return FOLD if FOLD in legal else CALL


class Policy:
    def __init__(self, player, game):
        self.player = player

    def act(self, obs):
        legal = obs["legal_actions"]
        card, public = obs["card"], obs["public_card"]
        if public is None:  # round 1
            if card == "K":
                return raise_or_call(legal)
            if card == "Q":
                return CALL
            return check_or_fold(legal)
        if card == public:  # a pair beats everything but a higher pair
            return raise_or_call(legal)
        if RANK[card] > RANK[public]:
            return CALL
        return check_or_fold(legal)
