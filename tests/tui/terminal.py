"""Waiting on a csro process run in a pseudo-terminal (bounded; never a timing assertion)."""

from __future__ import annotations

import json
import time
from pathlib import Path

WAIT = 180.0  # seconds: a generous bound on a loaded 2-core machine, never a timing assertion


def recorded_events(sessions: Path) -> list[dict]:
    logs = list(sessions.glob("*/events.jsonl"))
    if not logs:
        return []
    return [json.loads(line) for line in logs[0].read_text().splitlines() if line.strip()]


def wait_for(condition, what: str) -> None:
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.2)
    raise AssertionError(f"gave up waiting for {what}")
