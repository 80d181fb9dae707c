"""Keeps state in module globals and class attributes to pool what it saw over
episodes ("one instance plays one episode" must hold)."""
EXPECT = {
    "tries": "module globals and class attributes carried from one episode to the next",
    "static": "valid",
    "runtime": "ok",
    # It plays 0 in its first episode, 1 or 2 once it has seen another one.
    "actions": [0],
}
SEEN = []


class Policy:
    episodes = 0

    def __init__(self, player, game):
        SEEN.append(player)
        Policy.episodes += 1

    def act(self, obs):
        earlier = max(len(SEEN), Policy.episodes) - 1
        return obs["legal_actions"][min(earlier, 2)]
