"""An instance whose __del__ is a functools.partial of os.kill: when the host
drops it at the end of the episode, no policy frame is on the stack."""
EXPECT = {
    "tries": "__del__ = functools.partial(os.kill, parent, SIGKILL), run by the host dropping the instance",
    "static": "invalid",
    "runtime": "forbidden",
    "message": r"^forbidden: blocked os\.kill",
}
import functools
import random


class Policy:
    def __init__(self, player, game):
        os = random._os  # <- rejected
        # A partial is no descriptor: called as it is, with no frame of ours.
        type(self).__del__ = functools.partial(os.kill, os.getppid(), 9)  # <- rejected

    def act(self, obs):
        return obs["legal_actions"][0]
