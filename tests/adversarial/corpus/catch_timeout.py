"""Loops forever and swallows whatever interrupts it (BaseException included)."""
EXPECT = {
    "tries": "an infinite loop that catches its own timeout and keeps going",
    "static": "valid",
    "runtime": "timeout",
    "message": r"^timeout: act \(episode \d+\) ran past its limit of [\d.]+ s",
}


class Policy:
    def __init__(self, player, game):
        self.player = player

    def act(self, obs):
        while True:
            try:
                while True:
                    pass
            except BaseException:
                pass
