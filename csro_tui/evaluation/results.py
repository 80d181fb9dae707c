"""The outcome of one matchup, sampled or exact."""

from __future__ import annotations

from dataclasses import dataclass, field

from csro_tui.sandbox.failures import PolicyFailure

# A standard error is the spread of seat-swapped pairs' means, so it needs two
# pairs (four episodes); one pair cannot measure its own noise (issue 27).
# Seat-fixed results have no pairs: two episodes.
MIN_PAIRS_FOR_STDERR = 2


@dataclass
class MatchResult:
    """Participant a's return against b, averaged over both seats (`seat`
    None), or in seat `seat` only with b in the other (a seat-fixed match).

    For a sampled match `returns[i]` is a's return in episode i and `seeds[i]`
    the seed that episode was played from; `stderr` is the standard error of
    `mean`, over seat-swapped pairs, or over episodes when seat-fixed.  An
    exact result has `exact=True`, `stderr=0` and no episodes.
    When `failure` is set a code policy failed: the numbers cover only the
    episodes finished before that and must not be used as a payoff.
    """

    a: str
    b: str
    mean: float
    stderr: float
    episodes: int
    seeds: list[int] = field(default_factory=list)
    returns: list[float] = field(default_factory=list)
    exact: bool = False
    failure: PolicyFailure | None = None
    # How long a's calls took, as its host measured them (clock.CallTiming.to_dict,
    # over every match that host served); None for bots and exact results.
    timing: dict | None = None
    # None: seats swapped and averaged; 0 or 1: a played only this seat.
    seat: int | None = None

    @property
    def ok(self) -> bool:
        return self.failure is None

    @property
    def pairs(self) -> int:
        """Seat-swapped pairs of episodes behind a sampled result (0 when exact or seat-fixed)."""
        return 0 if self.exact or self.seat is not None else self.episodes // 2

    @property
    def samples(self) -> int:
        """Independent samples behind `stderr`: seat-swapped pairs, or episodes
        when seat-fixed (each has its own seed); 0 when exact."""
        if self.exact:
            return 0
        return self.episodes if self.seat is not None else self.pairs

    @property
    def stderr_measurable(self) -> bool:
        """False for a sampled result of fewer than two samples (`samples`): its `stderr` says nothing."""
        return self.exact or self.samples >= MIN_PAIRS_FOR_STDERR

    def to_dict(self, timing: bool = False) -> dict:
        """The result as JSON data; with `timing`, also how long a's calls took
        (a measurement, not part of the result: only for carrying it between
        processes, never into a session log or a report's results)."""
        data = {
            "a": self.a,
            "b": self.b,
            "mean": self.mean,
            "stderr": self.stderr,
            "episodes": self.episodes,
            "seeds": list(self.seeds),
            "returns": list(self.returns),
            "exact": self.exact,
            "failure": self.failure.to_dict() if self.failure else None,
        }
        if self.seat is not None:  # seat-swapped results keep their old shape
            data["seat"] = self.seat
        if timing and self.timing is not None:
            data["timing"] = dict(self.timing)
        return data

    @classmethod
    def from_dict(cls, data: dict) -> "MatchResult":
        failure = data.get("failure")
        return cls(
            a=data["a"],
            b=data["b"],
            mean=float(data["mean"]),
            stderr=float(data["stderr"]),
            episodes=int(data["episodes"]),
            seeds=[int(seed) for seed in data.get("seeds", [])],
            returns=[float(value) for value in data.get("returns", [])],
            exact=bool(data.get("exact", False)),
            failure=PolicyFailure.from_dict(failure) if failure else None,
            timing=dict(data["timing"]) if isinstance(data.get("timing"), dict) else None,
            seat=None if data.get("seat") is None else int(data["seat"]),
        )
