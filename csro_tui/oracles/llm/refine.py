"""The refining LLM oracle (`llm-refine`): the CSRO paper's linear refinement.

A chain of attempts, each one previewed against the population:

1. the root: a zero-shot best response (`start = "zero-shot"`, the default),
   the population member with the highest meta-strategy weight
   (`start = "member"`), or the game's example policy from the prompt
   (`start = "example"`: every call is then an edit of working code guided
   by its evaluation, which suits small models); the root is refined;
2. while no attempt the model wrote clears the gate's rule
   (`Preview.shortfall(threshold)`: expected payoff against the
   meta-strategy above `threshold`, default 0, by the noise margin, and no
   copy of a member or rejected proposal) and the call budget (default 10
   calls) lasts, the model is shown the code with its evaluation - payoff
   against each opponent, the ones it loses to, a copy named as such, or
   the failure with its category, traceback and advice on the fix
   (`hints.failure_hint`) - and asked for an improved version.

The prompts describe how the opponent mixture plays (`mixture.py`).  Only
improvements are kept: an attempt becomes the new best only if it ranks
higher (clears the gate, then is not a copy, then scores higher).  What
the model is asked to improve is the best attempt so far, except right
after an attempt that failed to run, which is sent back with its failure
so the model can fix it.  A reply that returns the code it was asked to
improve (or the example) unchanged is not scored; the next prompt says so
in capitals.  The proposal is the best attempt the model wrote (the
example root is never proposed: hand-written code is not the oracle's
work);
its parent is the population member the chain started from (None for a
zero-shot root, which is not a population member; the rationale shows the
whole chain).

With two populations (`OracleContext.seat`) it refines a policy for that
seat against the other seat's mixture: the prompts name the seat, the
`member` root is the seat's own heaviest member (`own_meta_strategy`; the
newest when the engine gives no weights), and the bar an attempt must beat
is, as in the auto reviewer, the seat's meta-game value plus `threshold`
(`OracleContext.seat_value`: Kuhn's seat 0 is worth -1/18, so 0 would be out
of reach there).

Cost: 1 to `budget` calls per proposal (a reply without valid code counts as
an attempt), plus summary calls with `opponent_format = "summary"`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from csro_tui.errors import ConfigError
from csro_tui.oracles.base import LLMUse, OracleContext
from csro_tui.same_code import normalized_code
from csro_tui.records import PolicyRecord, Preview, Proposal
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
    ranked_own_members,
    score_text,
)
from csro_tui.oracles.llm.backend import make_backend, read_llm_settings
from csro_tui.oracles.llm.calls import CallBudget, call_record
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
from csro_tui.oracles.llm.conversation import (
    RETRY_MESSAGE,
    code_from_reply,
    code_in_reply,
    explanation_lines,
    follow_up,
)
from csro_tui.oracles.options import OptionReader

DEFAULT_BUDGET = 10
UNCHANGED_NOTE = ("YOUR LAST ANSWER RETURNED THIS POLICY UNCHANGED, which cannot improve anything: "
                  "change the decisions the evaluation lists below.")
DEFAULT_THRESHOLD = 0.0
STARTS = ("zero-shot", "member", "example")


@dataclass
class Attempt:
    """One link of the chain."""

    number: int
    basis: int | None  # the attempt it refined (None: the root)
    source: str | None
    preview: Preview | None = None
    score: float | None = None
    reason: str | None = None  # why it has no score
    reply: str = ""
    kept: bool = False
    unchanged: bool = False  # the reply was the code it was asked to improve (or the example), as it was

    def describe(self) -> str:
        origin = "root" if self.basis is None else f"refines {self.basis}"
        if self.score is not None:
            verdict = "kept (improved)" if self.kept and self.basis is not None else ("kept" if self.kept else "dropped (no improvement)")
            copy = f", a copy ({self.preview.duplicate_reason})" if self.preview is not None and self.preview.duplicate_of else ""
            return f"{self.number}. {origin}: {self.score:+.3f}{copy}, {verdict}"
        return f"{self.number}. {origin}: failed: {self.reason}"


class RefineOracle:
    """Refines one policy with evaluation feedback until it beats the threshold."""

    name = "llm-refine"

    def __init__(
        self,
        backend: LLMBackend,
        *,
        threshold: float = DEFAULT_THRESHOLD,
        budget: int = DEFAULT_BUDGET,
        start: str = "zero-shot",
        prompts: PromptSettings | None = None,
    ) -> None:
        if budget < 1:
            raise ConfigError(f"llm-refine oracle: budget must be at least 1, not {budget}")
        if start not in STARTS:
            raise ConfigError(f"llm-refine oracle: start must be one of {', '.join(STARTS)}, not {start!r}")
        self.backend = backend
        self.threshold = threshold
        self.budget = budget
        self.start = start
        self.prompts = prompts or PromptSettings()
        self.library = self.prompts.library()
        self.summaries = SummaryCache()
        self.mixture = MixtureDescriber()

    @property
    def llm(self) -> LLMUse:
        """The oracle contract's declaration: this oracle calls `backend`, `budget` calls a proposal."""
        return LLMUse(self.backend, self.budget)

    def threshold_for(self, context: OracleContext) -> float:
        """The payoff an attempt must beat, as the auto reviewer's bar: `threshold`, plus the
        seat's meta-game value with two populations (when the engine gives it)."""
        if context.seat is not None and context.seat_value is not None:
            return self.threshold + float(context.seat_value)
        return self.threshold

    def propose(self, context: OracleContext) -> Proposal:
        threshold = self.threshold_for(context)
        preview = SerialPreview(context)
        briefs, calls = opponent_briefs(context, self.backend, self.library, self.prompts, self.summaries)
        mixture = mixture_text(context, self.mixture)
        budget = CallBudget(self.budget)
        attempts: list[Attempt] = []
        best: Attempt | None = None  # what the next call refines: the best attempt so far
        chosen: Attempt | None = None  # what may be proposed: never the example, nor a copy of it
        root_member = self._root_member(context)
        example = self._example(context)
        root_source = root_member.source if root_member is not None else example
        if root_source is not None:
            root = Attempt(1, None, root_source)
            self._score(root, preview)
            attempts.append(root)
            if root.score is not None:
                root.kept, best = True, root
                chosen = root if example is None else None
        stop = ""
        while True:
            if chosen is not None and self._clears(chosen, threshold):
                stop = f"threshold {threshold:+.3f} reached"
                break
            if context.finish.is_set():
                stop = "finished early on request"
                break
            if context.cancel.is_set():
                stop = "cancelled"
                break
            if not budget.take():
                stop = f"budget of {self.budget} calls used"
                break
            basis = self._basis(attempts, best)
            last = attempts[-1] if attempts else None
            messages = self._messages(
                context, briefs, basis, threshold, mixture, unchanged=last is not None and last.unchanged
            )
            if last is not None and last.source is None and not last.unchanged:
                # The last reply held no usable code: say why, in the same conversation.
                messages = follow_up(messages, last.reply, RETRY_MESSAGE.format(reason=last.reason))
            try:
                call = self.backend.complete(messages, purpose="refine" if basis else "best_response", cancel=context.cancel)
            except LLMError as error:
                calls.extend(call_record(error.call))
                if error.kind == "cancelled" and context.finish.is_set():
                    stop = "finished early on request (the call in flight was cancelled)"
                    break
                if chosen is None or error.kind == "cancelled":
                    raise attach_calls(error, calls)
                stop = f"LLM error: {error}"
                break
            calls.append(call.to_dict())
            source, reason = code_from_reply(call.response, call.finish_reason, context.spec)
            attempt = Attempt(len(attempts) + 1, basis.number if basis else None, source, reason=reason, reply=call.response)
            if source is not None and any(_same_code(source, given) for given in (example, basis and basis.source) if given):
                # Not scored (nothing new) and never proposed; the next prompt says so. Asked again in a
                # new conversation, not a follow-up: in one, the 1.5B model repeated its reply verbatim.
                attempt.source, attempt.unchanged = None, True
                attempt.reason = "the policy it was asked to improve, unchanged"
            if attempt.source is not None:
                self._score(attempt, preview)
            attempts.append(attempt)
            if attempt.score is not None and (best is None or self._rank(attempt, threshold) > self._rank(best, threshold)):
                attempt.kept = True
                best = attempt
            if attempt.score is not None and (
                chosen is None or self._rank(attempt, threshold) > self._rank(chosen, threshold)
            ):
                chosen = attempt
        if chosen is None:
            chain = "; ".join(a.describe() for a in attempts) or "no attempt"
            summary = f"no attempt ran successfully ({stop}): {chain}"
            failed = failed_proposal(context, self.name, f"refine-{context.iteration}",
                                     self._last_failed_code(attempts, example), summary, calls)
            raise attach_calls(NoUsableCandidate(f"llm-refine oracle: {summary}", failed), calls)
        return Proposal(
            source=chosen.source or "",
            oracle=self.name,
            name=context.proposal_name(f"refine-{context.iteration}"),
            parent=root_member.id if root_member is not None else None,
            rationale=self._rationale(attempts, chosen, stop, calls, root_member, threshold, context),
            seat=context.seat,
            llm_calls=calls,
        )

    @staticmethod
    def _last_failed_code(attempts: list[Attempt], example: str | None) -> tuple[str, str] | None:
        """(code, why it failed) of the model's latest reply with code that did not work (never
        the example it was given, nor code it returned unchanged)."""
        for attempt in reversed(attempts):
            if attempt.unchanged:
                continue
            code = attempt.source or code_in_reply(attempt.reply)
            if code and code != example:
                return code, attempt.reason or "it failed"
        return None

    def _example(self, context: OracleContext) -> str | None:
        return self.library.example_policy(context.spec) if self.start == "example" else None

    def _root_member(self, context: OracleContext) -> PolicyRecord | None:
        if self.start != "member" or not context.own_members:
            return None
        return ranked_own_members(context)[0][0]

    @staticmethod
    def _score(attempt: Attempt, preview: SerialPreview) -> None:
        assert attempt.source is not None
        attempt.preview = preview(attempt.source)
        attempt.score = preview_score(attempt.preview)
        if attempt.score is None:
            attempt.reason = failure_text(attempt.preview)

    @staticmethod
    def _clears(attempt: Attempt, threshold: float) -> bool:
        """The gate's rule: it ran, repeats nothing known, and beats the threshold by the noise margin."""
        return attempt.preview is not None and attempt.score is not None \
            and attempt.preview.shortfall(threshold) is None

    def _rank(self, attempt: Attempt, threshold: float) -> tuple[bool, bool, float]:
        """Better attempts sort higher: clearing the gate, then not a copy, then payoff."""
        duplicate = attempt.preview is not None and attempt.preview.duplicate_of is not None
        return (self._clears(attempt, threshold), not duplicate,
                attempt.score if attempt.score is not None else float("-inf"))

    @staticmethod
    def _basis(attempts: list[Attempt], best: Attempt | None) -> Attempt | None:
        """What to refine next: a just-failed attempt with code (to fix it), else the best."""
        last = attempts[-1] if attempts else None
        if last is not None and last.source is not None and last.score is None:
            return last
        return best

    def _messages(
        self, context: OracleContext, briefs: list, basis: Attempt | None, threshold: float, mixture: str = "", *,
        unchanged: bool = False,
    ) -> list[dict[str, str]]:
        options = self.prompts.context_options(context.spec)
        rejections = rejection_pairs(context)
        if basis is None:
            return self.library.best_response_messages(
                context.spec, briefs, rejections=rejections, budget_tokens=self.prompts.budget_tokens,
                options=options, mixture=mixture, seat=context.seat,
            )
        assert basis.source is not None and basis.preview is not None
        losses = ""
        if basis.score is not None and basis.preview.shortfall(threshold) is not None:
            losses = self.mixture.losses(
                context.spec, context.population, context.meta_strategy, basis.source, seat=context.seat
            )
        if unchanged:
            losses = (UNCHANGED_NOTE + "\n" + losses).strip()
        feedback = preview_feedback(
            basis.preview, member_names(context), losses, spec=context.spec, weights=member_weights(context),
            threshold=threshold if basis.score is not None else None, seat=context.seat,
        )
        return self.library.refine_messages(
            context.spec,
            basis.source,
            feedback,
            briefs,
            rejections,
            self.prompts.budget_tokens,
            options=options,
            mixture=mixture,
            seat=context.seat,
        )

    def _rationale(
        self,
        attempts: list[Attempt],
        best: Attempt,
        stop: str,
        calls: list[dict[str, Any]],
        root_member: PolicyRecord | None,
        threshold: float,
        context: OracleContext,
    ) -> str:
        start = (f"population member {root_member.name} ({root_member.id})" if root_member
                 else "the game's example policy" if self.start == "example" else "a zero-shot best response")
        bar = ""
        if context.seat is not None:
            start += f", for {context.seat_words()} against the other seat's meta-strategy"
            if context.seat_value is not None:
                value = context.seat_value + 0.0  # seat 1's negated 0.0 would read "-0.000"
                bar = f" (the seat's meta-game value {value:+.3f} + {self.threshold:g})"
        lines = [
            f"Linear refinement from {start}: threshold {threshold:+.3f}{bar}, "
            f"{len(calls)} LLM call{'s' if len(calls) != 1 else ''} (budget {self.budget}"
            + (f"; {prompt_sizes(calls)}" if prompt_sizes(calls) else "") + f"). Stopped: {stop}.",
            "Chain (expected payoff against the meta-strategy):",
        ]
        lines += [f"- {a.describe()}" for a in attempts]
        lines.append(f"Proposed: attempt {best.number}, {score_text(best.score)}.")
        lines += explanation_lines(best.reply)
        return "\n".join(lines)


def make_refine_oracle(config: Mapping[str, Any] | None = None) -> RefineOracle:
    """Registry factory for `llm-refine`: threshold, budget, start, prompt and LLM options."""
    options = OptionReader("llm-refine", config)
    threshold = options.number("threshold", DEFAULT_THRESHOLD)
    budget = options.integer("budget", DEFAULT_BUDGET, minimum=1)
    start = options.choice("start", "zero-shot", STARTS)
    prompts = read_prompt_settings(options)
    llm = read_llm_settings(options)
    options.finish()
    return RefineOracle(make_backend(llm), threshold=threshold, budget=budget, start=start, prompts=prompts)


def _same_code(source: str, other: str) -> bool:
    """The same module once docstrings and formatting are set aside (the gate's rule for a copy)."""
    code = normalized_code(source)
    return code is not None and code == normalized_code(other)
