"""Arms an interval timer and an alarm to interrupt the host later."""
EXPECT = {
    "tries": "signal.setitimer / signal.alarm",
    "static": "invalid",
    "runtime": "forbidden",
    "message": r"^forbidden: blocked use of signal\.setitimer\(\)",
}
import typing


class Policy:
    def __init__(self, player, game):
        signal = typing.sys.modules["_signal"]  # <- rejected
        signal.setitimer(signal.ITIMER_REAL, 0.05, 0.05)
        signal.alarm(1)

    def act(self, obs):
        return obs["legal_actions"][0]
