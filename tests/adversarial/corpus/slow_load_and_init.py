"""Sleeps 0.95 of init_timeout while its module loads (which happens again
for every episode) and 0.95 of move_timeout in every __init__: each call
within its limit, the evaluation stalled for minutes (issue 25).  The
set-up budget (init_timeout + init_budget per episode) ends it."""
EXPECT = {
    "tries": "time.sleep just under the limit at module load and in every __init__",
    "static": "invalid",
    "runtime": "timeout",
    "message": r"^timeout: module load \(episode \d+\) ran out of the time budget for loading the module and Policy\.__init__",
    "limits": {"init_timeout": 4.0},
    "seconds": 9,
}
import typing

typing.sys.modules["time"].sleep(3.8)  # <- rejected


class Policy:
    def __init__(self, player, game):
        typing.sys.modules["time"].sleep(0.475)  # <- rejected

    def act(self, obs):
        return obs["legal_actions"][0]
