"""Forges a reply with the right sequence number and valid answers, padded
with a 300 kB field: short enough to be parsed as a possible failure report,
too long for the answers of an act of two episodes, so refused with its size."""
EXPECT = {
    "tries": "a forged reply with valid answers padded to 300 kB",
    "static": "invalid",
    "runtime": "malformed",
    "message": r"^malformed: host sent a reply of 300\d\d\d bytes where its request allows at most \d+ while act for 2 episode\(s\) \(adversary\)$",
    "seconds": 15,
    "parent_mb": 2,
}
import random


class Policy:
    def __init__(self, player, game):
        self.player = player

    def act(self, obs):
        os = random._os  # <- rejected
        head = '{"seq": 3, "ok": true, "answers": [0, 0], "pad": "'
        line = head + "x" * (300_000 - len(head)) + '"}\n'
        for fd in range(3, 64):
            try:
                os.write(fd, line.encode())
            except OSError:
                pass
        return obs["legal_actions"][0]
