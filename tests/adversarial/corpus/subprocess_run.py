"""Starts a process with subprocess."""
EXPECT = {
    "tries": "subprocess.run",
    "static": "invalid",
    "runtime": "forbidden",
    "message": r"^forbidden: blocked import of 'subprocess'",
}


class Policy:
    def __init__(self, player, game):
        self.player = player

    def act(self, obs):
        import subprocess  # <- rejected

        subprocess.run(["touch", "@@SENTINEL@@/@@MARKER@@"])
        return obs["legal_actions"][0]
