"""Replay recorded LLM calls instead of calling a server.

A session log keeps every `LLMCall` (see `client.py`).  `RecordedLLM` hands
those records back, in order, to the same `complete(...)` calls that made
them, so a session can be re-run with no server and no key.

Matching: call N of the replay must have the same purpose as recorded call
N and, in strict mode (the default), the same messages.  If not, the replay
has diverged (the prompts, the population or the code changed) and
`complete` raises LLMError("bad_response", "recorded session diverged at
call N ...") rather than hand back a reply to a different question.  With
`strict=False` only purpose and order are matched, for re-running a session
under edited prompt templates.  A recorded failure is replayed as the same
`LLMError` kind and message.
"""

from __future__ import annotations

import threading
from typing import Any, Callable, Iterable, Mapping

from csro_tui.oracles.llm.client import LLMCall, LLMError, LLMUsage, check_messages, usage_of


class RecordedLLM:
    """A drop-in for `LLMClient` that replays `LLMCall` records in order."""

    def __init__(self, records: Iterable[LLMCall | Mapping[str, Any]], *, strict: bool = True) -> None:
        self._records = [r if isinstance(r, LLMCall) else LLMCall.from_dict(r) for r in records]
        self.strict = strict
        self._next = 0
        self._lock = threading.Lock()
        self._calls: list[LLMCall] = []

    @property
    def calls(self) -> list[LLMCall]:
        """The records replayed so far (a copy)."""
        with self._lock:
            return list(self._calls)

    @property
    def usage(self) -> LLMUsage:
        """Totals over the replayed records (as they were when recorded)."""
        return usage_of(self.calls)

    @property
    def remaining(self) -> int:
        """Records not replayed yet."""
        with self._lock:
            return len(self._records) - self._next

    def complete(
        self,
        messages: list[dict[str, Any]],
        *,
        purpose: str,
        on_text: Callable[[str], None] | None = None,
        cancel: threading.Event | None = None,
    ) -> LLMCall:
        """Return the next recorded call if it answers this request; see the module doc."""
        checked = check_messages(messages)
        if cancel is not None and cancel.is_set():
            raise LLMError("cancelled", "LLM call cancelled")
        with self._lock:
            number = self._next + 1
            if self._next >= len(self._records):
                raise LLMError(
                    "bad_response",
                    f"recorded session diverged at call {number}: only {len(self._records)} calls were recorded",
                )
            record = self._records[self._next]
            difference = self._difference(record, purpose, checked)
            if difference is not None:
                raise LLMError("bad_response", f"recorded session diverged at call {number}: {difference}")
            self._next += 1
            self._calls.append(record)
        if record.error is not None:
            raise LLMError(record.error_kind or "bad_response", record.error, call=record)
        if on_text is not None:
            on_text(record.response)
        return record

    def _difference(self, record: LLMCall, purpose: str, messages: list[dict[str, Any]]) -> str | None:
        """Why `record` does not answer this request, or None if it does."""
        if record.purpose != purpose:
            return f"expected a {record.purpose!r} call, got {purpose!r}"
        if not self.strict:
            return None
        recorded = [{"role": m.get("role"), "content": m.get("content")} for m in record.messages]
        if len(recorded) != len(messages):
            return f"{len(messages)} messages asked, {len(recorded)} recorded"
        for index, (old, new) in enumerate(zip(recorded, messages)):
            if old != new:
                return f"message {index} ({new['role']}) differs from the recording"
        return None
