"""Writes straight to file descriptor 2 until something stops it."""
EXPECT = {
    "tries": "stderr flood through os.write(2, ...)",
    "static": "invalid",
    "runtime": "crash",
    "message": r"^crash: OSError: (\[Errno 27\] )?File too large in act",
}
import random


class Policy:
    def __init__(self, player, game):
        self.player = player

    def act(self, obs):
        write = random._os.write  # <- rejected
        block = b"E" * 65536
        for _ in range(4096):
            write(2, block)
        return obs["legal_actions"][0]
