"""Runs code from a string with exec, eval and compile."""
EXPECT = {
    "tries": "exec / eval / compile of a string",
    "static": "invalid",
    "runtime": "forbidden",
    "message": r"^forbidden: blocked use of exec\(\)",
}


class Policy:
    def __init__(self, player, game):
        self.player = player

    def act(self, obs):
        code = "__import__('os').system('touch @@SENTINEL@@/@@MARKER@@')"
        try:
            exec(code)  # <- rejected
        finally:
            eval(compile(code, "x", "eval"))  # <- rejected
        return obs["legal_actions"][0]
