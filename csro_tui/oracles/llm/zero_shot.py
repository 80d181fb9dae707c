"""The zero-shot LLM oracle (`llm`): ask for a best response, keep the best of K.

Each iteration the model gets the game, the policy contract, the opponents
(population members by meta-strategy weight, top k, as code or as summaries
within a token budget) and the reviewer's earlier rejections with their
reasons, and is asked for a policy that beats the mixture.  K candidates are
requested concurrently (up to the client's concurrency).  Each reply goes
through `extract_code` and `validate_source`; a reply without valid code is
a failed attempt whose reason is sent back to the model, within that
candidate's share of the call budget.  Candidates with valid code are
previewed (sandboxed, against the population) and the one with the highest
expected payoff against the meta-strategy becomes the proposal.  A
candidate that fails its preview (crash, timeout, illegal move) is also
sent back to the model with the failure, while its budget lasts.

Cost: K to `budget` code calls per proposal (default budget 3 per
candidate), plus, with `opponent_format = "summary"`, one summary call per
distinct opponent shown that has not been summarised before.

Options (run `oracle_options`): candidates, budget, top_k, opponent_format,
prompt_budget_tokens, max_rejections, prompts_dir, and the LLM settings
(`oracles.options.LLM_KEYS`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from csro_tui.errors import ConfigError
from csro_tui.oracles.base import LLMUse, OracleContext
from csro_tui.records import Proposal
from csro_tui.oracles.llm.client import LLMBackend, LLMError
from csro_tui.oracles.llm.mixture import MixtureDescriber
from csro_tui.oracles.candidates import (
    NoUsableCandidate,
    SerialPreview,
    attach_calls,
    failed_proposal,
    failure_text,
    member_names,
    member_weights,
    preview_score,
    score_text,
)
from csro_tui.oracles.llm.backend import backend_concurrency, make_backend, read_llm_settings
from csro_tui.oracles.llm.calls import CallBudget, run_in_parallel, split_budget
from csro_tui.oracles.llm.context import (
    PromptSettings,
    SummaryCache,
    mixture_text,
    opponent_briefs,
    preview_feedback,
    prompt_sizes,
    read_prompt_settings,
    rejection_pairs,
)
from csro_tui.oracles.llm.conversation import explanation_lines, follow_up, request_code
from csro_tui.oracles.options import OptionReader

DEFAULT_CANDIDATES = 1
# Calls per candidate when no budget is given: the first try and two more.
DEFAULT_CALLS_PER_CANDIDATE = 3


@dataclass
class Candidate:
    """One of the K candidates: its conversation's outcome and its preview."""

    number: int
    budget: int
    source: str | None = None
    reply: str = ""
    score: float | None = None
    failures: list[str] = field(default_factory=list)  # one line per failed attempt
    calls: list[dict[str, Any]] = field(default_factory=list)
    error: LLMError | None = None
    duplicate: bool = False  # its source copies a known policy
    failed: tuple[str, str] | None = None  # (code, why) of its latest code that failed

    def describe(self) -> str:
        used = f"{len(self.calls)} call{'s' if len(self.calls) != 1 else ''}"
        if self.score is not None:
            text = f"candidate {self.number}: expected payoff {self.score:+.3f} ({used})"
        else:
            text = f"candidate {self.number}: no usable policy ({used})"
        if self.failures:
            text += "; failed attempts: " + " | ".join(self.failures)
        if self.error is not None:
            text += f"; LLM error: {self.error}"
        return text


class ZeroShotOracle:
    """K zero-shot best responses from the model, the best by preview proposed."""

    name = "llm"

    def __init__(
        self,
        backend: LLMBackend,
        *,
        candidates: int = DEFAULT_CANDIDATES,
        budget: int | None = None,
        prompts: PromptSettings | None = None,
    ) -> None:
        if candidates < 1:
            raise ConfigError(f"llm oracle: candidates must be at least 1, not {candidates}")
        budget = candidates * DEFAULT_CALLS_PER_CANDIDATE if budget is None else budget
        if budget < candidates:
            raise ConfigError(f"llm oracle: budget ({budget} calls) must cover the {candidates} candidates")
        self.backend = backend
        self.candidates = candidates
        self.budget = budget
        self.prompts = prompts or PromptSettings()
        self.library = self.prompts.library()
        self.summaries = SummaryCache()
        self.mixture = MixtureDescriber()

    @property
    def llm(self) -> LLMUse:
        """The oracle contract's declaration: this oracle calls `backend`, `budget` calls a proposal."""
        return LLMUse(self.backend, self.budget)

    def propose(self, context: OracleContext) -> Proposal:
        briefs, summary_calls = opponent_briefs(context, self.backend, self.library, self.prompts, self.summaries)
        messages = self.library.best_response_messages(
            context.spec,
            briefs,
            rejections=rejection_pairs(context),
            budget_tokens=self.prompts.budget_tokens,
            options=self.prompts.context_options(context.spec),
            mixture=mixture_text(context, self.mixture),
            seat=context.seat,
        )
        preview = SerialPreview(context) if context.preview is not None else None
        candidates = [
            Candidate(number, share) for number, share in enumerate(split_budget(self.budget, self.candidates), 1)
        ]
        tasks = [lambda c=c: self._run_candidate(c, messages, context, preview) for c in candidates]
        for candidate, outcome in zip(candidates, run_in_parallel(tasks, backend_concurrency(self.backend))):
            if isinstance(outcome, BaseException):
                # A cancelled request carries its own calls, not yet counted in its candidate's.
                own = list(getattr(outcome, "llm_calls", None) or [])
                raise attach_calls(outcome, summary_calls + [c for k in candidates for c in k.calls] + own)
        calls = summary_calls + [call for c in candidates for call in c.calls]
        return self._choose(context, candidates, calls, preview is not None)

    def _run_candidate(
        self, candidate: Candidate, messages: list[dict[str, str]], context: OracleContext, preview: SerialPreview | None
    ) -> None:
        """One candidate's conversation: code, preview, and the failures fed back, within its budget.

        A policy that fails its run, or copies a member or a rejected
        proposal, is sent back with what went wrong while the budget lasts
        (only the latest reply is kept in the conversation); a copy stays
        the candidate's answer if nothing better comes.
        """
        budget = CallBudget(candidate.budget)
        conversation = list(messages)
        while budget.left > 0 and not context.finish.is_set():
            try:
                request = request_code(
                    self.backend, conversation, purpose="best_response", budget=budget, cancel=context.cancel,
                    spec=context.spec,
                )
            except LLMError as error:
                if error.kind != "cancelled" or not context.finish.is_set():
                    raise
                candidate.calls += list(getattr(error, "llm_calls", None) or [])
                candidate.failures.append("finished early on request (the call in flight was cancelled)")
                return
            candidate.calls += request.calls
            candidate.failures += request.failures
            candidate.failed = request.failed_code() or candidate.failed
            if request.error is not None:
                candidate.error = request.error
                return
            if request.source is None:
                return  # budget spent on replies without code
            if preview is None:
                candidate.source, candidate.reply = request.source, request.reply
                return
            result = preview(request.source)
            score = preview_score(result)
            feedback = preview_feedback(
                result, member_names(context), spec=context.spec, weights=member_weights(context), seat=context.seat
            ).render()
            if score is not None:
                candidate.source, candidate.reply, candidate.score = request.source, request.reply, score
                candidate.duplicate = result.duplicate_of is not None
                if not candidate.duplicate or budget.left <= 0:
                    return
                candidate.failures.append(f"a copy: {result.duplicate_reason}")
                opening = "Your policy is a copy of one the session already has:"
            else:
                candidate.failures.append(f"preview failed: {failure_text(result)}")
                candidate.failed = (request.source, failure_text(result))
                opening = "Your policy failed when it was run against the population:"
            # Show the model what went wrong, then let it try again.
            conversation = follow_up(
                messages,
                request.reply,
                f"{opening}\n{feedback}\nFix it and reply with the complete module in one ```python code block.",
            )

    def _choose(
        self, context: OracleContext, candidates: list[Candidate], calls: list[dict[str, Any]], previewed: bool
    ) -> Proposal:
        usable = [c for c in candidates if c.source is not None]
        if not usable:
            errors = [c.error for c in candidates if c.error is not None]
            if errors and len(errors) == len(candidates):
                raise attach_calls(errors[0], calls)
            reasons = "; ".join(c.describe() for c in candidates)
            summary = f"no usable policy from {len(calls)} LLM calls: {reasons}"
            last = next((c.failed for c in reversed(candidates) if c.failed is not None), None)
            failed = failed_proposal(context, self.name, f"llm-{context.iteration}", last, summary, calls)
            raise attach_calls(NoUsableCandidate(f"llm oracle: {summary}", failed), calls)
        # Not a copy, then the highest preview payoff; the first candidate among equals.
        best = max(usable, key=lambda c: (not c.duplicate, c.score if c.score is not None else float("-inf"), -c.number))
        return Proposal(
            source=best.source or "",
            oracle=self.name,
            name=context.proposal_name(f"llm-{context.iteration}"),
            parent=None,
            rationale=self._rationale(best, candidates, calls, previewed, context.seat_words()),
            seat=context.seat,
            llm_calls=calls,
        )

    def _rationale(
        self, best: Candidate, candidates: list[Candidate], calls: list[dict[str, Any]], previewed: bool, seat: str = ""
    ) -> str:
        code_calls = sum(len(c.calls) for c in candidates)
        summaries = len(calls) - code_calls
        lines = [
            "Zero-shot best response" + (f" for {seat}, against the other seat's meta-strategy" if seat else "")
            + f": {len(candidates)} candidate{'s' if len(candidates) > 1 else ''}, "
            f"{code_calls} of {self.budget} budgeted calls used"
            + (f", plus {summaries} summary call{'s' if summaries > 1 else ''}" if summaries else "")
            + (f"; {prompt_sizes(calls)}" if prompt_sizes(calls) else "")
            + "."
        ]
        lines += [f"- {c.describe()}" for c in candidates]
        if previewed:
            lines.append(f"Chosen: candidate {best.number}, expected payoff {score_text(best.score)} against the meta-strategy.")
        else:
            lines.append(f"Chosen: candidate {best.number} (no preview available to rank candidates).")
        lines += explanation_lines(best.reply)
        return "\n".join(lines)


def make_zero_shot_oracle(config: Mapping[str, Any] | None = None) -> ZeroShotOracle:
    """Registry factory for `llm`; see the module docstring for the options."""
    options = OptionReader("llm", config)
    candidates = options.integer("candidates", DEFAULT_CANDIDATES, minimum=1)
    budget = options.integer("budget", candidates * DEFAULT_CALLS_PER_CANDIDATE, minimum=1)
    prompts = read_prompt_settings(options)
    llm = read_llm_settings(options)
    options.finish()
    return ZeroShotOracle(make_backend(llm), candidates=candidates, budget=budget, prompts=prompts)
