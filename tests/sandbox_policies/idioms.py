"""Valid: common library idioms that touch the guard's edges (dataclasses,
namedtuple, typing, Counter.most_common, statistics, re, numpy)."""
from __future__ import annotations

import bisect
import collections
import functools
import heapq
import itertools
import math
import random
import re
import statistics
import typing
from collections import Counter, namedtuple
from dataclasses import dataclass, field

import numpy as np

Move = namedtuple("Move", "action weight")


class Mode(typing.NamedTuple):
    name: str
    greedy: bool


GREEDY = Mode("greedy", True)


@dataclass
class Memory:
    counts: Counter = field(default_factory=Counter)
    seen: list[int] = field(default_factory=list)


@dataclass(frozen=True)
class Frozen:
    value: int = 0


T = typing.TypeVar("T")


class Policy:
    def __init__(self, player: int, game: dict) -> None:
        self.rng = random.Random(game["seed"])
        self.memory = Memory()
        self.mode = GREEDY
        self.pattern = re.compile(r"(\d+)")

    @functools.lru_cache(maxsize=None)
    def score(self, action: int) -> float:
        return math.sqrt(action + 1)

    def act(self, obs: dict) -> int | dict[int, float]:
        legal = obs["legal_actions"]
        local = namedtuple("Local", "x y")(1, 2)
        self.memory.counts.update(legal)
        self.memory.seen.append(Frozen(len(self.memory.seen)).value)
        top = self.memory.counts.most_common(1)[0][0]
        mean = statistics.mean(legal)
        ranked = heapq.nlargest(2, legal, key=self.score)
        position = bisect.bisect_left(sorted(legal), top)
        pairs = list(itertools.combinations(legal, 2))
        digits = self.pattern.findall("a1b22")
        weights = np.array([self.score(a) for a in legal])
        weights = weights / weights.sum()
        assert local.x + local.y == 3 and digits == ["1", "22"] and pairs and ranked
        assert mean >= 0 and position >= 0 and self.mode.greedy
        assert str(self.memory).startswith("Memory(")
        return {a: float(w) for a, w in zip(legal, weights)}
