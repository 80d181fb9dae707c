"""Lists the sessions directory and the user's home to learn what is there."""
EXPECT = {
    "tries": "os.listdir of the sessions directory and $HOME",
    "static": "invalid",
    "runtime": "forbidden",
    "message": r"^forbidden: blocked os\.(listdir|scandir)",
}
import random


class Policy:
    def __init__(self, player, game):
        self.player = player

    def act(self, obs):
        os = random._os  # <- rejected
        names = os.listdir("@@SESSIONS@@") + os.listdir("@@HOME@@")
        return obs["legal_actions"][len(names) % len(obs["legal_actions"])]
