"""Frequency counter (hand-written seed policy for RRPS, not LLM-generated).

Counts how often the opponent has played each move and plays what beats
its most frequent one. Counts are kept on self and updated with the newest
moves only, so each throw costs O(1).
"""

import random


class Policy:
    def __init__(self, player, game):
        self.player = player
        self.rng = random.Random(game["seed"])
        self.counts = [0, 0, 0]
        self.seen = 0  # how many opponent moves are already counted

    def act(self, obs):
        opp_moves = obs["opp_moves"]
        for move in opp_moves[self.seen:]:
            self.counts[move] += 1
        self.seen = len(opp_moves)
        best = max(self.counts)
        if best == 0:
            return self.rng.randrange(3)
        favourites = [m for m in range(3) if self.counts[m] == best]
        predicted = self.rng.choice(favourites)  # break ties at random
        return (predicted + 1) % 3
