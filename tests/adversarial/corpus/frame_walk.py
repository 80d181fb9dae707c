"""Climbs the call stack into the host's frames to read its locals."""
EXPECT = {
    "tries": "sys._getframe(1).f_back.f_locals",
    "static": "invalid",
    "runtime": "forbidden",
    "message": r"^forbidden: blocked sys\._getframe\(\) while policy code runs",
    "game": "kuhn_poker",
}
import typing


class Policy:
    def __init__(self, player, game):
        self.player = player

    def act(self, obs):
        frame = typing.sys._getframe(1)  # <- rejected
        host_locals = frame.f_back.f_locals  # <- rejected
        return obs["legal_actions"][len(host_locals) % len(obs["legal_actions"])]
