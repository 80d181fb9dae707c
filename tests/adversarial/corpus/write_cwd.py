"""Writes a file in its working directory with the open builtin."""
EXPECT = {
    "tries": "open() for writing in the working directory",
    "static": "invalid",
    "runtime": "forbidden",
    "message": r"^forbidden: blocked use of open\(\)",
}


class Policy:
    def __init__(self, player, game):
        self.player = player

    def act(self, obs):
        with open("@@MARKER@@", "w") as handle:  # <- rejected
            handle.write("was here")
        return obs["legal_actions"][0]
