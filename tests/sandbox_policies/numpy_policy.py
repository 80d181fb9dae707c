"""Valid: answers with a numpy-built distribution (numpy int keys, float values)."""
import numpy as np


class Policy:
    def __init__(self, player, game):
        self.rng = np.random.default_rng(game["seed"])
        self.num_actions = game["num_actions"]

    def act(self, obs):
        legal = np.array(obs["legal_actions"], dtype=np.int64)
        weights = self.rng.random(len(legal)) + 0.1
        weights = weights / weights.sum()
        if obs.get("as_int"):
            return legal[int(np.argmax(weights))]
        return {action: weight for action, weight in zip(legal, weights)}
