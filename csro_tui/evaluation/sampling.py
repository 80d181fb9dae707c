"""Seeds and sampling: everything random in a match derives from its seed.

A match seed gives one seed per pair of seat-swapped episodes, or, for a
seat-fixed match (two populations: a plays one seat only), one seed per
episode from a stream of its own (`episode_plan`); an episode seed gives the
referee's generator (chance, sampling of returned distributions) and each
participant's own seed.  Every step is a keyed
one-way hash (`derive`), and match seeds come from a secret master seed
(`new_master_seed`, recorded and printed so a run can be reproduced), so
a policy cannot compute its opponent's or the referee's randomness.  Sampling walks actions in a
fixed order so identical seeds give identical play.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import random
from typing import NamedTuple


def new_master_seed() -> int:
    """A fresh secret 63-bit seed for an evaluation or a session (os.urandom)."""
    return int.from_bytes(os.urandom(8), "big") >> 1


def derive(key: int, *parts: object) -> int:
    """A 63-bit seed from `key` and `parts` by keyed BLAKE2b: one-way, so a
    policy that sees one derived seed learns nothing about its key or about
    any other seed derived from the same key (its opponent's, the referee's)."""
    secret = hashlib.blake2b(str(int(key)).encode("ascii"), digest_size=32, person=b"csro-seed-key").digest()
    message = "\x1f".join(map(str, parts)).encode("utf-8")
    digest = hashlib.blake2b(message, key=secret, digest_size=8, person=b"csro-seed").digest()
    return int.from_bytes(digest, "big") >> 1


def episode_seeds(seed: int, pairs: int) -> list[int]:
    """One seed per pair of seat-swapped episodes, derived from the match seed."""
    return [derive(seed, "pair", index) for index in range(pairs)]


def seat_fixed_episode_seeds(seed: int, episodes: int) -> list[int]:
    """One seed per episode of a seat-fixed match, derived from the match seed.

    A stream apart from `episode_seeds` (a seat-fixed job never replays the
    seat-swapped job of the same seed), and not keyed by the seat: the job
    (a, b, seat s) and the job (b, a, seat 1 - s) are the same episodes seen
    from the other side, and a's jobs in seat 0 and in seat 1 from one seed
    are dealt the same chance outcomes.
    """
    return [derive(seed, "seat-fixed", index) for index in range(episodes)]


def episode_streams(episode_seed: int) -> tuple[int, int, int]:
    """(referee rng seed, seed for participant a, seed for participant b).

    Derived from the episode seed alone, so one recorded seed replays an
    episode exactly; each by its own keyed hash, so a participant's seed
    tells nothing about the other two.  In a seat-swapped pair a keeps the
    second value in both seats; in a seat-fixed episode the second value is
    the seat-0 player's and the third the seat-1 player's (`episode_plan`).
    """
    return derive(episode_seed, "referee"), derive(episode_seed, "role", 0), derive(episode_seed, "role", 1)


class PlannedEpisode(NamedTuple):
    """One episode of a match, before it is played: everything it draws from."""

    seed: int  # the episode's recorded seed (a seat-swapped pair's shared seed)
    seat_of_a: int
    referee_seed: int
    a_seed: int  # participant a's own seed
    b_seed: int


def episode_plan(seed: int, episodes: int, seat: int | None = None) -> list[PlannedEpisode]:
    """Every episode of a match in play order.

    `seat` None: seat-swapped pairs (episodes rounded up to even), a in seat
    0 then in seat 1 from each pair seed.  `seat` 0 or 1: `episodes`
    episodes with a in that seat, each from its own seed, the participants'
    seeds given by seat (see `seat_fixed_episode_seeds` for why).
    """
    plan: list[PlannedEpisode] = []
    if seat is None:
        for pair_seed in episode_seeds(seed, (episodes + 1) // 2):
            referee_seed, a_seed, b_seed = episode_streams(pair_seed)
            plan.append(PlannedEpisode(pair_seed, 0, referee_seed, a_seed, b_seed))
            plan.append(PlannedEpisode(pair_seed, 1, referee_seed, a_seed, b_seed))
        return plan
    for episode_seed in seat_fixed_episode_seeds(seed, episodes):
        referee_seed, seat0_seed, seat1_seed = episode_streams(episode_seed)
        a_seed, b_seed = (seat0_seed, seat1_seed) if seat == 0 else (seat1_seed, seat0_seed)
        plan.append(PlannedEpisode(episode_seed, seat, referee_seed, a_seed, b_seed))
    return plan


def seed_native_rng(seed: int) -> None:
    """Seed libc's random(), which most OpenSpiel RRPS bots draw from.

    The games layer gives each RRPS agent a private random() state, so this
    is only a fallback for bots that draw from the global one: seeded at the
    start of a match, such a match is deterministic given its seed as long as
    no other thread of this process plays at the same time (the runner uses
    processes, so it never does).
    """
    try:
        ctypes.CDLL(None).srandom(ctypes.c_uint(derive(seed, "native") & 0xFFFFFFFF))
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
