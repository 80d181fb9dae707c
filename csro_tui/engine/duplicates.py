"""Is a proposal something the session has already seen?

Two kinds of sameness, tried in this order:

- **same code**: the module's AST once docstrings are stripped (comments
  and formatting never reach the AST), compared as `ast.dump` text; a model
  that copies a seed and rewrites its docstring is caught here;
- **same behaviour**: in exact games the tabularised policy (an action
  distribution per information state, both seats) is identical; in sampled
  games the candidate's payoff row equals the other policy's within noise
  (99%, Student's t for the episodes played; and it ties that policy
  itself), over enough opponents to tell policies apart.

What the candidate is compared with (`KnownPolicy`) is every population
member and the session's rejected proposals, newest first (for code only,
those that failed: they have no behaviour to compare).  Nothing here
runs policy code: tables come from the evaluator (the sandbox), rows from
recorded payoffs.
"""

from __future__ import annotations

import ast
import functools
import math
from dataclasses import dataclass, field
from typing import Callable, Mapping, Sequence

import numpy as np

from csro_tui.same_code import normalized_code

# Two payoffs are "equal within noise" when they differ by at most this many
# standard errors of their difference (plus a tiny absolute slack), when the
# standard errors are known well; from few episodes they are estimates
# themselves, so the bound is Student's t at the same level (99%, two-sided)
# for the fewer episodes' degrees of freedom.
DUPLICATE_Z = 2.576
_T_99 = {1: 63.657, 2: 9.925, 3: 5.841, 4: 4.604, 5: 4.032, 6: 3.707, 7: 3.499, 8: 3.355, 9: 3.250,
         10: 3.169, 12: 3.055, 15: 2.947, 20: 2.845, 30: 2.750, 60: 2.660}
_ABSOLUTE_SLACK = 1e-9
# A behaviour comparison needs this many shared opponents, at least one of
# them with a payoff distinguishable from zero: against a single uniform-random
# member every policy scores ~0, which says nothing about sameness.
MIN_SHARED_OPPONENTS = 2
# Exact tables equal up to rounding.
TABLE_TOLERANCE = 1e-6


@dataclass(frozen=True)
class KnownPolicy:
    """A member or an earlier rejected proposal, as the duplicate check sees it."""

    id: str  # member id ("p3") or proposal id ("i2.1")
    label: str  # how a person or the model reads it: "member beat_last (p3)"
    source: str
    # Payoff row of this policy against members: id -> (mean, standard error)
    # or (mean, standard error, episodes); no episodes: the error is exact.
    row: Mapping[str, tuple] = field(default_factory=dict)
    is_member: bool = True
    # False for a rejected proposal that failed (validation, smoke or preview):
    # its code can be repeated, its behaviour cannot be compared (it has none).
    behaviour_known: bool = True


@dataclass(frozen=True)
class Duplicate:
    """What a candidate repeats and how."""

    of: str  # KnownPolicy.id
    label: str
    reason: str  # "same code as member beat_last (p3) (ignoring docstrings, comments and formatting)"


def unparsed_text(source: str) -> str:
    """Source that does not parse, compared as text: trailing spaces and blank lines dropped."""
    return "\n".join(line.rstrip() for line in source.splitlines() if line.strip())


def critical_value(episodes: int | None) -> float:
    """The 99% two-sided bound in standard errors for an estimate from `episodes` episodes.

    Episodes come in seat-swapped pairs that share a seed, and in symmetric
    games (RRPS) the two halves of a pair can return the same value: only
    half the episodes count as independent, so the degrees of freedom are
    episodes / 2 - 1 (at least 1).  Conservative: fewer duplicates found,
    never more.
    """
    if not episodes:
        return DUPLICATE_Z
    dof = max(1, episodes // 2 - 1)
    fitting = [value for limit, value in sorted(_T_99.items()) if limit <= dof]
    return fitting[-1] if dof <= 60 else DUPLICATE_Z


def equal_within_noise(a: float, se_a: float, b: float, se_b: float, z: float = DUPLICATE_Z) -> bool:
    if any(math.isnan(x) for x in (a, b)):
        return False
    spread = math.sqrt(max(se_a, 0.0) ** 2 + max(se_b, 0.0) ** 2)
    return abs(a - b) <= z * spread + _ABSOLUTE_SLACK


def _entry(value: tuple) -> tuple[float, float, int | None]:
    mean, se = float(value[0]), float(value[1])
    episodes = int(value[2]) if len(value) > 2 and value[2] else None
    return mean, se, episodes


def _z(*episodes: int | None) -> float:
    """The bound for comparing estimates: the fewest episodes' t value (exact ones do not count)."""
    known = [n for n in episodes if n]
    return critical_value(min(known)) if known else DUPLICATE_Z


def same_payoff_row(candidate_row: Mapping[str, tuple], known: KnownPolicy) -> bool:
    """The candidate's payoffs match `known`'s within noise, over enough informative opponents.

    Row entries are (mean, standard error[, episodes]).  When `known` is a
    member the candidate also played, that payoff must tie (a policy
    against a copy of itself, seats averaged, scores 0 in expectation).
    """
    if known.is_member and known.id in candidate_row:
        mean, se, episodes = _entry(candidate_row[known.id])
        if not equal_within_noise(mean, se, 0.0, 0.0, _z(episodes)):
            return False
    shared = [pid for pid in candidate_row if pid in known.row and pid != known.id]
    if len(shared) < MIN_SHARED_OPPONENTS:
        return False
    informative = False
    for pid in shared:
        mean, se, episodes = _entry(candidate_row[pid])
        other, other_se, other_episodes = _entry(known.row[pid])
        if not equal_within_noise(mean, se, other, other_se, _z(episodes, other_episodes)):
            return False
        if not equal_within_noise(mean, se, 0.0, 0.0, _z(episodes)):
            informative = True
    return informative


def find_duplicate(
    source: str,
    known: Sequence[KnownPolicy],
    *,
    table_of: Callable[[str], np.ndarray | None] | None = None,
    candidate_row: Mapping[str, tuple] | None = None,
) -> Duplicate | None:
    """The first known policy the candidate repeats, or None.

    `table_of(source)` gives a policy's table in exact games (None where it
    cannot be had); `candidate_row` the candidate's payoffs against members
    in sampled games.  Code is compared first (cheapest, and the clearest
    reason to show).
    """
    normalized = normalized_code(source)
    # code that does not parse has no AST: compared as text, line ends and blank lines aside
    text = unparsed_text(source) if normalized is None else None
    for item in known:
        theirs = normalized_code(item.source)
        if normalized is not None and theirs == normalized:
            return Duplicate(item.id, item.label,
                             f"same code as {item.label} (ignoring docstrings, comments and formatting)")
        if text is not None and theirs is None and unparsed_text(item.source) == text:
            return Duplicate(item.id, item.label,
                             f"same code as {item.label} (the same text, which does not parse)")
    known = [item for item in known if item.behaviour_known]
    if table_of is not None:
        mine = table_of(source)
        if mine is not None:
            for item in known:
                theirs = table_of(item.source)
                if theirs is not None and theirs.shape == mine.shape and np.allclose(mine, theirs, atol=TABLE_TOLERANCE):
                    return Duplicate(item.id, item.label,
                                     f"same behaviour as {item.label}: the same action probabilities "
                                     "in every information state")
    if candidate_row:
        for item in known:
            if same_payoff_row(candidate_row, item):
                return Duplicate(item.id, item.label,
                                 f"same behaviour as {item.label}: the same payoffs against every "
                                 "member within noise")
    return None
