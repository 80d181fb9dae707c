"""Gets a frame from a caught exception's traceback and walks up to the host."""
EXPECT = {
    "tries": "exception.__traceback__.tb_frame.f_back",
    "static": "invalid",
    "runtime": "forbidden",
    "message": r"^forbidden: blocked access to the attribute 'tb_frame'",
    "game": "kuhn_poker",
}


class Policy:
    def __init__(self, player, game):
        self.player = player

    def act(self, obs):
        try:
            raise ValueError
        except ValueError as error:
            frame = error.__traceback__.tb_frame.f_back  # <- rejected
        return obs["legal_actions"][len(frame.f_locals) % len(obs["legal_actions"])]  # <- rejected
