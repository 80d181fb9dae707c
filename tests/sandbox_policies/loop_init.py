"""Never returns from __init__."""


class Policy:
    def __init__(self, player, game):
        total = 0
        while True:
            total += 1

    def act(self, obs):
        return obs["legal_actions"][0]
