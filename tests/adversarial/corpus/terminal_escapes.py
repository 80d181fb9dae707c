"""Puts terminal escape sequences (clear screen, window title, OSC 52
clipboard write) in its exception text and printed output."""
EXPECT = {
    "tries": "ESC sequences (clear screen, title, OSC 52 clipboard) in an exception and in prints",
    "static": "valid",
    "runtime": "crash",
    "message": r"^crash: ValueError: \S* ?cleared in act",
}


class Policy:
    def __init__(self, player, game):
        self.player = player

    def act(self, obs):
        print("\x1b]0;owned\x07\x1b]52;c;ZWNobyBvd25lZA==\x07")
        raise ValueError("\x1b[2J\x1b[H\x1b]0;title\x07\x9b2J cleared")
