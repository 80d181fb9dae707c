"""What the searching oracles share about candidates and the population.

- `SerialPreview`: `context.preview` behind a lock and a cache, so
  concurrent searches never run two sandboxed evaluations at once and the
  same code is evaluated once per proposal;
- `preview_score`, `failure_text`, `score_text`: a preview as a number or a line;
- `ranked_members`, `member_weights`, `member_names`: the population by
  meta-strategy weight, as searches and prompts want it; `ranked_own_members`:
  the members a proposal may derive from (its seat's, with two populations);
- `NoUsableCandidate`: a search spent its budget without a policy to propose
  (`failed_proposal`: its last failed code, handed over for review);
  `attach_calls` gives an error the LLM calls made before it (recorded by the engine).
"""

from __future__ import annotations

import hashlib
import threading
from typing import Any, Sequence

from csro_tui.errors import CsroError, NoUsableProposal
from csro_tui.oracles.base import OracleContext
from csro_tui.records import PolicyRecord, Preview, Proposal


class NoUsableCandidate(NoUsableProposal):
    """An LLM oracle spent its budget without getting a policy it could propose."""


def failed_proposal(context: OracleContext, oracle: str, name: str, failed: tuple[str, str] | None,
                    summary: str, calls: Sequence[dict[str, Any]]) -> Proposal | None:
    """The oracle's last failed code, `failed` = (code, why it failed), as a proposal for a
    person to review and fix (`NoUsableProposal.failed`); None when it has no code to show."""
    if failed is None or not failed[0].strip():
        return None
    source, reason = failed
    rationale = (f"No usable policy: {summary}\n\nThis is the last failed code, shown so that it can be "
                 f"fixed: it failed with {reason}. Edit it (e) to fix it, or reject it (r).")
    return Proposal(source=source, oracle=oracle, name=context.proposal_name(name), rationale=rationale,
                    seat=context.seat, llm_calls=list(calls), failure=reason)


def attach_calls(error: BaseException, calls: Sequence[dict[str, Any]]) -> BaseException:
    """Give an error the calls made before it, so the engine can record them."""
    error.llm_calls = list(calls)  # type: ignore[attr-defined]
    return error


class SerialPreview:
    """`context.preview` one at a time, each distinct source once.

    Within one proposal every preview uses the same evaluation seeds (the
    engine keys them by iteration and attempt), so the result for a given
    source does not change and caching it is exact.
    """

    def __init__(self, context: OracleContext) -> None:
        if context.preview is None:
            raise CsroError("this oracle needs the engine's preview (sandboxed evaluation) to rank candidates")
        self._preview = context.preview
        self._lock = threading.Lock()
        self._cache: dict[str, Preview] = {}
        self.evaluations = 0

    def __call__(self, source: str) -> Preview:
        key = source_hash(source)
        with self._lock:
            if key not in self._cache:
                self._cache[key] = self._preview(source)
                self.evaluations += 1
            return self._cache[key]


def preview_score(preview: Preview) -> float | None:
    """The expected payoff, or None when the candidate failed or could not be measured."""
    if preview.failure is not None:
        return None
    value = preview.expected_payoff
    return None if value is None or value != value else float(value)


def failure_text(preview: Preview) -> str:
    """One line about a failed preview."""
    if preview.failure is not None:
        return preview.failure.summary()
    return "no payoff could be measured"


def source_hash(source: str) -> str:
    return hashlib.sha256(source.encode("utf-8")).hexdigest()


def ranked_members(context: OracleContext) -> list[tuple[PolicyRecord, float]]:
    """Population members with their meta-strategy weight, heaviest first (ties: population order)."""
    weights = list(context.meta_strategy) + [0.0] * (len(context.population) - len(context.meta_strategy))
    order = sorted(range(len(context.population)), key=lambda i: (-weights[i], i))
    return [(context.population[i], float(weights[i])) for i in order]


def ranked_own_members(context: OracleContext) -> list[tuple[PolicyRecord, float]]:
    """The members a proposal may derive from, heaviest first: with one population the
    population (`ranked_members`); with two the seat's own members by its own meta-strategy,
    or newest first with weight 0 when the engine gives no weights for them."""
    if context.seat is None:
        return ranked_members(context)
    own = context.own_population
    if len(context.own_meta_strategy) == len(own) and own:
        order = sorted(range(len(own)), key=lambda i: (-context.own_meta_strategy[i], i))
        return [(own[i], float(context.own_meta_strategy[i])) for i in order]
    return [(member, 0.0) for member in reversed(own)]


def member_weights(context: OracleContext) -> dict[str, float]:
    """Policy id -> meta-strategy weight."""
    return {m.id: float(w) for m, w in zip(context.population, context.meta_strategy)}


def member_names(context: OracleContext) -> dict[str, str]:
    """Policy id -> "name (id)", for feedback the model reads."""
    return {m.id: f"{m.name} ({m.id})" for m in context.population}


def score_text(score: float | None) -> str:
    return "failed" if score is None else f"{score:+.3f}"
