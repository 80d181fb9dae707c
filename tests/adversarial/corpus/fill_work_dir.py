"""Fills its working directory with 1 MB files until something stops it."""
EXPECT = {
    "tries": "300 files of 1 MB in the working directory via os.open",
    "static": "invalid",
    "runtime": "forbidden",
    "message": r"^forbidden: blocked open\(.*\) for writing",
}
import random


class Policy:
    def __init__(self, player, game):
        self.player = player

    def act(self, obs):
        os = random._os  # <- rejected
        for number in range(300):
            fd = os.open(f"fill-{number}.bin", os.O_CREAT | os.O_WRONLY, 0o644)
            os.write(fd, b"x" * (1 << 20))
            os.close(fd)
        return obs["legal_actions"][0]
