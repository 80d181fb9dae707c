"""The person as a Reviewer: the engine thread blocks here until a decision arrives.

No textual import: the app passes `on_review`, a thread-safe callable that
shows the review (it posts to the app), and later calls `answer` from the UI
thread.  While waiting, the engine's own stop request (`review.cancel`) and
`cancel()` both release the engine thread.
"""

from __future__ import annotations

import queue
import threading
from typing import Any, Callable

from csro_tui.tui.model import ReviewDecision

POLL_SECONDS = 0.1


class QueueReviewer:
    name = "tui"
    # A person reads while the preview plays: the engine asks as soon as validation
    # passes and streams the preview's figures (ReviewRequest.live_preview).
    progressive = True

    def __init__(self, on_review: Callable[[Any], None], to_decision: Callable[[ReviewDecision, Any], Any]):
        self._on_review = on_review
        self._to_decision = to_decision
        self._answers: queue.Queue[ReviewDecision] = queue.Queue()
        self._cancelled = threading.Event()
        self.pending: Any = None

    def decide(self, review: Any) -> Any:
        """Called on the engine thread; the engine's Decision, or None when cancelled.

        None tells the engine the review was interrupted by a stop, so nothing
        is recorded as the person's decision.
        """
        self.pending = review
        stop = getattr(review, "cancel", None)
        try:
            self._on_review(review)
            while True:
                if self._cancelled.is_set() or (stop is not None and stop.is_set()):
                    decision = ReviewDecision("cancel")
                    break
                try:
                    decision = self._answers.get(timeout=POLL_SECONDS)
                    break
                except queue.Empty:
                    continue
        finally:
            self.pending = None
        if decision.kind == "cancel":
            return None
        return self._to_decision(decision, review)

    def answer(self, decision: ReviewDecision) -> None:
        """Called on the UI thread."""
        self._answers.put(decision)

    def cancel(self) -> None:
        """Release a pending review (the app closes or the work is cancelled)."""
        self._cancelled.set()

    def reset(self) -> None:
        """Accept reviews again after a cancelled run of iterations."""
        self._cancelled.clear()
        while not self._answers.empty():
            self._answers.get_nowait()
