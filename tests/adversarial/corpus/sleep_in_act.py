"""Sleeps (no CPU used, so no CPU limit fires) on every move."""
EXPECT = {
    "tries": "time.sleep(60) in act, time reached through typing.sys.modules",
    "static": "invalid",
    "runtime": "timeout",
    "message": r"^timeout: act \(episode \d+\) ran past its limit of [\d.]+ s",
}
import typing


class Policy:
    def __init__(self, player, game):
        self.player = player

    def act(self, obs):
        typing.sys.modules["time"].sleep(60)  # <- rejected
        return obs["legal_actions"][0]
