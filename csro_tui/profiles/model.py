"""The behaviour profile of one policy, as data (recorded in sessions, printed as JSON)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from functools import cached_property
from typing import Any

EXACT = "exact"  # action probabilities in every information state, from the policy's table
PROBES = "probes"  # matches against the game's fixed probe opponents
SAMPLED = "sampled"  # moves and outcomes against the benchmark population


@dataclass
class SituationRow:
    """One decision: where (named as a player would), how often it is reached, what the policy does."""

    group: str
    label: str
    # exact games: the seat (0 or 1); played: the profile's seat, None (both seats pooled)
    seat: int | None
    distribution: dict[str, float]  # move word -> probability (words from the game's Situation)
    weight: float  # exact: probability of reaching it under the uniform opponent; sampled: visits
    key: str = ""  # exact: the information state; identifies the row across profiles
    opponent_reach: float = 0.0  # exact: chance x uniform opponent reach (the policy's own part aside)

    @property
    def name(self) -> str:
        where = f"{self.group}, {self.label}" if self.group else self.label
        return where if self.seat is None else f"{where} (seat {self.seat})"


def merged_by_name(rows: list[SituationRow]) -> list[SituationRow]:
    """Rows that share a name, as one row each (first-seen order): information states a
    player cannot tell apart (Leduc's suits, which no observation shows) are one
    situation to a person (`merged_row`)."""
    groups: dict[str, list[SituationRow]] = {}
    for row in rows:
        groups.setdefault(row.name, []).append(row)
    return [merged_row(same) for same in groups.values()]


def merged_row(same: list[SituationRow]) -> SituationRow:
    """Rows of one situation as one: weights add up; the distribution is the
    reach-weighted mean (the plain mean where none is reached)."""
    if len(same) == 1:
        return same[0]
    weights = [row.weight for row in same]
    if sum(weights) <= 0:
        weights = [1.0] * len(same)
    total = sum(weights)
    moves = list(dict.fromkeys(move for row in same for move in row.distribution))
    distribution = {move: sum(w * row.distribution.get(move, 0.0) for w, row in zip(weights, same)) / total
                    for move in moves}
    first = same[0]
    return SituationRow(first.group, first.label, first.seat, distribution, sum(row.weight for row in same),
                        "|".join(row.key for row in same if row.key), sum(row.opponent_reach for row in same))


@dataclass
class ProbeRow:
    """A match against one fixed opponent (or benchmark bot), from the policy's side."""

    name: str
    description: str
    mean: float | None  # mean return per episode, seats swapped; None when it failed before any
    stderr: float | None
    thirds: list[float] = field(default_factory=list)  # first, middle, last third of the match
    # The standard error of (last third - first third) over the episodes, seats swapped in
    # pairs as `stderr`: whether it changes as the match goes on is said only beyond it.
    trend_stderr: float | None = None
    # Repeated games: the move after which the running total never fell again (the
    # latest over the episodes; 0: it never fell), and the moves per episode.
    stops_falling_after: int | None = None
    moves: int = 0
    episodes: int = 0
    failure: str | None = None  # the policy crashed or timed out against this opponent


@dataclass
class FrequencyRow:
    """How often a repeated game's policy makes each move, overall or under one condition
    (RRPS: after its own or the opponent's last throw), with the standard error of each
    frequency (from the per-throw answers, taken as independent)."""

    condition: str  # "all throws", "after its own Rock", "after the opponent's Paper", ...
    throws: int
    distribution: dict[str, float]  # move word -> frequency
    stderr: dict[str, float]  # move word -> standard error of the frequency


@dataclass
class Profile:
    game: str
    policy: str
    source_hash: str
    kind: str  # EXACT, PROBES or SAMPLED
    seed: int | None = None  # sampled kinds: the seed that reproduces it
    situations: list[SituationRow] = field(default_factory=list)
    probes: list[ProbeRow] = field(default_factory=list)
    payoff_scale: float = 1.0  # the largest return one episode can have (distance units)
    failure: str | None = None  # exact: the table could not be built
    # Code that never ran while profiled ({line, message} hints; profiles/coverage.py);
    # None: not measured (exact games measure it when asked, or it could not be).
    never_ran: list[dict[str, Any]] | None = None
    # Played kinds: the one seat it played (a member of one seat's population, two
    # populations); None: both seats, swapped in pairs.  Exact profiles: always None.
    seat: int | None = None
    # Repeated games whose moves say something alone (RRPS): move frequencies, overall and
    # after each last throw (issue 36); empty for the other games and older records.
    frequencies: list[FrequencyRow] = field(default_factory=list)

    @cached_property
    def row_names(self) -> list[str]:
        """Each situation row's name, in row order (computed once: comparisons ask often)."""
        return [row.name for row in self.situations]

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        if data["seat"] is None:  # one population: the record stays as before seats
            del data["seat"]
        if not data["frequencies"]:  # other games: the record stays as before frequencies
            del data["frequencies"]
        return data

    def to_record(self) -> dict[str, Any]:
        """The form recorded in a session: without the information-state strings (rows
        stay in the game's table order, which is how recorded exact profiles align)."""
        data = self.to_dict()
        for row in data["situations"]:
            row["key"] = ""
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Profile":
        data = dict(data)
        data["situations"] = [SituationRow(**row) for row in data.get("situations", [])]
        data["probes"] = [ProbeRow(**row) for row in data.get("probes", [])]
        data["frequencies"] = [FrequencyRow(**row) for row in data.get("frequencies", [])]  # absent before issue 36
        return cls(**data)
