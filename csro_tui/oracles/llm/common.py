"""What the LLM oracles share: options, the backend, opponents, code requests.

- `OptionReader` checks an oracle's configuration (the run's
  `oracle_options` plus `model`/`base_url`): typed values, ranges, and a
  one-line `ConfigError` for anything unknown or wrong.
- `LLMSettings` / `make_backend`: a live `LLMClient` built with
  `LLMConfig.from_sources` (defaults < config file < environment < options),
  or, with `llm = "recorded:SESSION"`, a `RecordedLLM` that replays the LLM
  calls recorded in that session, so it re-runs with no server.
- `opponent_briefs`: the population as the prompt builders want it, with
  LLM-written summaries when asked for (cached per policy source hash for
  the oracle's lifetime, so each distinct policy is summarised once).
- `request_code`: one model conversation that must end in a valid policy
  module: each reply goes through `extract_code` and `validate_source`; a
  reply without usable code is a failed attempt with a reason, and the reason
  is sent back to the model while the call budget lasts.
- `SerialPreview`: `context.preview` behind a lock and a cache, so
  concurrent LLM calls never run two sandboxed evaluations at once and the
  same code is evaluated once per proposal.

Code from a model is untrusted input: nothing here executes it.  It is
parsed (`ast`) and validated statically; it only ever runs through
`context.preview`, i.e. in the sandbox.

Replays and concurrency.  `RecordedLLM` hands back records in order, so an
oracle must ask for them in the order they were recorded.  Every oracle
therefore keeps its calls in a fixed *logical* order (slot by slot, child by
child) in `Proposal.llm_calls`, whatever order concurrent calls finished in,
and with a recorded backend it makes its calls one at a time in that same
order (`backend_concurrency` is 1).  Budgets are split between concurrent
slots up front, so the calls a slot makes never depend on timing.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import re
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence, TypeVar

from csro_tui.errors import ConfigError, CsroError, NoUsableProposal, SessionError
from csro_tui.oracles.base import OracleContext
from csro_tui.records import PolicyRecord, Preview
from csro_tui.oracles.llm.client import LLMBackend, LLMCall, LLMClient, LLMConfig, LLMError
from csro_tui.oracles.llm.extract import NoCodeError, extract_code
from csro_tui.oracles.llm.hints import failure_hint
from csro_tui.oracles.llm.mixture import MixtureDescriber, describes_every_state
from csro_tui.oracles.llm.prompts import (
    OPPONENT_FORMATS, ContextOptions, EvaluationFeedback, OpponentBrief, PromptLibrary,
)

T = TypeVar("T")

# Prompt size the builders aim for (estimated tokens, characters / 4): room
# for the game, the contract, an example, the mixture and a few opponents,
# and, with a reply of ~1-2k tokens, inside an 8k-token context (local
# models served with -c 8192).  Code tokenises at ~3.3-4 characters a token,
# hence the margin.
DEFAULT_PROMPT_BUDGET_TOKENS = 5_000

# Keys of an oracle's configuration that set up the LLM backend (the rest are
# the oracle's own).  `llm` is "live" or "recorded:SESSION".
LLM_KEYS = (
    "model", "base_url", "api_key_env", "temperature", "max_tokens", "timeout",
    "max_retries", "concurrency", "stream", "llm", "strict_replay",
)
# Keys about what goes into a prompt.
CONTEXT_KEYS = ("top_k", "opponent_format", "prompt_budget_tokens", "prompts_dir", "max_rejections")

RECORDED_PREFIX = "recorded:"

# Sent back to the model after a reply that held no usable policy module.
RETRY_MESSAGE = (
    "Your reply could not be used: {reason}.\n"
    "Reply again with the complete policy module in one ```python code block, "
    "following the policy contract exactly."
)

# How many validation issues a failure reason lists before "and N more".
_MAX_ISSUES_SHOWN = 3


class NoUsableCandidate(NoUsableProposal):
    """An LLM oracle spent its budget without getting a policy it could propose."""


# --------------------------------------------------------------------- options
class OptionReader:
    """Typed access to one oracle's configuration; `finish()` rejects leftovers."""

    def __init__(self, oracle: str, config: Mapping[str, Any] | None) -> None:
        self.oracle = oracle
        self._values = dict(config or {})
        self._read: set[str] = set()

    def _raw(self, key: str) -> Any:
        self._read.add(key)
        return self._values.get(key)

    def _bad(self, key: str, value: Any, wanted: str) -> ConfigError:
        return ConfigError(f"{self.oracle} oracle: {key} must be {wanted}, not {value!r}")

    def has(self, key: str) -> bool:
        return self._values.get(key) is not None

    def integer(self, key: str, default: int, *, minimum: int | None = None) -> int:
        value = self._raw(key)
        if value is None:
            return default
        if isinstance(value, str) and value.strip().lstrip("-").isdigit():
            value = int(value)
        if not isinstance(value, int) or isinstance(value, bool):
            raise self._bad(key, value, "a whole number")
        if minimum is not None and value < minimum:
            raise self._bad(key, value, f"at least {minimum}")
        return value

    def number(self, key: str, default: float, *, minimum: float | None = None, maximum: float | None = None) -> float:
        value = self._raw(key)
        if value is None:
            return default
        if isinstance(value, str):
            try:
                value = float(value)
            except ValueError:
                raise self._bad(key, value, "a number") from None
        if not isinstance(value, (int, float)) or isinstance(value, bool) or value != value:
            raise self._bad(key, value, "a number")
        if minimum is not None and value < minimum:
            raise self._bad(key, value, f"at least {minimum}")
        if maximum is not None and value > maximum:
            raise self._bad(key, value, f"at most {maximum}")
        return float(value)

    def boolean(self, key: str, default: bool) -> bool:
        value = self._raw(key)
        if value is None:
            return default
        if isinstance(value, bool):
            return value
        text = str(value).strip().lower()
        if text in ("1", "true", "yes", "on"):
            return True
        if text in ("0", "false", "no", "off"):
            return False
        raise self._bad(key, value, "true or false")

    def choice(self, key: str, default: str, choices: Sequence[str]) -> str:
        value = self._raw(key)
        if value is None:
            return default
        if value not in choices:
            raise self._bad(key, value, "one of " + ", ".join(choices))
        return value

    def text(self, key: str, default: str | None = None) -> str | None:
        value = self._raw(key)
        if value is None:
            return default
        if not isinstance(value, str):
            raise self._bad(key, value, "text")
        return value

    def raw(self, key: str) -> Any:
        """The value as given (None when absent), for settings checked elsewhere."""
        return self._raw(key)

    def finish(self, *, ignore: Sequence[str] = ()) -> None:
        """Raise `ConfigError` for keys nobody read (typos), except `ignore`d ones."""
        unknown = sorted(set(self._values) - self._read - set(ignore))
        if unknown:
            from csro_tui.names import did_you_mean

            known = ", ".join(sorted(self._read))
            hint = did_you_mean(unknown[0], self._read) if len(unknown) == 1 else ""
            raise ConfigError(f"{self.oracle} oracle: unknown option(s) {', '.join(unknown)}{hint} (known: {known})")


# --------------------------------------------------------------------- backend
@dataclass(frozen=True)
class LLMSettings:
    """How an oracle reaches its model; never holds the key itself."""

    flags: dict[str, Any] = field(default_factory=dict)  # LLMConfig field -> value
    api_key_env: str | None = None  # name of the variable holding the key
    recorded: str | None = None  # session reference to replay, or None for live calls
    strict_replay: bool = True


def read_llm_settings(options: OptionReader) -> LLMSettings:
    """The LLM keys of an oracle's configuration (see `LLM_KEYS`)."""
    flags: dict[str, Any] = {}
    for key in ("model", "base_url", "temperature", "max_tokens", "timeout", "max_retries", "concurrency", "stream"):
        value = options.raw(key)
        if value is not None and value != "":
            flags[key] = value
    backend = options.text("llm", "live") or "live"
    recorded = None
    if backend.startswith(RECORDED_PREFIX):
        recorded = backend[len(RECORDED_PREFIX):].strip()
        if not recorded:
            raise ConfigError(f"{options.oracle} oracle: llm=recorded:SESSION needs a session id or path")
    elif backend != "live":
        raise ConfigError(f"{options.oracle} oracle: llm must be 'live' or 'recorded:SESSION', not {backend!r}")
    return LLMSettings(
        flags=flags,
        api_key_env=options.text("api_key_env"),
        recorded=recorded,
        strict_replay=options.boolean("strict_replay", True),
    )


def make_backend(settings: LLMSettings, env: Mapping[str, str] | None = None) -> LLMBackend:
    """A live client (settings < environment < options), or a replay of a recorded session."""
    env = os.environ if env is None else env
    if settings.recorded is not None:
        from csro_tui.oracles.llm.recorded import RecordedLLM

        return RecordedLLM(load_recorded_calls(settings.recorded, env=env), strict=settings.strict_replay)
    flags = dict(settings.flags)
    if settings.api_key_env:
        key = env.get(settings.api_key_env)
        if not key:
            raise ConfigError(f"environment variable {settings.api_key_env} (named by api_key_env) is not set")
        flags["api_key"] = key
    return LLMClient(LLMConfig.from_sources(flags=flags, env=env))


def backend_concurrency(backend: LLMBackend) -> int:
    """Calls an oracle may have in flight: the client's limit; 1 when replaying (order matters)."""
    config = getattr(backend, "config", None)
    if isinstance(backend, LLMClient) and config is not None:
        return max(1, int(config.concurrency))
    return 1


def load_recorded_calls(reference: str | os.PathLike[str], env: Mapping[str, str] | None = None) -> list[LLMCall]:
    """Every LLM call a session recorded, in the order the oracles made them.

    `reference` is a session directory, its events file, or a session id
    under $CSRO_SESSIONS_DIR (default ./sessions).  Calls come from the
    oracle's proposals (not the reviewers' edits) and from failed oracle
    attempts, in event order.
    """
    from csro_tui.sessions.store import SessionStore, default_sessions_root

    store = SessionStore(default_sessions_root(env))
    log = store.read(Path(reference) if Path(reference).exists() else str(reference))
    calls: list[LLMCall] = []
    for event in log.events:
        records: Sequence[Any] = ()
        if event.TYPE == "proposal_created" and getattr(event, "edited_from", None) is None:
            records = event.proposal.llm_calls or ()
        elif event.TYPE == "oracle_failed":
            records = getattr(event, "llm_calls", None) or ()
        for record in records:
            calls.append(LLMCall.from_dict(record))
    if not calls:
        raise SessionError(f"session {reference} recorded no LLM calls to replay")
    return calls


# --------------------------------------------------------------------- budget and calls
class CallBudget:
    """A count of LLM calls still allowed; safe to share between threads."""

    def __init__(self, calls: int) -> None:
        self.total = calls
        self._left = calls
        self._lock = threading.Lock()

    def take(self) -> bool:
        """Use one call if any is left."""
        with self._lock:
            if self._left <= 0:
                return False
            self._left -= 1
            return True

    @property
    def used(self) -> int:
        with self._lock:
            return self.total - self._left

    @property
    def left(self) -> int:
        with self._lock:
            return self._left


def split_budget(total: int, parts: int) -> list[int]:
    """`total` calls shared by `parts` slots as evenly as possible, earlier slots first."""
    base, extra = divmod(total, parts)
    return [base + (1 if index < extra else 0) for index in range(parts)]


def call_record(call: LLMCall | None) -> list[dict[str, Any]]:
    """[call.to_dict()] or [] (a failed call may have no record)."""
    return [call.to_dict()] if call is not None else []


def attach_calls(error: BaseException, calls: Sequence[dict[str, Any]]) -> BaseException:
    """Give an error the calls made before it, so the engine can record them."""
    error.llm_calls = list(calls)  # type: ignore[attr-defined]
    return error


def run_in_parallel(tasks: Sequence[Callable[[], T]], workers: int) -> list[T | BaseException]:
    """Run `tasks` with up to `workers` threads; results (or raised errors) in task order."""

    def guarded(task: Callable[[], T]) -> T | BaseException:
        try:
            return task()
        except Exception as error:  # noqa: BLE001 - handed back to the caller, in order
            return error

    if workers <= 1 or len(tasks) <= 1:
        return [guarded(task) for task in tasks]
    with ThreadPoolExecutor(max_workers=min(workers, len(tasks)), thread_name_prefix="llm-oracle") as pool:
        return list(pool.map(guarded, tasks))


# --------------------------------------------------------------------- code from replies
def validation_reason(source: str) -> str | None:
    """Why `source` is not a valid policy module (static checks), or None."""
    from csro_tui.policies.validation import validate_source

    issues = validate_source(source)
    if not issues:
        return None
    shown = "; ".join(str(issue) for issue in issues[:_MAX_ISSUES_SHOWN])
    more = len(issues) - _MAX_ISSUES_SHOWN
    return f"invalid code: {shown}" + (f" (and {more} more)" if more > 0 else "")


def code_from_reply(reply: str, finish_reason: str | None = None, spec: Any = None) -> tuple[str | None, str | None]:
    """(valid source, None) or (None, why the reply holds no usable module, with advice on the fix)."""
    try:
        source = extract_code(reply)
    except NoCodeError as error:
        reason = str(error)
    else:
        reason = validation_reason(source)
        if reason is None:
            return source, None
    if finish_reason == "length":
        reason += " (the reply was cut off at max_tokens)"
    hint = failure_hint(reason, spec)
    return None, reason + (f". {hint}" if hint else "")


def reply_prose(reply: str, limit: int = 600) -> str:
    """The reply's text outside code fences (the model's explanation), shortened."""
    text = re.sub(r"(?ms)^ {0,3}(`{3,}|~{3,}).*?(^ {0,3}\1\s*$|\Z)", "", reply)
    text = re.sub(r"(?ms)^\s*<{5,}\s*SEARCH.*?>{5,}\s*REPLACE\s*$", "", text)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def explanation_lines(reply: str) -> list[str]:
    """The rationale's closing line quoting the model's explanation; none when it gave none."""
    explanation = reply_prose(reply)
    return [f"Explanation given in the reply: {explanation}"] if explanation else []


def follow_up(messages: list[dict[str, str]], reply: str, answer: str) -> list[dict[str, str]]:
    """The conversation continued: the model's `reply`, then our `answer` to it (a new list)."""
    return messages + [
        {"role": "assistant", "content": reply},
        {"role": "user", "content": answer},
    ]


@dataclass
class CodeAttempt:
    """One reply in a code request: usable source, or why not."""

    reply: str
    source: str | None
    reason: str | None


@dataclass
class CodeRequest:
    """How a `request_code` conversation went."""

    source: str | None = None
    reply: str = ""  # the reply the source came from
    attempts: list[CodeAttempt] = field(default_factory=list)
    calls: list[dict[str, Any]] = field(default_factory=list)
    error: LLMError | None = None  # the call that failed for good, if one did

    @property
    def failures(self) -> list[str]:
        return [a.reason for a in self.attempts if a.reason]


def request_code(
    backend: LLMBackend,
    messages: list[dict[str, str]],
    *,
    purpose: str,
    budget: CallBudget,
    cancel: threading.Event | None = None,
    spec: Any = None,
) -> CodeRequest:
    """Ask until a reply holds a valid policy module or `budget` runs out.

    After an unusable reply the model sees `messages`, its last reply and
    `RETRY_MESSAGE` with the reason (and advice for `spec`'s game); only
    the latest failed reply is kept, so retries never outgrow the context.
    An `LLMError` (after the client's own retries) ends the request; it is
    kept in `error`, the failed call in `calls`.  A cancelled call is
    raised, so a stopping engine stops.
    """
    result = CodeRequest()
    conversation = list(messages)
    while budget.take():
        try:
            call = backend.complete(conversation, purpose=purpose, cancel=cancel)
        except LLMError as error:
            result.calls += call_record(error.call)
            if error.kind == "cancelled":
                raise attach_calls(error, result.calls)
            result.error = error
            return result
        result.calls.append(call.to_dict())
        source, reason = code_from_reply(call.response, call.finish_reason, spec)
        result.attempts.append(CodeAttempt(call.response, source, reason))
        if source is not None:
            result.source, result.reply = source, call.response
            return result
        conversation = follow_up(messages, call.response, RETRY_MESSAGE.format(reason=reason))
    return result


# --------------------------------------------------------------------- previews
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


def preview_feedback(
    preview: Preview,
    names: Mapping[str, str] | None = None,
    notes: str = "",
    *,
    spec: Any = None,
    weights: Mapping[str, float] | None = None,
    threshold: float | None = None,
) -> EvaluationFeedback:
    """What the model is told about a preview.

    Payoffs by opponent name, or the failure with its traceback and advice
    on the fix (`hints.failure_hint`); a copy of a known policy said
    plainly; the opponents it loses to, heaviest first; and, with a
    `threshold`, whether it is an improvement by the gate's rule
    (`Preview.shortfall`) - then `notes`.
    """
    feedback = EvaluationFeedback.from_preview(preview, names)
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


def failure_text(preview: Preview) -> str:
    """One line about a failed preview."""
    if preview.failure is not None:
        return preview.failure.summary()
    return "no payoff could be measured"


# --------------------------------------------------------------------- opponents
def source_hash(source: str) -> str:
    return hashlib.sha256(source.encode("utf-8")).hexdigest()


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


def ranked_members(context: OracleContext) -> list[tuple[PolicyRecord, float]]:
    """Population members with their meta-strategy weight, heaviest first (ties: population order)."""
    weights = list(context.meta_strategy) + [0.0] * (len(context.population) - len(context.meta_strategy))
    order = sorted(range(len(context.population)), key=lambda i: (-weights[i], i))
    return [(context.population[i], float(weights[i])) for i in order]


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


def member_weights(context: OracleContext) -> dict[str, float]:
    """Policy id -> meta-strategy weight."""
    return {m.id: float(w) for m, w in zip(context.population, context.meta_strategy)}


def mixture_text(context: OracleContext, describer: MixtureDescriber) -> str:
    """How the opponent mixture plays, for the prompt ("" when the game has no such description)."""
    return describer.describe(context.spec, context.population, context.meta_strategy)


def prompt_sizes(calls: Sequence[Mapping[str, Any]]) -> str:
    """"prompts ~1,234-2,345 tokens" over recorded calls (estimated), for rationales; "" without calls."""
    sizes = [int(c.get("prompt_estimated_tokens") or 0) for c in calls if c.get("prompt_estimated_tokens")]
    if not sizes:
        return ""
    low, high = min(sizes), max(sizes)
    span = f"{low:,}" if low == high else f"{low:,}-{high:,}"
    return f"prompt{'s' if len(sizes) > 1 else ''} ~{span} tokens (estimated)"


def member_names(context: OracleContext) -> dict[str, str]:
    """Policy id -> "name (id)", for feedback the model reads."""
    return {m.id: f"{m.name} ({m.id})" for m in context.population}


def rejection_pairs(context: OracleContext) -> list[tuple[Any, str]]:
    """The reviewer's rejections, newest last, as the prompt builders take them."""
    return [(proposal, reason) for proposal, reason in context.rejections]


def score_text(score: float | None) -> str:
    return "failed" if score is None else f"{score:+.3f}"
