"""Reports facts about its process (validation would reject `random._os`)."""
import random
import typing


class Policy:
    def __init__(self, player, game):
        pass

    def act(self, obs):
        os = random._os
        question = obs["question"]
        if question == "env_allowed":
            allowed = set(obs["allowed"])
            return 1 if set(os.environ) <= allowed else 0
        if question == "uid":
            return os.getuid()
        if question == "uid_is":
            return 1 if os.getuid() == os.geteuid() == os.getgid() == obs["uid"] else 0
        if question == "path_exists":
            return 1 if os.path.exists(obs["path"]) else 0
        if question == "recursion":
            sys = typing.sys
            sys.setrecursionlimit(10**6)
            return 1 if sys.getrecursionlimit() <= obs["cap"] else 0
        if question == "hash":
            return hash("csro") % 1000
        return obs["legal_actions"][0]
