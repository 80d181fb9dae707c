"""The evolutionary search's LLM mutation (`llm-evolve`).

`LLMMutation`: the model sees the parent, how it fared against each opponent,
and the inspirations with their scores, and answers with SEARCH/REPLACE edits
(`prompts/mutate.md`).  The edits are applied with `apply_edits`; if they do
not apply, a full module in the reply is used instead (`extract_code`).  One
LLM call per child; calls run concurrently up to the client's limit.  The
search itself (`csro_tui.oracles.evolve`) is shared with the offline `evolve`.

Every child is checked with `validate_source`; nothing here runs it.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from csro_tui.oracles.base import OracleContext
from csro_tui.oracles.candidates import attach_calls, member_names
from csro_tui.oracles.evolve.database import normalised_key
from csro_tui.oracles.evolve.mutation import MutationRequest, MutationResult
from csro_tui.oracles.evolve.search import EvolutionOracle, read_evolution_settings
from csro_tui.oracles.llm.backend import backend_concurrency, make_backend, read_llm_settings
from csro_tui.oracles.llm.calls import run_in_parallel
from csro_tui.oracles.llm.client import LLMBackend, LLMError
from csro_tui.oracles.llm.context import PromptSettings, read_prompt_settings
from csro_tui.oracles.llm.conversation import reply_prose, validation_reason
from csro_tui.oracles.llm.extract import EditError, NoCodeError, apply_edits, extract_code
from csro_tui.oracles.llm.prompts import EvaluationFeedback, Inspiration
from csro_tui.oracles.options import OptionReader

SCORE_NAME = "expected payoff"


def child_from_reply(parent_source: str, reply: str) -> MutationResult:
    """Apply the reply's edits to the parent, or take its full module; then validate."""
    try:
        source, kind, note = apply_edits(parent_source, reply), "edit", ""
    except EditError as edit_error:
        try:
            source, kind = extract_code(reply), "rewrite"
            note = f"edits did not apply ({edit_error}); used the reply's full module"
        except NoCodeError as code_error:
            return MutationResult(None, "edit", failure=f"edits did not apply ({edit_error}) and no full module ({code_error})")
    reason = validation_reason(source)
    if reason is not None:
        return MutationResult(None, kind, failure=reason)
    if normalised_key(source) == normalised_key(parent_source):
        return MutationResult(None, kind, failure="the change leaves the parent as it was")
    description = "; ".join(part for part in (note, reply_prose(reply, 300)) if part)
    return MutationResult(source, kind, description)


def rejection_notes(context: OracleContext, count: int) -> str:
    """The reviewer's latest reasons for rejecting proposals, as a note (the mutate prompt has no code for them)."""
    rejections = context.seat_rejections()  # with two populations, this seat's
    reasons = [reason.strip() for _, reason in rejections if reason and reason.strip()][-count:] if count else []
    if not reasons:
        return ""
    return "The reviewer rejected earlier proposals for these reasons; avoid them:\n" + "\n".join(f"- {r}" for r in reasons)


class LLMMutation:
    """Children from the model, as SEARCH/REPLACE edits with a full-rewrite fallback."""

    name = "llm"
    uses_llm = True

    def __init__(self, backend: LLMBackend, prompts: PromptSettings | None = None) -> None:
        self.backend = backend
        self.prompts = prompts or PromptSettings()
        self.library = self.prompts.library()

    def mutate_batch(self, requests: Sequence[MutationRequest], context: OracleContext) -> list[MutationResult]:
        tasks = [lambda r=r: self.mutate(r, context) for r in requests]
        results = run_in_parallel(tasks, backend_concurrency(self.backend))
        for result in results:
            if isinstance(result, BaseException):
                calls = [c for r in results if isinstance(r, MutationResult) for c in r.llm_calls]
                raise attach_calls(result, calls + list(getattr(result, "llm_calls", [])))
        return results  # type: ignore[return-value]

    def mutate(self, request: MutationRequest, context: OracleContext) -> MutationResult:
        parent = request.parent
        names = member_names(context)
        messages = self.library.mutate_messages(
            context.spec,
            parent.source,
            [Inspiration(p.id, p.source, p.fitness) for p in request.inspirations],
            parent_score=parent.fitness,
            score_name=SCORE_NAME,
            feedback=EvaluationFeedback(
                expected_payoff=parent.fitness,
                per_opponent={names.get(k, k): v for k, v in parent.per_member.items()},
                notes=rejection_notes(context, self.prompts.max_rejections),
                seat=context.seat,
            ),
            budget_tokens=self.prompts.budget_tokens,
            options=self.prompts.context_options(context.spec),
            seat=context.seat,
        )
        try:
            call = self.backend.complete(messages, purpose="mutate", cancel=context.cancel)
        except LLMError as error:
            calls = [error.call.to_dict()] if error.call is not None else []
            if error.kind == "cancelled" and not context.finish.is_set():
                raise attach_calls(error, calls)
            return MutationResult(None, "edit", failure=f"LLM error: {error}", llm_calls=calls, error=error)
        result = child_from_reply(parent.source, call.response)
        result.llm_calls = [call.to_dict()]
        return result


def make_llm_evolve_oracle(config: Mapping[str, Any] | None = None) -> EvolutionOracle:
    """`llm-evolve`: the search with `LLMMutation`; budget = LLM calls per proposal (default 16)."""
    options = OptionReader("llm-evolve", config)
    settings = read_evolution_settings(options, default_budget=16)
    prompts = read_prompt_settings(options)
    llm = read_llm_settings(options)
    options.finish()
    settings.check("llm-evolve")
    return EvolutionOracle(LLMMutation(make_backend(llm), prompts), settings, name="llm-evolve")
