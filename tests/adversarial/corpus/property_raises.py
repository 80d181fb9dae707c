"""act is a property that raises, behind a __getattr__ that raises too."""
EXPECT = {
    "tries": "act as a raising property; __getattr__ raising",
    "static": "valid",
    "runtime": "crash",
    "message": r"^crash: LookupError: no act here in act",
}


class Policy:
    def __init__(self, player, game):
        self.player = player

    def __getattr__(self, name):
        raise AttributeError(name)

    @property
    def act(self):
        raise LookupError("no act here")
