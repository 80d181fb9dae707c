"""The person as a Reviewer: the engine thread blocks here until a decision arrives.

No textual import: the app passes `on_review`, a thread-safe callable that
shows the review (it posts a message to the app), and later calls `answer`.
"""

from __future__ import annotations

import queue
from typing import Any, Callable

from csro_tui.tui.model import ReviewDecision


class ReviewCancelled(Exception):
    """The app closed (or the work was cancelled) while a review was pending."""


class QueueReviewer:
    def __init__(self, on_review: Callable[[Any], None], to_decision: Callable[[ReviewDecision, Any], Any]):
        self._on_review = on_review
        self._to_decision = to_decision
        self._answers: queue.Queue[ReviewDecision] = queue.Queue()
        self.pending: Any = None

    def decide(self, review: Any) -> Any:
        """Called on the engine thread; returns the engine's Decision."""
        self.pending = review
        try:
            self._on_review(review)
            decision = self._answers.get()
        finally:
            self.pending = None
        if decision.kind == "cancel":
            raise ReviewCancelled("review cancelled")
        return self._to_decision(decision, review)

    def answer(self, decision: ReviewDecision) -> None:
        """Called on the UI thread."""
        self._answers.put(decision)

    def cancel(self) -> None:
        if self.pending is not None:
            self._answers.put(ReviewDecision("cancel"))
