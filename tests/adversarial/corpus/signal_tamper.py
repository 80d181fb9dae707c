"""Ignores SIGXCPU/SIGTERM so the CPU limit and the parent cannot stop it."""
EXPECT = {
    "tries": "signal.signal(SIGXCPU, SIG_IGN)",
    "static": "invalid",
    "runtime": "forbidden",
    "message": r"^forbidden: blocked use of signal\.signal\(\)",
}
import typing


class Policy:
    def __init__(self, player, game):
        signal = typing.sys.modules["signal"]  # <- rejected
        signal.signal(signal.SIGXCPU, signal.SIG_IGN)  # <- rejected
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # <- rejected

    def act(self, obs):
        return obs["legal_actions"][0]
