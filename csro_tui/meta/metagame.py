"""The empirical meta-game of one population: an incremental payoff matrix.

CSRO keeps one population whose policies play either seat, and evaluates
every matchup in both seats, so the meta-game is one square matrix with
M[i][j] = mean return of policy i against policy j averaged over seats.  The
game is zero-sum, so M[j][i] = -M[i][j], and self-play averaged over seats is
0: the diagonal is never evaluated.  Adding the n-th policy therefore asks for
only the n-1 pairs it forms with the earlier ones, and setting one entry also
sets its mirror.
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
    """Payoff entries between the policies of one population, added one by one.

    Means are also kept in a growing numpy array (capacity doubles), so
    adding a policy costs O(n) amortised and `matrix()` is one copy.
    """

    def __init__(self, policy_ids: Iterable[str] = ()) -> None:
        self._ids: list[str] = []
        self._index: dict[str, int] = {}
        self._entries: dict[tuple[int, int], PayoffEntry] = {}
        self._means = np.zeros((0, 0))
        self._known = np.zeros((0, 0), dtype=bool)
        for policy_id in policy_ids:
            self.add_policy(policy_id)

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

    def add_policy(self, policy_id: str) -> list[tuple[str, str]]:
        """Adds a policy; returns the (new, existing) pairs it needs evaluated."""
        if not isinstance(policy_id, str) or not policy_id:
            raise ValueError(f"a policy id must be a non-empty string, got {policy_id!r}")
        if policy_id in self._index:
            raise ValueError(f"policy id {policy_id!r} is already in the meta-game")
        size = len(self._ids)
        if size == self._means.shape[0]:
            self._grow(max(8, 2 * size))
        self._index[policy_id] = size
        self._ids.append(policy_id)
        self._known[size, size] = True  # the diagonal is 0 by symmetry
        return [(policy_id, other) for other in self._ids[:size]]

    def missing_pairs(self) -> list[tuple[str, str]]:
        """Pairs without an entry, as (later-added, earlier-added) ids."""
        size = len(self._ids)
        later, earlier = np.nonzero(np.tril(~self._known[:size, :size]))
        return [(self._ids[i], self._ids[j]) for i, j in zip(later, earlier)]

    def is_complete(self) -> bool:
        """True when every pair has an entry, so `matrix()` will succeed."""
        size = len(self._ids)
        return bool(self._known[:size, :size].all())

    def set_entry(self, entry: PayoffEntry) -> None:
        """Records (or replaces) an entry and its mirror (col vs row, -mean)."""
        row, col = self.index(entry.row), self.index(entry.col)
        if row == col:
            raise ValueError(
                f"{entry.row!r} against itself is 0 by symmetry and is never set"
            )
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
        if row_index == col_index:
            return PayoffEntry(row=row, col=col, mean=0.0, exact=True)
        stored = self._entries.get((row_index, col_index))
        return None if stored is None else _copy(stored)

    def matrix(self) -> np.ndarray:
        """The n x n antisymmetric payoff matrix in `policy_ids` order."""
        missing = self.missing_pairs()
        if missing:
            total = len(self._ids) * (len(self._ids) - 1) // 2
            row, col = missing[0]
            raise IncompleteMetaGameError(
                f"the meta-game lacks {len(missing)} of {total} payoff entries "
                f"(first: {row!r} vs {col!r})"
            )
        size = len(self._ids)
        return self._means[:size, :size].copy()

    def partial_matrix(self) -> np.ndarray:
        """Like `matrix()`, with NaN where a pair is not evaluated yet (for
        showing a meta-game while its new entries are being evaluated)."""
        size = len(self._ids)
        known = self._known[:size, :size]
        return np.where(known, self._means[:size, :size], np.nan)

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable state: ids and one entry per evaluated pair."""
        entries = [
            stored.to_dict()
            for (row, col), stored in sorted(self._entries.items())
            if row > col
        ]
        return {
            "version": FORMAT_VERSION,
            "policy_ids": list(self._ids),
            "entries": entries,
        }

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
        if not isinstance(policy_ids, list) or not isinstance(entries, list):
            raise ValueError("meta-game data needs lists 'policy_ids' and 'entries'")
        game = cls(policy_ids)
        for entry_data in entries:
            if not isinstance(entry_data, dict):
                raise ValueError(f"malformed payoff entry {entry_data!r}")
            try:
                game.set_entry(PayoffEntry.from_dict(entry_data))
            except UnknownPolicyError as error:
                # One exception type for every kind of bad saved data.
                raise ValueError(str(error)) from None
        return game

    def _grow(self, capacity: int) -> None:
        size = len(self._ids)
        means = np.zeros((capacity, capacity))
        known = np.zeros((capacity, capacity), dtype=bool)
        means[:size, :size] = self._means[:size, :size]
        known[:size, :size] = self._known[:size, :size]
        self._means, self._known = means, known
