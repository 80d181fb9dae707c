"""Referee doubles: a host that runs trusted test code in-process (PolicyHost's
methods, no sandbox) and game specs over raw OpenSpiel games with OpenSpiel's
RRPS bots, and small code policies. Shared by the referee's, the seat-fixed and the
exact evaluator's tests."""

from __future__ import annotations


import pyspiel

from csro_tui.evaluation.participants import CodePolicy
from csro_tui.sandbox.failures import FailureCategory, PolicyFailure
from csro_tui.sandbox.sandbox import PolicyHost


class FakeHost:
    """PolicyHost's interface, in-process, over trusted test code."""

    instances: list["FakeHost"] = []

    def __init__(self, source, game_info, *, name="policy", limits=None):
        self.source, self.game_info, self.name = source, game_info, name
        self.policies: dict[int, object] = {}
        self.batches: list[list[tuple[int, dict]]] = []
        self.episodes: list[tuple[int, int, int]] = []
        self.ended: list[int] = []
        self.closed = False
        FakeHost.instances.append(self)

    def start(self):
        namespace: dict = {}
        try:
            exec(compile(self.source, self.name, "exec"), namespace)  # trusted test code only
        except Exception as error:
            raise PolicyFailure(FailureCategory.CRASH, repr(error)) from None
        self.policy_class = namespace["Policy"]

    def new_episodes(self, episodes):
        self.episodes.extend(episodes)
        for episode_id, player, seed in episodes:
            game = dict(self.game_info, player=player, seed=seed)
            self.policies[episode_id] = self.policy_class(player, game)

    def act(self, requests):
        self.batches.append(list(requests))
        answers = []
        for episode_id, obs in requests:
            try:
                answer = self.policies[episode_id].act(obs)
            except Exception as error:
                raise PolicyFailure(FailureCategory.CRASH, repr(error)) from None
            legal = obs["legal_actions"]
            chosen = answer if isinstance(answer, dict) else {answer: 1.0}
            if any(action not in legal for action in chosen):
                raise PolicyFailure(FailureCategory.ILLEGAL_ACTION, f"{answer} not in {legal}")
            if isinstance(answer, dict):
                total = sum(answer.values())
                answer = {action: p / total for action, p in answer.items()}
            answers.append(answer)
        return answers

    def end_episodes(self, episode_ids):
        self.ended.extend(episode_ids)
        for episode_id in episode_ids:
            self.policies.pop(episode_id, None)

    def close(self):
        self.closed = True


class HistoryView:
    """Own seat, the full action history so far and the legal actions."""

    def __init__(self, player):
        self.player = player

    def observe(self, state):
        return {
            "seat": self.player,
            "history": list(state.history()),
            "info": state.information_state_string(self.player)
            if not state.is_simultaneous_node()
            else "",
            "legal_actions": state.legal_actions(self.player),
        }


class RoshamboBot:
    def __init__(self, name, throws):
        self.name, self.throws = name, throws

    def make(self, player, seed):
        return RoshamboAgent(pyspiel.make_roshambo_bot(player, self.name, self.throws))


class RoshamboAgent:
    def __init__(self, bot):
        self.bot = bot

    def step(self, state):
        return self.bot.step(state)

    def action_probabilities(self, state):
        return None


class DoubleSpec:
    def __init__(self, name, game_string, *, exact=False, bots=(), auto=None):
        self.name, self.title, self.game_string, self.exact = name, name, game_string, exact
        self._game = pyspiel.load_game(game_string)
        self._bots = list(bots)
        self._auto = auto

    def load(self):
        return self._game

    def game_info(self):
        return {"name": self.name, "num_players": 2, "num_actions": self._game.num_distinct_actions()}

    def new_view(self, player):
        return HistoryView(player)

    def auto_action(self, state):
        return self._auto(state) if self._auto else None

    def benchmark(self):
        return self._bots

    def seed_policies(self):
        return {}


def rrps(throws=20, bots=("randbot", "rotatebot")):
    return DoubleSpec(
        "rrps",
        f"repeated_game(stage_game=matrix_rps(),num_repetitions={throws})",
        bots=[RoshamboBot(name, throws) for name in bots],
    )


def kuhn(**kwargs):
    return DoubleSpec("kuhn_poker", "kuhn_poker", exact=True, **kwargs)


# ---------------------------------------------------------------- small code policies (trusted test code)


def code(name, act_body, init_body="pass"):
    source = (
        "import random\n"
        "class Policy:\n"
        "    def __init__(self, player, game):\n"
        f"        self.rng = random.Random(game['seed'])\n        self.player = player\n        {init_body}\n"
        "    def act(self, obs):\n"
        f"        {act_body}\n"
    )
    return CodePolicy(name, source)


ROCK = code("rock", "return 0")
RANDOM = code("random", "return self.rng.choice(obs['legal_actions'])")
UNIFORM = code("uniform", "return {a: 1.0 for a in obs['legal_actions']}")
PASSIVE = code("passive", "return min(obs['legal_actions'])")  # Kuhn: always check/fold
AGGRESSIVE = code("aggressive", "return max(obs['legal_actions'])")  # Kuhn: always bet/call
