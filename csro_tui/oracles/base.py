"""What every oracle receives and returns.

An oracle proposes one new policy per iteration as source code.  It gets the
current population and meta-strategy in an `OracleContext`, may ask the
engine to preview candidates (sandboxed evaluation against the population),
and returns a `Proposal` that a reviewer then accepts, edits or rejects.

What an oracle needs from a run (a model, a policy file, nothing) is said by
its entry in `oracles.registry.ORACLES`.  An oracle that calls an LLM says so
with its `llm` attribute (`LLMUse`: the client and its calls per proposal), so
the UI can watch the calls; `oracle_llm(oracle)` reads it, None for the others.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Protocol

from csro_tui.records import PolicyRecord, Preview, Proposal

if TYPE_CHECKING:
    from csro_tui.games.base import GameSpec
    from csro_tui.oracles.llm.client import LLMBackend


@dataclass
class OracleContext:
    spec: "GameSpec"
    iteration: int
    # The members a proposal must best-respond to, and their meta-strategy.  With one
    # population: the population.  With two: the other seat's population and mixture.
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
    # Two populations: the seat the proposal will play (0 or 1), and that seat's own
    # members (parents to derive from, duplicates to avoid).  None / empty: one
    # population, the proposal plays both seats and `population` is its own.
    seat: int | None = None
    own_population: list[PolicyRecord] = field(default_factory=list)
    # Two populations, optional (the engine fills them when it can): the seat's own
    # meta-strategy (aligned with `own_population`; empty: not given), and the seat's
    # current meta-game value, the gate's bar for a proposal in this seat (seat 0: the
    # meta-game's value, seat 1: its negation; None: not given, or one population,
    # whose antisymmetric meta-game is worth 0).
    own_meta_strategy: list[float] = field(default_factory=list)
    seat_value: float | None = None
    # Set, together with `cancel`, when a person asks the oracle to stop calling the LLM and
    # propose the best candidate it has so far (oracles without such a loop ignore it).
    finish: threading.Event = field(default_factory=threading.Event)

    @property
    def own_members(self) -> list[PolicyRecord]:
        """The members a proposal joins (parents to derive from, code not to repeat): the
        seat's own population with two populations, the population with one."""
        return self.own_population if self.seat is not None else self.population

    def seat_rejections(self) -> list[tuple[Proposal, str]]:
        """The rejections that concern this proposal: with two populations those of proposals
        for the same seat (code rejected for the other seat may suit this one); all with one."""
        if self.seat is None:
            return list(self.rejections)
        return [(proposal, reason) for proposal, reason in self.rejections if proposal.seat == self.seat]

    def seat_words(self) -> str:
        """The seat in words for text ("seat 1 (second to act)"); "" with one population."""
        return seat_words(self.spec, self.seat)

    def proposal_name(self, base: str) -> str:
        """A proposal's display name: `base` ("llm-3"), with the seat appended with two
        populations ("llm-3-s1"), so the two proposals of one iteration read apart."""
        return base if self.seat is None else f"{base}-s{self.seat}"


def seat_words(spec: "GameSpec", seat: int | None) -> str:
    """"seat 1 (second to act)": the seat number, with the game's own words for that seat's
    part where the spec has them (`GameSpec.seat_roles`); "" for no seat."""
    if seat is None:
        return ""
    roles = tuple(getattr(spec, "seat_roles", ()) or ())
    return f"seat {seat} ({roles[seat]})" if seat < len(roles) and roles[seat] else f"seat {seat}"


class Oracle(Protocol):
    name: str

    def propose(self, context: OracleContext) -> Proposal: ...


@dataclass(frozen=True)
class LLMUse:
    """The LLM an oracle calls: its client, and the calls it may make per proposal (None: not bounded)."""

    client: "LLMBackend"
    budget: int | None = None


def oracle_llm(oracle: Oracle) -> LLMUse | None:
    """The oracle's declared `llm` (an `LLMUse`), or None for an oracle that calls no LLM.

    `llm` is optional in the contract, so oracles that call no model (and tests'
    stand-ins) need not declare it.
    """
    use = getattr(oracle, "llm", None)
    return use if isinstance(use, LLMUse) else None


def repeated_rejection_note(context: OracleContext, source: str) -> str:
    """For deterministic oracles: " ..." saying this exact code was rejected before and why
    it comes again ("" when it was not), so a person does not wait for the reason to be heeded."""
    from csro_tui.text import one_line  # start-up time: importing it loads rich

    reasons = [reason for proposal, reason in context.seat_rejections() if proposal.source == source]
    if not reasons:
        return ""
    times = "once" if len(reasons) == 1 else f"{len(reasons)} times"
    return (
        f" This code was rejected {times} before (last reason: {one_line(reasons[-1] or '-', 120)}). "
        "This oracle is deterministic and does not read rejection reasons, so it proposes the same code "
        "again (flagged as a duplicate); another oracle (llm, human) is needed for a different proposal."
    )
