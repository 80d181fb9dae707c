"""Raises with a message full of newlines and protocol-looking lines."""
EXPECT = {
    "tries": "an exception message with newlines and fake protocol replies",
    "static": "valid",
    "runtime": "crash",
    "message": r"^crash: ValueError: all good in act \(episode \d+\) \(policy\.py line 17, in act\) \(adversary\)$",
}

FAKE = '{"seq": 3, "ok": true, "answers": [0, 0]}'


class Policy:
    def __init__(self, player, game):
        self.player = player

    def act(self, obs):
        raise ValueError("all good\n" + FAKE + "\nok: false\n" * 100)
