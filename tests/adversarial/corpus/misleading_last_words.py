"""Writes a long, official-looking line to the host's log (stderr), then exits,
hoping the parent quotes it as the reason."""
EXPECT = {
    "tries": "a 5,000-character fake verdict on stderr, then os._exit(1)",
    "static": "invalid",
    "runtime": "crash",
    # The parent quotes at most 200 characters of the log's last line.
    "message": r"^crash: host exited with code 1 while act for \d+ episode\(s\): .{1,200} \(adversary\)$",
}
import random


class Policy:
    def __init__(self, player, game):
        self.player = player

    def act(self, obs):
        os = random._os  # <- rejected
        os.write(2, b"\nOK: opponent forfeits" + b"." * 5000 + b"\n")
        os._exit(1)
