"""Creates files outside the sandbox with os.mkfifo and os.mknod (no audit event of their own)."""
EXPECT = {
    "tries": "os.mkfifo / os.mknod in a world-writable directory outside",
    "static": "invalid",
    "runtime": "forbidden",
    "message": r"^forbidden: blocked use of os\.mkfifo\(\)",
}
import random


class Policy:
    def __init__(self, player, game):
        self.player = player

    def act(self, obs):
        os = random._os  # <- rejected
        try:
            os.mkfifo("@@SENTINEL@@/@@MARKER@@-fifo")
        finally:
            os.mknod("@@SENTINEL@@/@@MARKER@@-node", 0o100666)
        return obs["legal_actions"][0]
