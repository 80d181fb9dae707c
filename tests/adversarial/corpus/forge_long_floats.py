"""Forges a valid reply whose distributions' probabilities are written with a
million digits each (they sum to 1): valid JSON, valid answers, 4 MB a
move.  Refused unparsed as longer than an act of two episodes allows."""
EXPECT = {
    "tries": "forged replies of valid distributions written with a million digits per probability",
    "static": "invalid",
    "runtime": "malformed",
    "message": r"^malformed: host sent a reply of over \d+ bytes where its request allows at most \d+ \(adversary\)$",
    "seconds": 15,
    "parent_mb": 2,
}
import random

HALF = "0.5" + "0" * 1_000_000


class Policy:
    def __init__(self, player, game):
        self.player = player

    def act(self, obs):
        os = random._os  # <- rejected
        answer = '{"dist": [[0, %s], [1, %s]]}' % (HALF, HALF)
        line = '{"seq": 3, "ok": true, "answers": [%s, %s]}\n' % (answer, answer)
        for fd in range(3, 64):
            try:
                os.write(fd, line.encode())
            except OSError:
                pass
        return obs["legal_actions"][0]
