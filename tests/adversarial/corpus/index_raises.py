"""Returns an object whose __index__, __int__ and __eq__ raise."""
EXPECT = {
    "tries": "return an object whose __index__/__int__/__eq__ raise (never called: answers must be exact ints)",
    "static": "valid",
    "runtime": "malformed",
    "message": r"^malformed: act returned a Trap; expected an action id",
}


class Trap:
    def __index__(self):
        raise ArithmeticError("gotcha")

    def __int__(self):
        raise ArithmeticError("gotcha")

    def __eq__(self, other):
        raise ArithmeticError("gotcha")



class Policy:
    def __init__(self, player, game):
        self.player = player

    def act(self, obs):
        return Trap()
