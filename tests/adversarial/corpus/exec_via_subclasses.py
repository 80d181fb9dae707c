"""Replaces the host process with a shell: os.execv found by walking object.__subclasses__()."""
EXPECT = {
    "tries": "os.execv reached through a __subclasses__()/__globals__ walk",
    "static": "invalid",
    "runtime": "forbidden",
    "message": r"^forbidden: blocked os\.exec",
}


def find_os():
    for cls in object.__subclasses__():  # <- rejected
        if cls.__name__ == "_wrap_close":
            return cls.__init__.__globals__  # <- rejected
    return None


class Policy:
    def __init__(self, player, game):
        self.player = player

    def act(self, obs):
        os_globals = find_os()
        os_globals["execv"]("/bin/sh", ["sh", "-c", "touch @@SENTINEL@@/@@MARKER@@"])
        return obs["legal_actions"][0]
