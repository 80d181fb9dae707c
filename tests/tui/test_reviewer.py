"""The TUI's Reviewer: the engine thread blocks until the person (or a stop) decides."""

from __future__ import annotations

import threading

from csro_tui.records import Decision
from csro_tui.tui.adapt import engine_decision
from csro_tui.tui.model import ReviewDecision
from csro_tui.tui.reviewer import QueueReviewer


class Request:
    def __init__(self) -> None:
        self.cancel = threading.Event()


def run_decide(reviewer, request):
    result = {}
    thread = threading.Thread(target=lambda: result.setdefault("decision", reviewer.decide(request)))
    thread.start()
    return thread, result


def test_decide_blocks_until_answered():
    shown = threading.Event()
    reviewer = QueueReviewer(lambda review: shown.set(), engine_decision)
    thread, result = run_decide(reviewer, Request())
    assert shown.wait(10)
    assert thread.is_alive() and reviewer.pending is not None
    reviewer.answer(ReviewDecision("reject", reason="too timid"))
    thread.join(10)
    assert result["decision"] == Decision.reject("too timid")
    assert reviewer.pending is None


def test_engine_stop_releases_a_pending_review():
    shown = threading.Event()
    reviewer = QueueReviewer(lambda review: shown.set(), engine_decision)
    request = Request()
    thread, result = run_decide(reviewer, request)
    assert shown.wait(10)
    request.cancel.set()
    thread.join(10)
    assert not thread.is_alive()
    assert result["decision"] is None  # interrupted: the engine records no decision


def test_cancel_releases_and_reset_rearms():
    shown = threading.Event()
    reviewer = QueueReviewer(lambda review: shown.set(), engine_decision)
    thread, _ = run_decide(reviewer, Request())
    assert shown.wait(10)
    reviewer.cancel()
    thread.join(10)
    assert not thread.is_alive()
    reviewer.reset()
    shown.clear()
    thread, result = run_decide(reviewer, Request())
    assert shown.wait(10)
    assert thread.is_alive()  # no stale cancel
    reviewer.answer(ReviewDecision("accept"))
    thread.join(10)
    assert result["decision"] == Decision.accept()
