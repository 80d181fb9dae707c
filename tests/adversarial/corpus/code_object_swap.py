"""Rewrites a function's code object (a way to run bytecode the checks never saw)."""
EXPECT = {
    "tries": "read and replace a function's __code__",
    "static": "invalid",
    "runtime": "forbidden",
    "message": r"^forbidden: blocked access to the attribute '__code__'",
}


def harmless():
    return 0


def other():
    return 1


class Policy:
    def __init__(self, player, game):
        self.player = player

    def act(self, obs):
        harmless.__code__ = other.__code__.replace(co_consts=(None, 2))  # <- rejected
        return obs["legal_actions"][harmless() % len(obs["legal_actions"])]
