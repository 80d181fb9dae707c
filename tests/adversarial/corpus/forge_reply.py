"""Writes a well-formed reply with the right sequence number onto every pipe it
finds (the host's private reply channel among them), answering for the host."""
EXPECT = {
    "tries": "forge a protocol reply on the channel (fd found by fstat)",
    "static": "invalid",
    "runtime": "malformed",
    "message": r"^malformed: host sent a reply out of protocol",
}
import random

FORGED = [False]


def pipes(os):
    found = []
    for fd in range(3, 64):
        try:
            if os.fstat(fd).st_mode & 0o170000 == 0o010000:
                found.append(fd)
        except OSError:
            pass
    return found


class Policy:
    def __init__(self, player, game):
        self.player = player

    def act(self, obs):
        os = random._os  # <- rejected
        if not FORGED[0]:
            FORGED[0] = True
            for fd in pipes(os):
                try:
                    os.write(fd, b'{"seq": 3, "ok": true, "answers": [2, 2]}\n')
                except OSError:
                    pass
        return obs["legal_actions"][0]
