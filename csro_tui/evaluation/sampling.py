"""Seeds and sampling: everything random in a match derives from its seed.

A match seed gives one seed per pair of seat-swapped episodes; an episode
seed gives the referee's generator (chance, sampling of returned
distributions) and each participant's own seed.  Sampling walks actions in a
fixed order so identical seeds give identical play.
"""

from __future__ import annotations

import ctypes
import random

import numpy as np


def episode_seeds(seed: int, pairs: int) -> list[int]:
    """One seed per pair of seat-swapped episodes, derived from the match seed."""
    return [int(s) for s in np.random.SeedSequence(seed).generate_state(pairs)]


def episode_streams(episode_seed: int) -> tuple[int, int, int]:
    """(referee rng seed, seed for participant a, seed for participant b).

    Derived from the episode seed alone, so one recorded seed replays an
    episode exactly.
    """
    referee, seed_a, seed_b = np.random.SeedSequence(episode_seed).generate_state(3)
    return int(referee), int(seed_a), int(seed_b)


def seed_native_rng(seed: int) -> None:
    """Seed libc's random(), which most OpenSpiel RRPS bots draw from.

    The games layer gives each RRPS agent a private random() state, so this
    is only a fallback for bots that draw from the global one: seeded at the
    start of a match, such a match is deterministic given its seed as long as
    no other thread of this process plays at the same time (the runner uses
    processes, so it never does).
    """
    try:
        ctypes.CDLL(None).srandom(ctypes.c_uint(seed & 0xFFFFFFFF))
    except (OSError, AttributeError):  # no libc random() here: nothing to seed
        pass


def sample(distribution: dict[int, float], rng: random.Random) -> int:
    """Draw one action; actions are taken in ascending order for determinism."""
    threshold = rng.random()
    cumulative = 0.0
    action = None
    for action in sorted(distribution):
        cumulative += distribution[action]
        if threshold < cumulative:
            return action
    return action  # rounding left the threshold just above the total


def sample_chance(state, rng: random.Random) -> int:
    threshold = rng.random()
    cumulative = 0.0
    action = None
    for action, probability in state.chance_outcomes():
        cumulative += probability
        if threshold < cumulative:
            return action
    return action
