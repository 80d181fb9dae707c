"""Order-1 Markov predictor (hand-written seed policy for RRPS, not LLM-generated).

Learns how the opponent's move depends on its previous move: counts
transitions previous -> next, predicts the most likely next move after the
opponent's latest one, and plays what beats it. Catches cycles and
"repeat/rotate after X" habits that plain frequency counting misses.
"""

import random


class Policy:
    def __init__(self, player, game):
        self.player = player
        self.rng = random.Random(game["seed"])
        # transitions[prev][next]: how often the opponent played next after prev
        self.transitions = [[0, 0, 0] for _ in range(3)]
        self.seen = 0

    def act(self, obs):
        opp_moves = obs["opp_moves"]
        for t in range(max(self.seen, 1), len(opp_moves)):
            self.transitions[opp_moves[t - 1]][opp_moves[t]] += 1
        self.seen = len(opp_moves)
        if not opp_moves:
            return self.rng.randrange(3)
        row = self.transitions[opp_moves[-1]]
        best = max(row)
        if best == 0:
            return self.rng.randrange(3)
        predicted = self.rng.choice([m for m in range(3) if row[m] == best])
        return (predicted + 1) % 3
