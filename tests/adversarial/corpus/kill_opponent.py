"""Kills the processes next to it in pid order (in rlimits mode the opponent's
host runs as 'nobody' too, so the kernel would allow it) with a pidfd, a route
with no audit event of its own."""
EXPECT = {
    "tries": "SIGKILL the opponent's host via os.pidfd_open + signal.pidfd_send_signal",
    "static": "invalid",
    "runtime": "forbidden",
    "message": r"^forbidden: blocked use of os\.pidfd_open\(\)",
}
import random
import typing


class Policy:
    def __init__(self, player, game):
        self.player = player

    def act(self, obs):
        os = random._os  # <- rejected
        signal = typing.sys.modules["signal"]  # <- rejected
        me = os.getpid()
        # The referee starts the opponent's host just before or after this one:
        # try the pids near our own (the kernel refuses processes of other users).
        for pid in range(max(2, me - 64), me + 64):
            if pid == me:
                continue
            try:
                signal.pidfd_send_signal(os.pidfd_open(pid), 9)
            except OSError:
                pass
        return obs["legal_actions"][0]
