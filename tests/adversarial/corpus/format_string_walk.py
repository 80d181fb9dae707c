"""Reads dunder attributes through str.format field names."""
EXPECT = {
    "tries": "'{0.__class__.__base__.__subclasses__}'.format(...)",
    "static": "invalid",
    "runtime": "ok",
}


class Policy:
    def __init__(self, player, game):
        self.player = player

    def act(self, obs):
        text = "{0.__class__.__base__.__subclasses__}".format(self)  # <- rejected
        return obs["legal_actions"][len(text) % 1]
