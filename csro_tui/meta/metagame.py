"""The empirical meta-game: an incremental payoff matrix, one population or two.

One population (members without a seat): its policies play either seat, and
every matchup is evaluated in both seats, so the meta-game is one square
matrix with M[i][j] = mean return of policy i against policy j averaged over
seats.  The game is zero-sum, so M[j][i] = -M[i][j], and self-play averaged
over seats is 0: the diagonal is never evaluated.  Adding the n-th policy
therefore asks for only the n-1 pairs it forms with the earlier ones, and
setting one entry also sets its mirror.

Two populations (every member has a seat, 0 or 1; issue 23, as OpenSpiel's
psro_v2): only seat-0 x seat-1 pairs exist.  An entry's `row` is the seat-0
member, `col` the seat-1 member and `mean` the seat-0 member's return with
the seats fixed; `entry(col, row)` is its mirror (the seat-1 member's return).
Same-seat pairs are never evaluated (`entry` returns None for them), and
`matrix()` is the rectangular seat-0 x seat-1 matrix the meta-solvers take
(rows in `seat_ids(0)` order, columns in `seat_ids(1)` order).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any, Iterable

import numpy as np

FORMAT_VERSION = 1


class UnknownPolicyError(KeyError):
    """A policy id that is not in the meta-game."""

    def __str__(self) -> str:
        # KeyError would quote the message; this one is meant to be read.
        return str(self.args[0])


class IncompleteMetaGameError(ValueError):
    """The payoff matrix was requested while some pairs are not evaluated."""


@dataclass
class PayoffEntry:
    """Row policy's mean return against the column policy, seats averaged."""

    row: str
    col: str
    mean: float
    stderr: float = 0.0
    episodes: int = 0
    seeds: list[int] = field(default_factory=list)
    exact: bool = False  # computed exactly (tabular), not sampled

    def mirrored(self) -> PayoffEntry:
        """The same matchup seen from the column policy."""
        return PayoffEntry(
            row=self.col,
            col=self.row,
            mean=-self.mean,
            stderr=self.stderr,
            episodes=self.episodes,
            seeds=list(self.seeds),
            exact=self.exact,
        )

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable copy."""
        return {
            "row": self.row,
            "col": self.col,
            "mean": float(self.mean),
            "stderr": float(self.stderr),
            "episodes": int(self.episodes),
            "seeds": [int(seed) for seed in self.seeds],
            "exact": bool(self.exact),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PayoffEntry:
        """Inverse of `to_dict`; raises ValueError on malformed data."""
        try:
            return cls(
                row=str(data["row"]),
                col=str(data["col"]),
                mean=float(data["mean"]),
                stderr=float(data.get("stderr", 0.0)),
                episodes=int(data.get("episodes", 0)),
                seeds=[int(seed) for seed in data.get("seeds", [])],
                exact=bool(data.get("exact", False)),
            )
        except (KeyError, TypeError, ValueError, AttributeError) as error:
            raise ValueError(f"malformed payoff entry {data!r}: {error}") from None


def _copy(entry: PayoffEntry) -> PayoffEntry:
    return dataclasses.replace(entry, seeds=list(entry.seeds))


class MetaGame:
    """Payoff entries between the policies of one population (or two), added one by one.

    Means are also kept in a growing numpy array over every member (capacity
    doubles), so adding a policy costs O(n) amortised and `matrix()` is one copy.
    With two populations the same-seat blocks of that array stay unknown.
    """

    def __init__(self, policy_ids: Iterable[str] = (), seats: dict[str, int] | None = None) -> None:
        self._ids: list[str] = []
        self._index: dict[str, int] = {}
        self._seat: list[int | None] = []  # per member, in `_ids` order
        self._entries: dict[tuple[int, int], PayoffEntry] = {}
        self._means = np.zeros((0, 0))
        self._known = np.zeros((0, 0), dtype=bool)
        for policy_id in policy_ids:
            self.add_policy(policy_id, seat=(seats or {}).get(policy_id))

    @property
    def populations(self) -> int:
        """1 (members play both seats) or 2 (every member belongs to a seat)."""
        return 2 if self._seat and self._seat[0] is not None else 1

    def seat_of(self, policy_id: str) -> int | None:
        """The seat whose population `policy_id` belongs to; None with one population."""
        return self._seat[self.index(policy_id)]

    def seat_ids(self, seat: int) -> list[str]:
        """Two populations: the ids of one seat's members, in the order they were added."""
        return [pid for pid, s in zip(self._ids, self._seat) if s == seat]

    @property
    def policy_ids(self) -> list[str]:
        """Policy ids in the order they were added (matrix order)."""
        return list(self._ids)

    def __len__(self) -> int:
        return len(self._ids)

    def __contains__(self, policy_id: object) -> bool:
        return policy_id in self._index

    def index(self, policy_id: str) -> int:
        """Row/column of `policy_id` in `matrix()`."""
        try:
            return self._index[policy_id]
        except (KeyError, TypeError):
            raise UnknownPolicyError(
                f"unknown policy id {policy_id!r} in the meta-game"
            ) from None

    def add_policy(self, policy_id: str, seat: int | None = None) -> list[tuple[str, str]]:
        """Adds a policy; returns the pairs it needs evaluated: (new, existing)
        with one population, (seat-0 member, seat-1 member) with two.

        `seat` (0 or 1) puts it in that seat's population; every member of a
        meta-game has a seat or none has.
        """
        if not isinstance(policy_id, str) or not policy_id:
            raise ValueError(f"a policy id must be a non-empty string, got {policy_id!r}")
        if policy_id in self._index:
            raise ValueError(f"policy id {policy_id!r} is already in the meta-game")
        if seat not in (None, 0, 1):
            raise ValueError(f"the seat of {policy_id!r} must be 0 or 1, not {seat!r}")
        if self._seat and (seat is None) != (self._seat[0] is None):
            kind = "with a seat" if seat is not None else "without a seat"
            raise ValueError(
                f"policy {policy_id!r} {kind} cannot join a meta-game of "
                f"{'one population' if seat is not None else 'two populations'}"
            )
        size = len(self._ids)
        if size == self._means.shape[0]:
            self._grow(max(8, 2 * size))
        self._index[policy_id] = size
        self._ids.append(policy_id)
        self._seat.append(seat)
        if seat is None:
            self._known[size, size] = True  # the diagonal is 0 by symmetry
            return [(policy_id, other) for other in self._ids[:size]]
        if seat == 0:
            return [(policy_id, other) for other in self.seat_ids(1)]
        return [(other, policy_id) for other in self.seat_ids(0)]

    def missing_pairs(self) -> list[tuple[str, str]]:
        """Pairs without an entry: (later-added, earlier-added) ids with one
        population; (seat-0, seat-1) ids with two, the later-added member's first."""
        size = len(self._ids)
        if self.populations == 1:
            later, earlier = np.nonzero(np.tril(~self._known[:size, :size]))
            return [(self._ids[i], self._ids[j]) for i, j in zip(later, earlier)]
        seats = np.array(self._seat)
        cross = (seats[:, None] == 0) & (seats[None, :] == 1) & ~self._known[:size, :size]
        rows, cols = np.nonzero(cross)
        pairs = sorted(zip(rows.tolist(), cols.tolist()), key=lambda pair: (max(pair), min(pair)))
        return [(self._ids[i], self._ids[j]) for i, j in pairs]

    def is_complete(self) -> bool:
        """True when every pair has an entry, so `matrix()` will succeed."""
        return not self.missing_pairs()

    def set_entry(self, entry: PayoffEntry) -> None:
        """Records (or replaces) an entry and its mirror (col vs row, -mean).

        With two populations the pair must be one member of each seat; an
        entry given the other way round (row in seat 1) is stored as its mirror.
        """
        row, col = self.index(entry.row), self.index(entry.col)
        if row == col:
            raise ValueError(
                f"{entry.row!r} against itself is 0 by symmetry and is never set"
            )
        if self._seat[row] is not None:
            if self._seat[row] == self._seat[col]:
                raise ValueError(
                    f"{entry.row!r} and {entry.col!r} are both in seat {self._seat[row]}'s population; "
                    "only seat-0 x seat-1 pairs are evaluated"
                )
            if self._seat[row] == 1:
                self.set_entry(entry.mirrored())
                return
        if not math.isfinite(entry.mean):
            raise ValueError(f"payoff of {entry.row!r} vs {entry.col!r} is not finite")
        if not (math.isfinite(entry.stderr) and entry.stderr >= 0):
            raise ValueError(f"stderr of {entry.row!r} vs {entry.col!r} must be >= 0")
        if entry.episodes < 0:
            raise ValueError(f"episodes of {entry.row!r} vs {entry.col!r} must be >= 0")
        stored = _copy(entry)
        self._entries[row, col] = stored
        self._entries[col, row] = stored.mirrored()
        self._means[row, col] = stored.mean
        self._means[col, row] = -stored.mean
        self._known[row, col] = self._known[col, row] = True

    def entry(self, row: str, col: str) -> PayoffEntry | None:
        """A copy of the entry for row vs col, or None if not evaluated yet.

        The diagonal is an exact 0 with no episodes: it is known by symmetry.
        """
        row_index, col_index = self.index(row), self.index(col)
        if self._seat[row_index] is not None and self._seat[row_index] == self._seat[col_index]:
            return None  # two populations: a same-seat pair is never evaluated
        if row_index == col_index:
            return PayoffEntry(row=row, col=col, mean=0.0, exact=True)
        stored = self._entries.get((row_index, col_index))
        return None if stored is None else _copy(stored)

    def matrix(self) -> np.ndarray:
        """The matrix the meta-solvers take: n x n antisymmetric in `policy_ids`
        order (one population), or seat-0 x seat-1 in `seat_ids` order with the
        seat-0 member's returns (two populations)."""
        missing = self.missing_pairs()
        if missing:
            if self.populations == 1:
                total = len(self._ids) * (len(self._ids) - 1) // 2
            else:
                total = len(self.seat_ids(0)) * len(self.seat_ids(1))
            row, col = missing[0]
            raise IncompleteMetaGameError(
                f"the meta-game lacks {len(missing)} of {total} payoff entries "
                f"(first: {row!r} vs {col!r})"
            )
        return self.partial_matrix()

    def partial_matrix(self) -> np.ndarray:
        """Like `matrix()`, with NaN where a pair is not evaluated yet (for
        showing a meta-game while its new entries are being evaluated)."""
        size = len(self._ids)
        known = self._known[:size, :size]
        full = np.where(known, self._means[:size, :size], np.nan)
        if self.populations == 1:
            return full
        rows = [self._index[pid] for pid in self.seat_ids(0)]
        cols = [self._index[pid] for pid in self.seat_ids(1)]
        return full[np.ix_(rows, cols)]

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable state: ids and one entry per evaluated pair (its
        seat-0 member as `row` with two populations)."""
        entries = [
            stored.to_dict()
            for (row, col), stored in sorted(self._entries.items())
            if (row > col if self._seat[row] is None else self._seat[row] == 0)
        ]
        data: dict[str, Any] = {
            "version": FORMAT_VERSION,
            "policy_ids": list(self._ids),
            "entries": entries,
        }
        if self.populations == 2:  # absent with one population, as before
            data["seats"] = {pid: seat for pid, seat in zip(self._ids, self._seat)}
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> MetaGame:
        """Rebuilds a meta-game from `to_dict` output; ValueError if malformed."""
        if not isinstance(data, dict):
            raise ValueError("meta-game data must be a JSON object")
        version = data.get("version", FORMAT_VERSION)
        if version != FORMAT_VERSION:
            raise ValueError(f"unsupported meta-game format version {version!r}")
        policy_ids = data.get("policy_ids")
        entries = data.get("entries", [])
        seats = data.get("seats")
        if not isinstance(policy_ids, list) or not isinstance(entries, list):
            raise ValueError("meta-game data needs lists 'policy_ids' and 'entries'")
        if seats is not None and not isinstance(seats, dict):
            raise ValueError("meta-game data's 'seats' must map policy ids to 0 or 1")
        game = cls(policy_ids, seats=seats)
        for entry_data in entries:
            if not isinstance(entry_data, dict):
                raise ValueError(f"malformed payoff entry {entry_data!r}")
            try:
                game.set_entry(PayoffEntry.from_dict(entry_data))
            except UnknownPolicyError as error:
                # One exception type for every kind of bad saved data.
                raise ValueError(str(error)) from None
        return game

    def copy(self) -> "MetaGame":
        """An independent copy (stored entries are never changed in place, so they are shared)."""
        other = MetaGame()
        other._ids, other._index, other._seat = list(self._ids), dict(self._index), list(self._seat)
        other._entries = dict(self._entries)
        other._means, other._known = self._means.copy(), self._known.copy()
        return other

    def _grow(self, capacity: int) -> None:
        size = len(self._ids)
        means = np.zeros((capacity, capacity))
        known = np.zeros((capacity, capacity), dtype=bool)
        means[:size, :size] = self._means[:size, :size]
        known[:size, :size] = self._known[:size, :size]
        self._means, self._known = means, known
