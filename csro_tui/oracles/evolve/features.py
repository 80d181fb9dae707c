"""Behaviour descriptors: where a program sits in the MAP-Elites grid.

Two features, both computed from what the search already has - the
program's source and its preview (mean payoff against each population
member) - so placing a program costs nothing extra and runs no code:

- `exploited`: the index, in population order, of the member the program
  earns the most against (ties: the earlier member; -1 when nothing was
  measured).  Programs that exploit different opponents land in different
  cells, so a specialist against a low-weight member survives next to the
  best all-rounder: the diversity a growing population needs.
- `size`: the source length in bins of doubling size (up to 512 characters,
  1k, 2k, 4k, more), so a small program is not crowded out by a longer one
  that scores a little better.

For RRPS, say, with a population of constant rock, a cycler and a
frequency counter, a program that beats rock hardest goes to column 0, one
that beats the cycler to column 1; inside a column, short and long programs
keep separate elites.
"""

from __future__ import annotations

from typing import Mapping, Sequence

# Upper edges of the size bins, in characters of source.
SIZE_BIN_EDGES = (512, 1024, 2048, 4096)

Features = tuple[int, int]


def size_bin(source: str) -> int:
    """0 for up to 512 characters, then one more per doubling, 4 beyond 4096."""
    length = len(source)
    return next((index for index, edge in enumerate(SIZE_BIN_EDGES) if length <= edge), len(SIZE_BIN_EDGES))


def exploited_member(per_member: Mapping[str, float], member_ids: Sequence[str]) -> int:
    """Index of the member with the highest payoff (earlier wins ties); -1 if none measured."""
    best_index, best_value = -1, float("-inf")
    for index, member in enumerate(member_ids):
        value = per_member.get(member)
        if value is None or value != value:
            continue
        if value > best_value:
            best_index, best_value = index, value
    return best_index


def behaviour_features(source: str, per_member: Mapping[str, float], member_ids: Sequence[str]) -> Features:
    """(exploited member, size bin): the program's cell in an island's grid."""
    return exploited_member(per_member, member_ids), size_bin(source)


def describe_features(features: Features, member_names: Sequence[str]) -> str:
    """Readable form of a cell, e.g. "beats constant_rock most, size ≤512"."""
    exploited, size = features
    who = member_names[exploited] if 0 <= exploited < len(member_names) else "nobody measured"
    edges = SIZE_BIN_EDGES
    bound = f"≤{edges[size]}" if size < len(edges) else f">{edges[-1]}"
    return f"beats {who} most, size {bound}"
