"""Answers with the action's name instead of its id."""
EXPECT = {
    "tries": "return a str ('Rock')",
    "static": "valid",
    "runtime": "malformed",
    "message": r"^malformed: act returned a str; expected an action id",
}


class Policy:
    def __init__(self, player, game):
        self.names = game["action_names"]

    def act(self, obs):
        return self.names[obs["legal_actions"][0]]
