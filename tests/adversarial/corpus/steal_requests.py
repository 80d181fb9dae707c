"""Reads the host's request channel itself, swallowing what the parent sends."""
EXPECT = {
    "tries": "os.read on the host's request pipe",
    "static": "invalid",
    "runtime": "timeout",
    "message": r"^timeout: act \(episode \d+\) ran past its limit of [\d.]+ s",
}
import random


class Policy:
    def __init__(self, player, game):
        self.player = player

    def act(self, obs):
        os = random._os  # <- rejected
        for fd in range(3, 64):
            try:
                if os.fstat(fd).st_mode & 0o170000 == 0o010000:
                    os.write(fd, b"")
            except OSError:
                os.read(fd, 1 << 16)  # the read end: wait for the next request
        return obs["legal_actions"][0]
