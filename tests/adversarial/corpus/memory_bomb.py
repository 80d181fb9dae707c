"""Allocates memory without bound (bytes() is calloc'ed: the address-space
limit stops it at once, however loaded the machine is)."""
EXPECT = {
    "tries": "memory bomb (64 MB blocks until something gives)",
    "static": "valid",
    "runtime": "memory",
    "message": r"^memory: .*\(limit 256 MB for the host, which may play \d+ episodes at once",
    "limits": {"memory_mb": 256},
}


class Policy:
    def __init__(self, player, game):
        self.hoard = []

    def act(self, obs):
        while True:
            self.hoard.append(bytes(64 * 2**20))
