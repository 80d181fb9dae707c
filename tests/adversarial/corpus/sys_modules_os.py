"""Takes os from sys.modules (reached as typing.sys) and runs a command."""
EXPECT = {
    "tries": "typing.sys.modules['os'].system(...)",
    "static": "invalid",
    "runtime": "forbidden",
    "message": r"^forbidden: blocked os\.system",
}
import typing


class Policy:
    def __init__(self, player, game):
        self.player = player

    def act(self, obs):
        os = typing.sys.modules["os"]  # <- rejected
        os.system("touch @@SENTINEL@@/@@MARKER@@")
        return obs["legal_actions"][0]
