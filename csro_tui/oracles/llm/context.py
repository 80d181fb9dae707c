"""What goes into an LLM oracle's prompt besides the game: opponents, feedback, sizes.

- `PromptSettings`: how many opponents, as code, names or summaries, and the
  prompt's size budget;
- `opponent_briefs`: the population as the prompt builders want it, with
  LLM-written summaries when asked for (cached per policy source hash for
  the oracle's lifetime, so each distinct policy is summarised once);
- `preview_feedback`: what the model is told about a preview of its code.
"""

from __future__ import annotations

import dataclasses
import threading
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from csro_tui.oracles.base import OracleContext
from csro_tui.oracles.candidates import attach_calls, ranked_members, source_hash
from csro_tui.oracles.llm.calls import call_record
from csro_tui.oracles.llm.client import LLMBackend, LLMError
from csro_tui.oracles.llm.hints import failure_hint
from csro_tui.oracles.llm.mixture import MixtureDescriber, describes_every_state
from csro_tui.oracles.llm.prompts import (
    OPPONENT_FORMATS,
    ContextOptions,
    EvaluationFeedback,
    OpponentBrief,
    PromptLibrary,
)
from csro_tui.oracles.options import OptionReader
from csro_tui.records import PolicyRecord, Preview


# Prompt size the builders aim for (estimated tokens, characters / 4): room
# for the game, the contract, an example, the mixture and a few opponents,
# and, with a reply of ~1-2k tokens, inside an 8k-token context (local
# models served with -c 8192).  Code tokenises at ~3.3-4 characters a token,
# hence the margin.
DEFAULT_PROMPT_BUDGET_TOKENS = 5_000


# Keys about what goes into a prompt.
CONTEXT_KEYS = ("top_k", "opponent_format", "prompt_budget_tokens", "prompts_dir", "max_rejections")


def preview_feedback(
    preview: Preview,
    names: Mapping[str, str] | None = None,
    notes: str = "",
    *,
    spec: Any = None,
    weights: Mapping[str, float] | None = None,
    threshold: float | None = None,
    seat: int | None = None,
) -> EvaluationFeedback:
    """What the model is told about a preview.

    Payoffs by opponent name, or the failure with its traceback and advice
    on the fix (`hints.failure_hint`); a copy of a known policy said
    plainly; the opponents it loses to, heaviest first; and, with a
    `threshold`, whether it is an improvement by the gate's rule
    (`Preview.shortfall`) - then `notes`.  `seat`: the one seat the preview played the
    candidate in (two populations), None for seats swapped.
    """
    feedback = EvaluationFeedback.from_preview(preview, names, seat)
    lines: list[str] = []
    if feedback.failure:
        hint = failure_hint(f"{feedback.failure}\n{feedback.traceback or ''}", spec)
        if hint:
            lines.append(f"How to fix it: {hint}")
    if preview.duplicate_of is not None:
        lines.append(f"REJECTED AS A COPY: {preview.duplicate_reason or 'it repeats ' + preview.duplicate_of}. "
                     "A copy never improves the population: write a policy that plays differently.")
    losses = losing_lines(preview, names, weights)
    if losses:
        lines.append("It loses against: " + "; ".join(losses) + ".")
    if threshold is not None and preview.failure is None:
        shortfall = preview.shortfall(threshold)
        if shortfall is None:
            lines.append(f"It beats the meta-strategy (goal: above {threshold:+.3f}).")
        elif preview.duplicate_of is None:
            lines.append(f"Not good enough yet: {shortfall}.")
    if notes:
        lines.append(notes)
    return dataclasses.replace(feedback, notes="\n".join(lines))


def losing_lines(
    preview: Preview, names: Mapping[str, str] | None = None, weights: Mapping[str, float] | None = None
) -> list[str]:
    """"name (weight w): -0.333" for each member the candidate loses to, heaviest weight first."""
    names, weights = names or {}, weights or {}
    lost = [(pid, value) for pid, value in preview.per_member.items() if value == value and value < 0]
    lost.sort(key=lambda item: (-weights.get(item[0], 0.0), item[1]))
    return [f"{names.get(pid, pid)} (weight {weights.get(pid, 0.0):.3f}): {value:+.3f}" for pid, value in lost[:6]]


class SummaryCache:
    """LLM-written summaries of policies, by source hash (thread-safe)."""

    def __init__(self) -> None:
        self._summaries: dict[str, str] = {}
        self._lock = threading.Lock()

    def get(self, source: str) -> str | None:
        with self._lock:
            return self._summaries.get(source_hash(source))

    def put(self, source: str, summary: str) -> None:
        with self._lock:
            self._summaries[source_hash(source)] = summary

    def __len__(self) -> int:
        with self._lock:
            return len(self._summaries)


@dataclass(frozen=True)
class PromptSettings:
    """What goes into a prompt: opponents (how many, as code or summaries) and its size."""

    top_k: int = 8
    # "auto": "names" where the mixture section describes every information state (Kuhn: the
    # opponents' code would say nothing more and doubles the prompt), else "code"; or one of
    # prompts.OPPONENT_FORMATS.
    opponent_format: str = "auto"
    budget_tokens: int = DEFAULT_PROMPT_BUDGET_TOKENS
    max_rejections: int = 3
    prompts_dir: str | None = None

    def context_options(self, spec: Any = None) -> ContextOptions:
        """The prompt builders' options, "auto" resolved for `spec`."""
        opponent_format = self.opponent_format
        if opponent_format == "auto":
            opponent_format = "names" if spec is not None and describes_every_state(spec) else "code"
        return ContextOptions(top_k=self.top_k, opponent_format=opponent_format, max_rejections=self.max_rejections)

    def library(self) -> PromptLibrary:
        return PromptLibrary(self.prompts_dir)


def read_prompt_settings(options: OptionReader) -> PromptSettings:
    settings = PromptSettings(
        top_k=options.integer("top_k", 8, minimum=1),
        opponent_format=options.choice("opponent_format", "auto", ("auto",) + OPPONENT_FORMATS),
        budget_tokens=options.integer("prompt_budget_tokens", DEFAULT_PROMPT_BUDGET_TOKENS, minimum=1000),
        max_rejections=options.integer("max_rejections", 3, minimum=0),
        prompts_dir=options.text("prompts_dir"),
    )
    # A missing prompts directory or template is reported now, before a session is recorded.
    settings.library().check()
    return settings


def opponent_briefs(
    context: OracleContext,
    backend: LLMBackend,
    library: PromptLibrary,
    settings: PromptSettings,
    cache: SummaryCache,
) -> tuple[list[OpponentBrief], list[dict[str, Any]]]:
    """(briefs of every member, the summary calls made for them).

    With `opponent_format = "summary"`, the top_k members by weight get an
    LLM-written summary: from the cache, else one call each, in weight order.
    A summary call that fails leaves that member as code (the prompt builder
    falls back), so a flaky server costs detail, not the iteration.
    """
    calls: list[dict[str, Any]] = []
    members = ranked_members(context)
    summarise = {m.id for m, w in members[: settings.top_k] if w > 0} if settings.opponent_format == "summary" else set()
    briefs = []
    for member, weight in members:
        summary = cache.get(member.source)
        if summary is None and member.id in summarise:
            summary = _summarise(member, context, backend, library, cache, calls)
        briefs.append(OpponentBrief(member.id, member.name, weight, member.source, summary))
    return briefs, calls


def _summarise(
    member: PolicyRecord,
    context: OracleContext,
    backend: LLMBackend,
    library: PromptLibrary,
    cache: SummaryCache,
    calls: list[dict[str, Any]],
) -> str | None:
    messages = library.summarize_messages(member.source, context.spec)
    try:
        call = backend.complete(messages, purpose="summarize", cancel=context.cancel)
    except LLMError as error:
        calls.extend(call_record(error.call))
        if error.kind == "cancelled":
            raise attach_calls(error, calls)
        return None
    calls.append(call.to_dict())
    summary = call.response.strip()
    if not summary:
        return None
    cache.put(member.source, summary)
    return summary


def mixture_text(context: OracleContext, describer: MixtureDescriber) -> str:
    """How the opponent mixture plays, for the prompt ("" when the game has no such description);
    with two populations in the other seat only, the one the opponents play."""
    return describer.describe(context.spec, context.population, context.meta_strategy, opponent_seat(context))


def opponent_seat(context: OracleContext) -> int | None:
    """The seat the opponents play: the other seat with two populations, None (both) with one."""
    return None if context.seat is None else 1 - context.seat


def prompt_sizes(calls: Sequence[Mapping[str, Any]]) -> str:
    """"prompts ~1,234-2,345 tokens" over recorded calls (estimated), for rationales; "" without calls."""
    sizes = [int(c.get("prompt_estimated_tokens") or 0) for c in calls if c.get("prompt_estimated_tokens")]
    if not sizes:
        return ""
    low, high = min(sizes), max(sizes)
    span = f"{low:,}" if low == high else f"{low:,}-{high:,}"
    return f"prompt{'s' if len(sizes) > 1 else ''} ~{span} tokens (estimated)"


def rejection_pairs(context: OracleContext) -> list[tuple[Any, str]]:
    """The reviewer's rejections that concern this proposal (its seat's, with two populations),
    newest last, as the prompt builders take them."""
    return context.seat_rejections()
