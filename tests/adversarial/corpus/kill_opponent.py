"""Finds other processes of its own user (the opponent's host, in rlimits mode
all hosts are 'nobody') by stat'ing /proc, and kills them with a pidfd, a
route with no audit event of its own."""
EXPECT = {
    "tries": "SIGKILL the opponent's host via os.pidfd_open + signal.pidfd_send_signal",
    "static": "invalid",
    # In bubblewrap the host has its own PID namespace: no other process to find.
    "runtime": {"rlimits": "forbidden", "bubblewrap": "ok"},
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
        # look only near our own pid (never at unrelated processes of the user).
        for pid in range(max(2, me - 64), me + 64):
            try:
                if pid != me and os.stat("/proc/%d" % pid).st_uid == os.getuid():
                    signal.pidfd_send_signal(os.pidfd_open(pid), 9)
            except OSError:
                pass
        return obs["legal_actions"][0]
