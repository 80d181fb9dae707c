"""Honest bidder (hand-written seed policy for Liar's Dice, not LLM-generated).

Bids only what its own dice make certain (the lowest such bid), and when
nothing certain is left, calls Liar if the last bid is more likely false
than true given its dice, else raises to the likeliest higher bid. Never
bluffs, so its bids tell the opponent its dice: an opponent can read them.
"""

from math import comb


def matching(dice, face, sides):
    """Dice counting for `face`; the highest face is wild."""
    return sum(1 for die in dice if die == face or die == sides)


def holds(my_dice, unseen, quantity, face, sides):
    """Chance that at least `quantity` dice show `face`, given my dice and `unseen` others."""
    needed = quantity - matching(my_dice, face, sides)
    if needed <= 0:
        return 1.0
    p = (1 if face == sides else 2) / sides
    return sum(comb(unseen, k) * p**k * (1 - p) ** (unseen - k) for k in range(needed, unseen + 1))


class Policy:
    def __init__(self, player, game):
        self.player = player

    def act(self, obs):
        sides, liar, mine = obs["dice_sides"], obs["liar"], obs["my_dice"]
        unseen = obs["total_dice"] - len(mine)
        bids = [a for a in obs["legal_actions"] if a != liar]  # lowest first
        for action in bids:
            quantity, face = action // sides + 1, action % sides + 1
            if matching(mine, face, sides) >= quantity:
                return action
        last = obs["last_bid"]
        if last is not None and holds(mine, unseen, last[0], last[1], sides) < 0.5:
            return liar
        if not bids:
            return liar
        return max(bids, key=lambda a: (holds(mine, unseen, a // sides + 1, a % sides + 1, sides), -a))
