"""How far apart two behaviour profiles are, with the noise of that figure.

Exact games: the reach-weighted total-variation distance.  Each information
state is weighted by how often it is reached against the uniform random
opponent in either seat, the policies' own moves averaged
(opponent reach x (own reach of a + own reach of b) / 2); the distance is the
weighted mean of the two action distributions' total variation there.  It is
0 exactly when the policies act the same in every state either of them
reaches, and it has no noise (`stderr` None).

Sampled games: the mean over probe opponents (or benchmark bots) of the
difference of the two policies' mean returns, in units of the game's largest
return, with the standard error of that figure from the matches' own errors.
"The same within noise" is `distance <= NOISE_K * stderr`.  A probe only one
policy failed against counts as the largest difference (1).
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

from csro_tui.profiles.model import EXACT, Profile, merged_row

NOISE_K = 2.0
# Sampled situations are compared only where both policies were seen this often.
MIN_VISITS = 20
# ... and named as a difference when their total variation is at least this.
SAMPLED_TV = 0.25
EXACT_TOLERANCE = 1e-9


@dataclass
class Comparison:
    distance: float
    stderr: float | None  # None: exact
    differences: list[dict] = field(default_factory=list)  # most important first

    @property
    def same_within_noise(self) -> bool:
        if self.stderr is None:
            return self.distance <= EXACT_TOLERANCE
        return self.distance <= NOISE_K * self.stderr


def _tv(p: dict[str, float], q: dict[str, float]) -> float:
    return 0.5 * sum(abs(p.get(k, 0.0) - q.get(k, 0.0)) for k in set(p) | set(q))


def compare(a: Profile, b: Profile, *, opponent_reach=None, differences: bool = True,
            seat: int | None = None) -> Comparison:
    """Distance between two profiles of the same game and kind, and where they differ
    (unless `differences` is False: the distance alone, as a population's matrix needs).
    Exact games: `opponent_reach` (per row, in table order) weighs the states by
    another opponent than the uniform one (the meta-strategy, in review); `seat` (two
    populations) keeps that seat's states only: a policy of one seat's population never
    plays the other seat, so what it would do there is no part of its behaviour."""
    if a.kind != b.kind:
        raise ValueError(f"profiles of different kinds ({a.kind}, {b.kind}) cannot be compared")
    if a.failure or b.failure:
        same = bool(a.failure) and bool(b.failure)
        return Comparison(0.0 if same else 1.0, None if a.kind == EXACT else 0.0, [
            {"situation": "building the policy's table", "a": a.failure or "ok", "b": b.failure or "ok"}
        ] if not same else [])
    if a.kind == EXACT:
        return _compare_exact(a, b, opponent_reach, differences, seat)
    return _compare_sampled(a, b)


def _compare_exact(a: Profile, b: Profile, opponent_reach=None, differences: bool = True,
                   seat: int | None = None) -> Comparison:
    # Rows are the game's information states in table order; a recorded profile
    # leaves out the state strings (a third of its size), so align by position then.
    if all(row.key for row in a.situations) and all(row.key for row in b.situations):
        rows_b = {row.key: row for row in b.situations}
        pairs = [(row, rows_b.get(row.key)) for row in a.situations]
    elif len(a.situations) == len(b.situations):
        pairs = list(zip(a.situations, b.situations))
    else:
        raise ValueError("exact profiles of different games cannot be compared")
    total, weighted = 0.0, 0.0
    measured: list[tuple[int, float, float]] = []  # (row of a, weight, total variation) where weighed
    differing = False
    for index, (row, other) in enumerate(pairs):
        if other is None or (seat is not None and row.seat is not None and row.seat != seat):
            continue
        reach_a = row.weight / row.opponent_reach if row.opponent_reach else 0.0
        reach_b = other.weight / other.opponent_reach if other.opponent_reach else 0.0
        outside = row.opponent_reach if opponent_reach is None else float(opponent_reach[index])
        weight = outside * (reach_a + reach_b) / 2
        if weight <= 0:
            continue
        tv = _tv(row.distribution, other.distribution)
        total += weight
        weighted += weight * tv
        if differences:
            measured.append((index, weight, tv))
            differing = differing or tv > EXACT_TOLERANCE
    # Differences by situation name: states a player cannot tell apart (Leduc's suits)
    # are one situation, listed once with its states' reach and moves summed up.
    by_name: dict[str, list] = {}  # name -> [weight x tv, weight, largest tv, rows of a, rows of b]
    names = a.row_names if differing else []
    for index, weight, tv in measured if differing else ():
        entry = by_name.setdefault(names[index], [0.0, 0.0, 0.0, [], []])
        entry[0] += weight * tv
        entry[1] += weight
        entry[2] = max(entry[2], tv)
        entry[3].append(pairs[index][0])
        entry[4].append(pairs[index][1])
    found = []
    for name, (importance, weight, largest, rows_a, rows_b) in by_name.items():
        if largest <= EXACT_TOLERANCE:
            continue
        merged_a, merged_b = merged_row(rows_a), merged_row(rows_b)
        found.append((importance, {
            "situation": name,
            "reach": {"a": merged_a.weight, "b": merged_b.weight},
            "a": merged_a.distribution,
            "b": merged_b.distribution,
            "total_variation": importance / weight,
        }))
    found.sort(key=lambda item: -item[0])
    return Comparison(weighted / total if total else 0.0, None, [entry for _, entry in found])


def _compare_sampled(a: Profile, b: Profile) -> Comparison:
    probes_b = {row.name: row for row in b.probes}
    gaps, variances, found = [], [], []
    scale = a.payoff_scale or 1.0
    for row in a.probes:
        other = probes_b.get(row.name)
        if other is None:
            continue
        if row.failure or other.failure or row.mean is None or other.mean is None:
            gap = 0.0 if (row.failure and other.failure) else 1.0
            gaps.append(gap)
            variances.append(0.0)
            if gap:
                found.append((math.inf, _probe_difference(row, other)))
            continue
        gap = abs(row.mean - other.mean) / scale
        noise = math.hypot(row.stderr or 0.0, other.stderr or 0.0)
        gaps.append(gap)
        variances.append((noise / scale) ** 2)
        if abs(row.mean - other.mean) > NOISE_K * noise + EXACT_TOLERANCE:
            found.append((gap / (noise / scale if noise else 1e-12), _probe_difference(row, other)))
    rows_b = {(row.group, row.label): row for row in b.situations}
    for row in a.situations:
        other = rows_b.get((row.group, row.label))
        if other is None or min(row.weight, other.weight) < MIN_VISITS:
            continue
        tv = _tv(row.distribution, other.distribution)
        if tv >= SAMPLED_TV:
            found.append((tv, {"situation": row.name, "visits": {"a": row.weight, "b": other.weight},
                               "a": row.distribution, "b": other.distribution, "total_variation": tv}))
    found.sort(key=lambda item: -item[0])
    if not gaps:
        return Comparison(0.0, 0.0, [entry for _, entry in found])
    distance = float(np.mean(gaps))
    stderr = math.sqrt(sum(variances)) / len(gaps)
    return Comparison(distance, stderr, [entry for _, entry in found])


def _probe_difference(row, other) -> dict:
    def result(probe) -> dict:
        if probe.failure:
            return {"failure": probe.failure}
        return {"mean": probe.mean, "stderr": probe.stderr, "thirds": probe.thirds}

    return {"situation": f"against {row.name} ({row.description})", "a": result(row), "b": result(other)}


# ---------------------------------------------------------------- populations


# The latest matrices, by their profiles' identities (each entry holds its profiles, so an
# identity is never reused): the diversity view opened again, or at an earlier step of the
# timeline (fewer members), takes its distances from here (~1 s for 201 Leduc members).
_RECENT: list[tuple[tuple[Profile, ...], int | None, np.ndarray, np.ndarray]] = []
RECENT_KEPT = 4
_recent_lock = threading.Lock()


def distance_matrix(profiles: Sequence[Profile], seat: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Pairwise distances and their standard errors (0 in exact games); `seat` as in `compare`.
    Profiles (the same objects) of a recent call are not compared again."""
    with _recent_lock:
        for kept, kept_seat, distances, errors in _RECENT:
            where = {id(p): k for k, p in enumerate(kept)}
            if kept_seat == seat and all(id(p) in where for p in profiles):
                index = [where[id(p)] for p in profiles]
                return distances[np.ix_(index, index)], errors[np.ix_(index, index)]
    distances, errors = _distance_matrix(profiles, seat)
    with _recent_lock:
        _RECENT.insert(0, (tuple(profiles), seat, distances.copy(), errors.copy()))
        del _RECENT[RECENT_KEPT:]
    return distances, errors


def _distance_matrix(profiles: Sequence[Profile], seat: int | None) -> tuple[np.ndarray, np.ndarray]:
    n = len(profiles)
    distances, errors = np.zeros((n, n)), np.zeros((n, n))
    exact = _exact_distances(profiles, seat)
    if exact is not None:
        return exact, errors
    for i in range(n):
        for j in range(i + 1, n):
            comparison = compare(profiles[i], profiles[j], differences=False, seat=seat)
            distances[i, j] = distances[j, i] = comparison.distance
            errors[i, j] = errors[j, i] = comparison.stderr or 0.0
    return distances, errors


def _exact_distances(profiles: Sequence[Profile], seat: int | None) -> np.ndarray | None:
    """`_compare_exact`'s distances for every pair at once (numpy), where every profile is an
    exact table of the same states in the same order under the same outside reach (one
    game's members); None otherwise (the pairwise comparisons then).  200 Leduc members
    compared pair by pair took minutes; this takes about a second."""
    if len(profiles) < 2 or any(p.kind != EXACT or p.failure for p in profiles):
        return None
    keys = [row.key for row in profiles[0].situations]
    if not all(keys) or any([row.key for row in p.situations] != keys for p in profiles[1:]):
        return None
    outside = np.array([row.opponent_reach for row in profiles[0].situations], dtype=float)
    if any(not np.array_equal(np.array([row.opponent_reach for row in p.situations], dtype=float), outside)
           for p in profiles[1:]):
        return None
    words = sorted({word for p in profiles for row in p.situations for word in row.distribution})
    column = {word: k for k, word in enumerate(words)}
    n, states = len(profiles), len(keys)
    moves = np.zeros((n, states, len(words)))
    reach = np.zeros((n, states))
    for i, p in enumerate(profiles):
        for s, row in enumerate(p.situations):
            for word, probability in row.distribution.items():
                moves[i, s, column[word]] = probability
            reach[i, s] = row.weight / row.opponent_reach if row.opponent_reach else 0.0
    if seat is not None:  # that seat's states only (a state of no seat stays)
        keep = np.array([row.seat is None or row.seat == seat for row in profiles[0].situations])
        outside = np.where(keep, outside, 0.0)
    distances = np.zeros((n, n))
    for i in range(n - 1):
        weight = outside[None, :] * (reach[i][None, :] + reach[i + 1:]) / 2
        weight = np.where(weight > 0, weight, 0.0)
        tv = 0.5 * np.abs(moves[i][None, :, :] - moves[i + 1:]).sum(axis=2)
        total = weight.sum(axis=1)
        row = np.divide((weight * tv).sum(axis=1), total, out=np.zeros_like(total), where=total > 0)
        distances[i, i + 1:] = distances[i + 1:, i] = row
    return distances


def clusters(distances: np.ndarray, errors: np.ndarray, threshold: float = 0.0) -> list[list[int]]:
    """Groups of members that are the same strategy: linked when their distance is
    within noise (<= NOISE_K * stderr) or at most `threshold`; single members included."""
    n = len(distances)
    parent = list(range(n))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for i in range(n):
        for j in range(i + 1, n):
            if distances[i, j] <= max(threshold, NOISE_K * errors[i, j]) + EXACT_TOLERANCE:
                parent[root(i)] = root(j)
    groups: dict[int, list[int]] = {}
    for i in range(n):
        groups.setdefault(root(i), []).append(i)
    return sorted(groups.values(), key=lambda g: g[0])


def cluster_order(distances: np.ndarray) -> list[int]:
    """An order of the members that puts similar ones next to each other (greedy
    nearest neighbour from the member with the most close neighbours), so clusters
    show as blocks on the heat map."""
    n = len(distances)
    if n == 0:
        return []
    start = int(np.argmin(distances.sum(axis=1)))
    order, left = [start], set(range(n)) - {start}
    while left:
        last = order[-1]
        nearest = min(left, key=lambda j: (distances[last, j], j))
        order.append(nearest)
        left.remove(nearest)
    return order


def effective_strategies(weights: Sequence[float], distances: np.ndarray) -> float:
    """Effective number of distinct strategies in a meta-strategy: the order-2
    similarity-sensitive diversity of Leinster and Cobbold, 1 / (p' Z p) with
    similarity Z = 1 - distance.  Equals the inverse Simpson number (1/sum p^2)
    when all members are maximally apart, 1 when all weight is on one behaviour."""
    p = np.asarray(weights, dtype=float)
    if p.sum() <= 0:
        return 0.0
    p = p / p.sum()
    similarity = 1.0 - np.clip(distances, 0.0, 1.0)
    return float(1.0 / (p @ similarity @ p))


def nearest(profile: Profile, others: Sequence[tuple[str, Profile]]) -> list[tuple[str, Comparison]]:
    """Every (name, comparison) of `others` against `profile`, nearest first."""
    compared = [(name, compare(profile, other)) for name, other in others]
    return sorted(compared, key=lambda item: item[1].distance)
