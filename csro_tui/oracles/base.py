"""What every oracle receives and returns.

An oracle proposes one new policy per iteration as source code.  It gets the
current population and meta-strategy in an `OracleContext`, may ask the
engine to preview candidates (sandboxed evaluation against the population),
and returns a `Proposal` that a reviewer then accepts, edits or rejects.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Protocol

if TYPE_CHECKING:
    from csro_tui.games.base import GameSpec
    from csro_tui.policies.failures import PolicyFailure


@dataclass(frozen=True)
class PolicyRecord:
    """A member of the population (accepted code, a seed, or a benchmark)."""

    id: str
    name: str
    source: str
    origin: str  # oracle name, "seed" or "human"
    parent: str | None = None
    iteration: int = 0


@dataclass
class Proposal:
    """A candidate policy, waiting for review."""

    source: str
    oracle: str
    name: str
    parent: str | None = None  # id of the population member it was derived from
    rationale: str = ""
    # One dict per LLM call: messages, raw response, usage, latency, cost.
    llm_calls: list[dict[str, Any]] = field(default_factory=list)


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
    failure: "PolicyFailure | None" = None
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
        from scipy import stats

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


@dataclass
class OracleContext:
    spec: "GameSpec"
    iteration: int
    population: list[PolicyRecord]
    meta_strategy: list[float]  # aligned with `population`
    # Earlier attempts rejected by the reviewer in this session, newest last,
    # with the reason given; oracles feed these back to the model.
    rejections: list[tuple[Proposal, str]] = field(default_factory=list)
    # Sandboxed evaluation of candidate source against the population.
    preview: Callable[[str], Preview] | None = None
    # play_candidate(source, [(member, seed), ...], episodes) -> one outcome
    # per member (mean, failure, ...): sampled matches through the session's
    # evaluator, so on its backend (local processes or a Ray cluster).
    play_candidate: Callable[[str, list[tuple[PolicyRecord, int]], int], list[Any]] | None = None
    cancel: threading.Event = field(default_factory=threading.Event)
    seed: int = 0
    # Set, together with `cancel`, when a person asks the oracle to stop calling the LLM and
    # propose the best candidate it has so far (oracles without such a loop ignore it).
    finish: threading.Event = field(default_factory=threading.Event)


class Oracle(Protocol):
    name: str

    def propose(self, context: OracleContext) -> Proposal: ...


def repeated_rejection_note(context: OracleContext, source: str) -> str:
    """For deterministic oracles: " ..." saying this exact code was rejected before and why
    it comes again ("" when it was not), so a person does not wait for the reason to be heeded."""
    from csro_tui.text import one_line

    reasons = [reason for proposal, reason in context.rejections if proposal.source == source]
    if not reasons:
        return ""
    times = "once" if len(reasons) == 1 else f"{len(reasons)} times"
    return (
        f" This code was rejected {times} before (last reason: {one_line(reasons[-1] or '-', 120)}). "
        "This oracle is deterministic and does not read rejection reasons, so it proposes the same code "
        "again (flagged as a duplicate); another oracle (llm, human) is needed for a different proposal."
    )
