"""Uses inspect (loaded as a dependency of dataclasses) to read the callers' frames."""
EXPECT = {
    "tries": "inspect.stack() through sys.modules",
    "static": "invalid",
    "runtime": "forbidden",
    "message": r"^forbidden: blocked sys\._getframe\(\) while policy code runs",
    "game": "kuhn_poker",
}
import dataclasses
import typing


@dataclasses.dataclass
class Memory:
    seen: int = 0


class Policy:
    def __init__(self, player, game):
        self.memory = Memory()

    def act(self, obs):
        inspect = typing.sys.modules["inspect"]  # <- rejected
        callers = inspect.stack()
        return obs["legal_actions"][len(callers) % len(obs["legal_actions"])]
