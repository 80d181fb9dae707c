"""Slows down the processes next to it in pid order (in rlimits mode the
opponent's host runs as 'nobody' too) with setpriority and CPU affinity,
calls without audit events."""
EXPECT = {
    "tries": "os.setpriority / os.sched_setaffinity on the opponent's host",
    "static": "invalid",
    "runtime": "forbidden",
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
        # try the pids near our own (the kernel refuses processes of other users).
        for pid in range(max(2, me - 64), me + 64):
            if pid == me:
                continue
            try:
                os.setpriority(os.PRIO_PROCESS, pid, 19)
                os.sched_setaffinity(pid, {0})
            except OSError:
                pass
        return obs["legal_actions"][0]
