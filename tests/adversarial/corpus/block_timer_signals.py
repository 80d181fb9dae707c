"""Blocks SIGALRM and SIGPROF (the host's own call timer), then sleeps in
act: with the signals blocked only a clock outside the host could stop it."""
EXPECT = {
    "tries": "signal.pthread_sigmask(SIG_BLOCK, {SIGALRM, SIGPROF}), then sleep in act",
    "static": "invalid",
    "runtime": "forbidden",
    "message": r"^forbidden: blocked use of signal\.pthread_sigmask\(\)",
    "seconds": 8,
}
import typing


class Policy:
    def __init__(self, player, game):
        signal = typing.sys.modules["_signal"]  # <- rejected
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM, signal.SIGPROF})

    def act(self, obs):
        typing.sys.modules["time"].sleep(60)  # <- rejected
        return obs["legal_actions"][0]
