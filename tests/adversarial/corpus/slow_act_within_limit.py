"""Sleeps 0.9 of the per-call limit in every act: never past a limit, but a
whole evaluation would take hours (issue 25).  The chess clock ends it."""
EXPECT = {
    "tries": "time.sleep(0.9 x move_timeout) in every act",
    "static": "invalid",
    "runtime": "timeout",
    "message": r"^timeout: act \(episode \d+\) ran out of the policy's time budget: [\d.]+ s used over \d+ decision",
    "seconds": 8,
}
import typing


class Policy:
    def __init__(self, player, game):
        self.player = player

    def act(self, obs):
        typing.sys.modules["time"].sleep(0.45)  # <- rejected
        return obs["legal_actions"][0]
