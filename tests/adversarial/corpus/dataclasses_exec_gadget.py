"""Calls dataclasses' private _create_fn directly: it exec's the text it is given."""
EXPECT = {
    "tries": "dataclasses._create_fn with attacker text (an exec gadget in an allowed module)",
    "static": "invalid",
    "runtime": "forbidden",
    "message": r"^forbidden: blocked (compile|exec)\(\) reached through 'dataclasses'",
}
import dataclasses


class Policy:
    def __init__(self, player, game):
        self.player = player

    def act(self, obs):
        body = ["import os", "os.kill(os.getppid(), 9)"]
        make = dataclasses._create_fn  # <- rejected
        make("payload", [], body, globals={})()
        return obs["legal_actions"][0]
