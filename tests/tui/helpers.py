"""Waiting for the engine thread in pilot tests (bounded; never a timing assertion)."""

from __future__ import annotations

from typing import Callable

MAX_WAIT_STEPS = 1200  # x 0.05 s of app time: a generous bound for slow machines


async def wait_until(pilot, condition: Callable[[], bool], what: str, steps: int = MAX_WAIT_STEPS) -> None:
    for _ in range(steps):
        if condition():
            return
        await pilot.pause(0.05)
    raise AssertionError(f"gave up waiting for {what}")


def notifications(app) -> list[str]:
    return [n.message for n in app._notifications]  # noqa: SLF001 - no public accessor
