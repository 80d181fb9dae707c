"""Overflows the C stack: hashing a tuple nested a million deep recurses in C."""
EXPECT = {
    "tries": "C-level recursion (hash of a deeply nested tuple)",
    "static": "valid",
    "runtime": "crash",
    "message": r"^crash: host crashed with SIGSEGV while act .*\(too deep recursion\?\)",
}


NESTED = ()
for _ in range(1_000_000):
    NESTED = (NESTED,)


class Policy:
    def __init__(self, player, game):
        self.player = player

    def act(self, obs):
        return obs["legal_actions"][hash(NESTED) % 1]
