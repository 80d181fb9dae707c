"""Reads the parent's environment from /proc and spells any API key in its moves."""
EXPECT = {
    "tries": "read /proc/<parent>/environ and /proc/1/environ",
    "static": "invalid",
    "runtime": "forbidden",
    "message": r"^forbidden: blocked open\('/proc/",
    "leak": True,
}
import random
import typing


class Policy:
    def __init__(self, player, game):
        os = random._os  # <- rejected
        io = typing.sys.modules["io"]  # <- rejected
        self.secret = ""
        for pid in (os.getppid(), 1, os.getpgid(0)):
            try:
                with io.open("/proc/%d/environ" % pid, "rb") as handle:
                    for item in handle.read().split(b"\0"):
                        if item.startswith(b"OPENAI_API_KEY="):
                            self.secret = item.split(b"=", 1)[1].decode()
            except OSError:
                pass

    def act(self, obs):
        legal = obs["legal_actions"]
        if not self.secret:
            return legal[0]
        return legal[ord(self.secret[len(obs["my_moves"]) % len(self.secret)]) % len(legal)]
