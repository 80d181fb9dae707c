"""The records the layers exchange, in one place that imports nothing of the project.

A proposal goes from an oracle through the engine's gate to a reviewer and into
the session log; the same few records travel the whole way, so they live here
rather than in any one of those layers (which would make the others import it
backwards):

- `PolicyRecord`: a member of the population; `Proposal`: a candidate as code.
- `ValidationResult`: static issues and the sandboxed smoke match.
- `Preview`: the candidate against the population, and the acceptance rule
  (`Preview.shortfall`, the auto reviewer's and the LLM oracles' aim).
- `ReviewRequest` (with `ProposalVersion`s of an edited proposal) and `Decision`.
- `MatchJob` / `Bot`: one matchup the engine asks its evaluator for.

`PolicyFailure` (why a policy failed) is named only for type checking: it is
the sandbox's record and imports nothing either.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from csro_tui.sandbox.failures import PolicyFailure


@dataclass(frozen=True)
class PolicyRecord:
    """A member of the population (accepted code, a seed, or a benchmark)."""

    id: str
    name: str
    source: str
    origin: str  # oracle name, "seed" or "human"
    parent: str | None = None
    iteration: int = 0
    # The seat this member plays with two populations (0 or 1); None: one
    # population, the member plays both seats.
    seat: int | None = None


@dataclass
class Proposal:
    """A candidate policy, waiting for review."""

    source: str
    oracle: str
    name: str
    parent: str | None = None  # id of the population member it was derived from
    rationale: str = ""
    # Two populations: the seat it is proposed for (0 or 1); None: one population.
    seat: int | None = None
    # One dict per LLM call: messages, raw response, usage, latency, cost.
    llm_calls: list[dict[str, Any]] = field(default_factory=list)
    # Set when the oracle found nothing that works and hands over its last failed
    # code for a person to fix: why it failed ("" for an ordinary proposal).
    failure: str = ""


# Standard errors the expected payoff must clear a threshold by (sampled games).
IMPROVEMENT_Z = 2.0
# Exact payoffs equal to the threshold up to rounding are not improvements.
_EXACT_SLACK = 1e-9


@dataclass
class Preview:
    """How a candidate fares against the current population."""

    expected_payoff: float  # against the current meta-strategy
    per_member: dict[str, float]  # policy id -> mean payoff against it
    population_metrics: dict[str, float] | None = None  # PopReturn/PopExpl/AggScore
    failure: PolicyFailure | None = None
    # Set when the candidate repeats a member or an earlier rejected proposal:
    # the id it duplicates and how ("same code", "same behaviour", ...).
    duplicate_of: str | None = None
    duplicate_reason: str = ""
    # Standard errors where payoffs are sampled (empty / 0 when exact):
    # per member, and of `expected_payoff` (the weights applied to them).
    stderr: dict[str, float] = field(default_factory=dict)
    expected_stderr: float = 0.0
    # Seat-swapped pairs of episodes per member behind `stderr` (sampled games); 0 when
    # exact or not known (older logs).
    pairs: int = 0

    def standard_errors(self, z: float = IMPROVEMENT_Z) -> float:
        """How many standard errors the margin is: `z`, or Student's t at the same one-sided
        level where the standard error comes from few pairs (with five, z = 2 would let ~6%
        of policies no better than the meta-strategy through instead of ~2.3%)."""
        if self.pairs < 2:
            return z
        from scipy import stats  # late: start-up time (scipy only for sampled previews)

        return float(stats.t.ppf(stats.norm.cdf(z), self.pairs - 1))

    def improvement_margin(self, z: float = IMPROVEMENT_Z) -> float:
        """How far above a threshold the expected payoff must be to count as better (noise)."""
        return self.standard_errors(z) * self.expected_stderr if self.expected_stderr > 0 else 0.0

    def shortfall(self, threshold: float = 0.0, z: float = IMPROVEMENT_Z) -> str | None:
        """Why this candidate is not an improvement on the meta-strategy, or None if it is.

        The gate's rule (`--review auto`, and what the LLM oracles aim for):
        it ran, it repeats nothing known, and its expected payoff against
        the meta-strategy is above `threshold` by more than the noise margin.
        """
        if self.failure is not None:
            return self.failure.summary()
        if self.duplicate_of is not None:
            return f"duplicate: {self.duplicate_reason or 'repeats ' + self.duplicate_of}"
        value = self.expected_payoff
        if value is None or value != value:
            return "no payoff against the meta-strategy could be measured"
        if self.pairs == 1:  # sampled on one seat-swapped pair: its noise is unknown, so no margin can be cleared
            return (f"no improvement shown: expected payoff {value:+.3f} against the meta-strategy was measured on "
                    "one seat-swapped pair per member, which cannot measure its own noise "
                    "(--preview-episodes 4 or more)")
        margin = self.improvement_margin(z)
        if value > threshold + margin + _EXACT_SLACK:
            return None
        noise = f" + noise margin {margin:.3f} ({self.standard_errors(z):.3g} standard errors)" if margin > 0 else ""
        return (f"no improvement: expected payoff {value:+.3f} against the meta-strategy "
                f"does not beat {threshold:+.3f}{noise}")


Action = Literal["accept", "edit", "reject"]
ACTIONS: tuple[str, ...] = ("accept", "edit", "reject")


@dataclass(frozen=True)
class ValidationResult:
    """Static issues, then a sandboxed smoke match against every member."""

    valid: bool
    issues: list[dict[str, Any]] = field(default_factory=list)  # line, col, message
    failure: PolicyFailure | None = None  # set when the smoke run failed
    smoke: dict[str, float] = field(default_factory=dict)  # member id -> mean payoff
    smoke_episodes: int = 0
    smoke_stderr: dict[str, float] = field(default_factory=dict)  # member id -> standard error (sampled)
    # Invalid code that repeats a known policy's code (a rejected proposal, say): the gate's reason.
    duplicate_of: str | None = None
    duplicate_reason: str = ""
    # How long the candidate's calls took in the smoke run (clock.describe_timing), "" when not measured.
    timing: str = ""
    # What the candidate printed in the smoke run, discarded (clock.describe_printed), "" when nothing.
    printed: str = ""

    def summary(self) -> str:
        """One line: why the code is invalid, or "valid"."""
        if self.issues:
            first = self.issues[0]
            more = f" (+{len(self.issues) - 1} more)" if len(self.issues) > 1 else ""
            return f"invalid: line {first.get('line', '?')}: {first.get('message', '')}{more}"
        if self.failure is not None:
            return self.failure.summary()
        return "valid"


@dataclass(frozen=True)
class ProposalVersion:
    """One version of a proposal's code: the oracle's, or a reviewer's edit of the one before."""

    proposal_id: str
    source: str
    edited_by: str | None = None  # None: the oracle's own proposal
    expected_payoff: float | None = None  # its preview against the meta-strategy, measured for this code


@dataclass
class ReviewRequest:
    """Everything a reviewer needs to judge one proposal."""

    proposal_id: str
    proposal: Proposal
    iteration: int
    attempt: int
    validation: ValidationResult
    preview: Preview | None  # None when validation failed
    parent_source: str | None = None  # for a diff; None if the proposal has no parent
    population: list[PolicyRecord] = field(default_factory=list)
    meta_strategy: dict[str, float] = field(default_factory=dict)
    # Set when the engine was asked to stop; a blocking reviewer should return.
    cancel: threading.Event = field(default_factory=threading.Event)
    # Earlier versions of this proposal when it is a reviewer's edit, the
    # oracle's original first (empty for an unedited proposal).
    history: list[ProposalVersion] = field(default_factory=list)
    edited_by: str | None = None  # who made this proposal by editing the last of `history`
    max_attempts: int = 0  # oracle attempts per iteration (a rejection uses one up); 0: unknown
    # Two populations: the value of the proposal's seat in the meta-game (seat 0: the solver's
    # value, seat 1: its negation), which its expected payoff must beat; None: one population.
    seat_value: float | None = None
    # One line naming the sandbox limits the run raised above their defaults ("" when none):
    # the proposal was validated and previewed under them (issue 35).
    loosened_limits: str = ""
    # A reviewer that reads while the preview runs (`progressive`, the TUI's) gets the
    # request as soon as validation passes: `preview` is then None and this holds the
    # figures so far (`engine.gate.LivePreview`), refined until the preview ends.
    live_preview: Any = None


@dataclass(frozen=True)
class Decision:
    action: Action
    source: str | None = None  # the edited code, for "edit"
    reason: str = ""  # why, for "reject" (and optionally the others)

    def __post_init__(self) -> None:
        if self.action not in ACTIONS:
            raise ValueError(f"unknown decision {self.action!r}; use one of {', '.join(ACTIONS)}")
        if self.action == "edit" and not self.source:
            raise ValueError("an edit decision needs the edited source")

    @classmethod
    def accept(cls, reason: str = "") -> "Decision":
        return cls("accept", reason=reason)

    @classmethod
    def edit(cls, source: str, reason: str = "") -> "Decision":
        return cls("edit", source=source, reason=reason)

    @classmethod
    def reject(cls, reason: str) -> "Decision":
        return cls("reject", reason=reason)


@dataclass(frozen=True)
class Bot:
    """A benchmark bot of the game, by name."""

    name: str


@dataclass(frozen=True)
class MatchJob:
    """One matchup to evaluate: a's return against b, seats swapped (or a in one seat)."""

    a: PolicyRecord
    b: PolicyRecord | Bot
    seed: int
    episodes: int = 0  # sampled matches; exact ones ignore it
    exact: bool = False
    # None: every episode is played in both seats and the returns averaged; 0 or 1:
    # a plays only this seat and b the other (two populations: seat-fixed episodes).
    seat: int | None = None
