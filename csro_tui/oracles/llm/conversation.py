"""One model conversation that must end in a valid policy module.

`request_code`: each reply goes through `extract_code` and `validate_source`;
a reply without usable code is a failed attempt with a reason, and the reason
is sent back to the model while the call budget lasts.

Code from a model is untrusted input: nothing here executes it.  It is
parsed (`ast`) and validated statically; it only ever runs through
`context.preview`, i.e. in the sandbox.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass, field
from typing import Any

from csro_tui.oracles.candidates import attach_calls
from csro_tui.oracles.llm.calls import CallBudget, call_record
from csro_tui.oracles.llm.client import LLMBackend, LLMError
from csro_tui.oracles.llm.extract import NoCodeError, extract_code
from csro_tui.oracles.llm.hints import failure_hint
from csro_tui.sandbox.validation import validate_source


# Sent back to the model after a reply that held no usable policy module.
RETRY_MESSAGE = (
    "Your reply could not be used: {reason}.\n"
    "Reply again with the complete policy module in one ```python code block, "
    "following the policy contract exactly."
)


# How many validation issues a failure reason lists before "and N more".
_MAX_ISSUES_SHOWN = 3


def validation_reason(source: str) -> str | None:
    """Why `source` is not a valid policy module (static checks), or None."""
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

    def failed_code(self) -> tuple[str, str] | None:
        """(code, why it was refused) of the latest reply that held code but not a valid
        module, for a person to fix; None when no reply held code at all."""
        for attempt in reversed(self.attempts):
            code = code_in_reply(attempt.reply) if attempt.source is None else None
            if code:
                return code, attempt.reason or "invalid code"
        return None


def code_in_reply(reply: str) -> str | None:
    """The code a reply holds, valid or not (None: no code block at all)."""
    try:
        return extract_code(reply)
    except NoCodeError:
        return None


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
