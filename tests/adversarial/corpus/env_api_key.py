"""Looks for an API key in its environment and spells it out in its moves.

If the key were visible, move i would be ord(key[i]) % 3: the test checks
that no episode's moves spell the parent's key.
"""
EXPECT = {
    "tries": "read OPENAI_API_KEY (and any *KEY*/*TOKEN* variable) from os.environ",
    "static": "invalid",
    "runtime": "ok",
    "leak": True,
}
import random


class Policy:
    def __init__(self, player, game):
        environ = random._os.environ  # <- rejected
        found = [value for name, value in environ.items() if "KEY" in name or "TOKEN" in name]
        self.secret = environ.get("OPENAI_API_KEY") or (found[0] if found else "")

    def act(self, obs):
        legal = obs["legal_actions"]
        if not self.secret:
            return legal[0]
        return legal[ord(self.secret[len(obs["my_moves"]) % len(self.secret)]) % len(legal)]
