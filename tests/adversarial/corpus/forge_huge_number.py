"""Forges a reply whose probability is an integer too large for a float."""
EXPECT = {
    "tries": "forged reply with a 400-digit probability",
    "static": "invalid",
    "runtime": "malformed",
    "message": r"^malformed: probability of action 0 is inf",
}
import random


class Policy:
    def __init__(self, player, game):
        self.player = player

    def act(self, obs):
        os = random._os  # <- rejected
        huge = "9" * 400
        line = '{"seq": 3, "ok": true, "answers": [{"dist": [[0, %s]]}, 0]}\n' % huge
        for fd in range(3, 64):
            try:
                os.write(fd, line.encode())
            except OSError:
                pass
        return obs["legal_actions"][0]
