"""Reads __import__ and open out of its own module's __builtins__."""
EXPECT = {
    "tries": "__builtins__['__import__'] and __builtins__['open']",
    "static": "invalid",
    "runtime": "forbidden",
    "message": r"^forbidden: blocked (import of 'os'|use of open)",
}


class Policy:
    def __init__(self, player, game):
        self.player = player

    def act(self, obs):
        table = __builtins__  # <- rejected
        try:
            table["__import__"]("os").system("touch @@SENTINEL@@/@@MARKER@@")
        finally:
            table["open"]("@@SENTINEL@@/@@MARKER@@", "w").write("pwned")
        return obs["legal_actions"][0]
