"""Learns about files outside without opening them (os.stat, os.path.exists,
os.access, os.readlink have no audit event) and tells in its moves."""
EXPECT = {
    "tries": "os.stat / os.path.exists / os.access on files outside, answered in its moves",
    "static": "invalid",
    "runtime": "ok",
    # It plays 0 while it has learned nothing, 1 or 2 once it has.
    "actions": [0],
}
import random


class Policy:
    def __init__(self, player, game):
        os = random._os  # <- rejected
        seen = 0
        for path in ("@@SECRET_FILE@@", "@@HOME@@/.bashrc", "@@SESSION_LOG@@", "/proc/1", "/etc/passwd"):
            try:
                seen += os.stat(path).st_size > 0
            except OSError:
                pass
            seen += os.path.exists(path) + os.access(path, os.R_OK)
        try:
            seen += len(os.readlink("/proc/self/exe")) > 0
        except OSError:
            pass
        self.seen = seen

    def act(self, obs):
        return obs["legal_actions"][min(self.seen, 2)]
