"""Slows down other processes of its own user (the opponent's host in rlimits
mode) with setpriority and CPU affinity, calls without audit events."""
EXPECT = {
    "tries": "os.setpriority / os.sched_setaffinity on the opponent's host",
    "static": "invalid",
    "runtime": {"rlimits": "forbidden", "bubblewrap": "ok"},
    "message": r"^forbidden: blocked use of os\.(setpriority|sched_setaffinity)\(\)",
}
import random


class Policy:
    def __init__(self, player, game):
        self.player = player

    def act(self, obs):
        os = random._os  # <- rejected
        me = os.getpid()
        # The referee starts the opponent's host just before or after this one:
        # look only near our own pid (never at unrelated processes of the user).
        for pid in range(max(2, me - 64), me + 64):
            try:
                if pid != me and os.stat("/proc/%d" % pid).st_uid == os.getuid():
                    os.setpriority(os.PRIO_PROCESS, pid, 19)
                    os.sched_setaffinity(pid, {0})
            except OSError:
                pass
        return obs["legal_actions"][0]
