class Policy:
    def __init__(self, player, game):
        self.player = player
        self.names = game["action_names"]  # index = action id

    def act(self, obs):
        legal = obs["legal_actions"]
        return legal[0]  # always return one of the legal action ids
