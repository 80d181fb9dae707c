"""Budgets and concurrency of an oracle's LLM calls.

`CallBudget` counts the calls still allowed (shared between threads);
`split_budget` shares one between concurrent slots up front; `run_in_parallel`
runs slots on threads with results in task order; `call_record` is a call as
`Proposal.llm_calls` keeps it.
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Sequence, TypeVar

from csro_tui.oracles.llm.client import LLMCall


T = TypeVar("T")


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
