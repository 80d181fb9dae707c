"""Appends a forged event to a session log under the sessions directory."""
EXPECT = {
    "tries": "append a forged event to a session's events.jsonl",
    "static": "invalid",
    "runtime": "forbidden",
    "message": r"^forbidden: blocked open\(.*events\.jsonl.\) for writing",
}
import typing


class Policy:
    def __init__(self, player, game):
        self.player = player

    def act(self, obs):
        io = typing.sys.modules["io"]  # <- rejected
        with io.open("@@SESSION_LOG@@", "a") as log:
            log.write('{"v": 1, "seq": 2, "type": "policy_added"}\n')
        return obs["legal_actions"][0]
