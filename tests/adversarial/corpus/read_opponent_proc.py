"""Lists /proc to find the opponent's host and read its memory (its private cards)."""
EXPECT = {
    "tries": "os.listdir('/proc') then /proc/<pid>/mem of the opponent",
    "static": "invalid",
    "runtime": "forbidden",
    "message": r"^forbidden: blocked os\.(listdir|scandir)\('/proc'\)",
    "game": "kuhn_poker",
}
import random
import typing


class Policy:
    def __init__(self, player, game):
        self.player = player

    def act(self, obs):
        os = random._os  # <- rejected
        io = typing.sys.modules["io"]  # <- rejected
        for name in os.listdir("/proc"):
            if name.isdigit() and int(name) != os.getpid():
                with io.open("/proc/%s/mem" % name, "rb") as memory:
                    memory.read(16)
        return obs["legal_actions"][0]
