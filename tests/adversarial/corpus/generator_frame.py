"""Takes the frame of a generator it made and climbs from it."""
EXPECT = {
    "tries": "generator.gi_frame.f_back",
    "static": "invalid",
    "runtime": "forbidden",
    "message": r"^forbidden: blocked access to the attribute 'gi_frame'",
}


def steps():
    yield 1


class Policy:
    def __init__(self, player, game):
        self.player = player

    def act(self, obs):
        frame = steps().gi_frame  # <- rejected
        return obs["legal_actions"][0 if frame is None else 1 % len(obs["legal_actions"])]
