"""Bluffer (hand-written seed policy for Liar's Dice, not LLM-generated).

Opens with a bid on its own face a third of the time and on a random other
face otherwise, so its first bid says little about its dice; facing a bid,
it calls Liar when the bid is less than 40% likely given its dice, else it
raises to the lowest bid on its own face (or calls if there is none).
Randomness comes only from random.Random(game["seed"]).
"""

import random
from math import comb


def matching(dice, face, sides):
    return sum(1 for die in dice if die == face or die == sides)


def holds(my_dice, unseen, quantity, face, sides):
    needed = quantity - matching(my_dice, face, sides)
    if needed <= 0:
        return 1.0
    p = (1 if face == sides else 2) / sides
    return sum(comb(unseen, k) * p**k * (1 - p) ** (unseen - k) for k in range(needed, unseen + 1))


class Policy:
    def __init__(self, player, game):
        self.player = player
        self.rng = random.Random(game["seed"])

    def act(self, obs):
        sides, liar, mine = obs["dice_sides"], obs["liar"], obs["my_dice"]
        unseen = obs["total_dice"] - len(mine)
        bids = [a for a in obs["legal_actions"] if a != liar]
        last = obs["last_bid"]
        if last is None:
            face = max(mine) if self.rng.random() < 1 / 3 else self.rng.randint(1, sides)
            return (face - 1) if (face - 1) in bids else bids[0]
        if holds(mine, unseen, last[0], last[1], sides) < 0.4:
            return liar
        own = [a for a in bids if a % sides + 1 in mine]
        return own[0] if own else liar
