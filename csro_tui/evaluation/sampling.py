"""Seeds and sampling: everything random in a match derives from its seed.

A match seed gives one seed per pair of seat-swapped episodes; an episode
seed gives the referee's generator (chance, sampling of returned
distributions) and each participant's own seed.  Every step is a keyed
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


def episode_streams(episode_seed: int) -> tuple[int, int, int]:
    """(referee rng seed, seed for participant a, seed for participant b).

    Derived from the episode seed alone, so one recorded seed replays an
    episode exactly; each by its own keyed hash, so a participant's seed
    tells nothing about the other two.
    """
    return derive(episode_seed, "referee"), derive(episode_seed, "role", 0), derive(episode_seed, "role", 1)


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
