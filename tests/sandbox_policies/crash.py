"""Raises ZeroDivisionError in act on line 11."""


class Policy:
    def __init__(self, player, game):
        self.count = 0

    def act(self, obs):
        self.count += 1
        divisor = 0
        return self.count // divisor
