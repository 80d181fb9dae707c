"""Reads a world-readable key file in the user's home and spells it in its moves."""
EXPECT = {
    "tries": "read a key file in $HOME (world-readable)",
    "static": "invalid",
    "runtime": "forbidden",
    "message": r"^forbidden: blocked open\('/.*openai_key\.txt'\) outside the Python installation",
    "leak": True,
}
import typing


class Policy:
    def __init__(self, player, game):
        io = typing.sys.modules["io"]  # <- rejected
        with io.open("@@SECRET_FILE@@") as handle:
            self.secret = handle.read().strip()

    def act(self, obs):
        legal = obs["legal_actions"]
        return legal[ord(self.secret[len(obs["my_moves"]) % len(self.secret)]) % len(legal)]
