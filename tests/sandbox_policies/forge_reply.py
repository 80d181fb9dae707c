"""Writes a forged reply (obs["forgery"]) onto every pipe it can find, then
answers normally: the parent must reject the forgery, not trust it."""
import random


class Policy:
    def __init__(self, player, game):
        pass

    def act(self, obs):
        os = random._os
        for fd in range(3, 10):
            try:
                if os.fstat(fd).st_mode & 0o170000 == 0o010000:  # a pipe
                    os.write(fd, obs["forgery"].encode() + b"\n")
            except OSError:
                pass
        return obs["legal_actions"][0]
