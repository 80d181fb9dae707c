"""br-2: exact best response (Kuhn poker).

An exact best response to the population's meta-strategy, the mixture

     0.500  always_bet
     0.500  br-1

(weight, member).  Each member plays both seats; in each seat their
behaviour is mixed in proportion to how often each one reaches a situation.

Expected value against it: +0.3333 in seat 0, +0.3333 in seat 1; +0.3333 averaged over seats.

One decision table per seat maps what the policy sees - (my card,
public card, betting so far) - to the action to take.  The comment on
each line gives every action's expected value from that situation on;
ties went to the lowest action id.  Where the opponent never lets a
situation happen ("unreached"), the table answers a uniform random
opponent instead.
"""


def situation_key(obs):
    """What the policy sees, as a table key: (my card, public card, betting so far).

    The betting is the action names so far, oldest first, with rounds
    separated by "|" (e.g. "Raise Call | Call"), and "" before anyone has
    acted.  The public card is None until it is dealt (always, in Kuhn poker).
    """
    betting = " | ".join(" ".join(actions) for actions in obs["betting"])
    return (obs["card"], obs.get("public_card"), betting.strip())


# Seat 0: the first move of each betting round is mine.
SEAT_0 = {
    # My card J
    ("J", None, ""): "Pass",          # Pass -1.000, Bet -2.000
    ("J", None, "Pass Bet"): "Pass",  # Pass -1.000, Bet -2.000
    # My card Q
    ("Q", None, ""): "Pass",          # Pass +0.000, Bet +0.000
    ("Q", None, "Pass Bet"): "Bet",   # Pass -1.000, Bet +0.000
    # My card K
    ("K", None, ""): "Pass",          # Pass +2.000, Bet +2.000
    ("K", None, "Pass Bet"): "Bet",   # Pass -1.000, Bet +2.000
}

# Seat 1: the first move of each betting round is the opponent's.
SEAT_1 = {
    # My card J
    ("J", None, "Pass"): "Bet",  # unreached; vs uniform: Pass -1.000, Bet -0.500
    ("J", None, "Bet"): "Pass",  # Pass -1.000, Bet -2.000
    # My card Q
    ("Q", None, "Pass"): "Bet",  # unreached; vs uniform: Pass +0.000, Bet +0.500
    ("Q", None, "Bet"): "Bet",   # Pass -1.000, Bet +0.000
    # My card K
    ("K", None, "Pass"): "Bet",  # unreached; vs uniform: Pass +1.000, Bet +1.500
    ("K", None, "Bet"): "Bet",   # Pass -1.000, Bet +2.000
}

TABLES = {0: SEAT_0, 1: SEAT_1}


class Policy:
    """Plays the decision table of its seat."""

    def __init__(self, player, game):
        self.table = TABLES[player]
        self.action_id = {name: i for i, name in enumerate(game["action_names"])}

    def act(self, obs):
        action = self.table.get(situation_key(obs))
        if action is None:
            # Every situation of the game is in the table; this only guards
            # against an observation format the table was not built from.
            return min(obs["legal_actions"])
        return self.action_id[action]
