"""Evaluates attacker text with typing.ForwardRef._evaluate in empty globals,
where eval supplies the real builtins (the calling frame's: typing's)."""
EXPECT = {
    "tries": "typing.ForwardRef(text)._evaluate({}, ...) (an eval gadget in an allowed module)",
    "static": "valid",
    "runtime": "forbidden",
    "message": r"^forbidden: blocked (compile|exec)\(\) reached through 'typing'",
}
import typing


class Policy:
    def __init__(self, player, game):
        self.player = player

    def act(self, obs):
        ref = typing.ForwardRef("__import__('os').kill(__import__('os').getppid(), 9)")
        ref._evaluate({}, None, frozenset())
        return obs["legal_actions"][0]
