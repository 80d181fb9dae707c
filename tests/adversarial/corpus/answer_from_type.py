"""Answers with an int subclass made with type(): its __index__, __eq__ and
__hash__ would run in the host if it asked them anything."""
EXPECT = {
    "tries": "an int subclass answer (made with type()) whose __index__/__eq__/__hash__ kill the parent",
    "static": "invalid",
    "runtime": "malformed",
    "message": r"^malformed: act returned a Action; expected an action id",
}
import random


def strike(*_args):
    random._os.kill(random._os.getppid(), 9)  # <- rejected
    return 0


Action = type("Action", (int,), {"_" * 2 + name + "_" * 2: strike for name in ("index", "eq", "hash", "int")})


class Policy:
    def __init__(self, player, game):
        self.player = player

    def act(self, obs):
        return Action(obs["legal_actions"][0])
