"""A recorded session's dashboard after any step of its timeline, at a cost bounded by
what changed rather than by the session's size (no textual import).

Folding a 200-member Leduc session from its first event took ~1 s per step and the
dashboard another 0.5 s; here the fold moves forward from where it is, or from the
nearest copy of the state kept every CHECKPOINT_EVERY events, and the dashboard's
payoff cells are made once per record (`adapt.dashboard_data`'s cache).

Not thread-safe: one worker at a time folds (the timeline screen runs one, and starts
the next for the newest step asked for only when it has finished).
"""

from __future__ import annotations

from typing import Any

from csro_tui.sessions.state import SessionState
from csro_tui.tui import adapt
from csro_tui.tui.model import DashboardData

CHECKPOINT_EVERY = 50  # events between kept states: a jump folds fewer than this many


class TimelineFolds:
    def __init__(self, events: list[Any]) -> None:
        self.events = events
        self._checkpoints: dict[int, SessionState] = {0: SessionState()}
        self._state = SessionState()
        self._step = 0
        self._cells = adapt.PayoffCells()
        # the whole session (its proposals, its seats), never folded further
        self.final: SessionState = self.state_at(len(events)).copy()
        seats = adapt.member_seats(self.final)
        self.lines = [adapt.event_line(event, seats) for event in events]

    def state_at(self, step: int) -> SessionState:
        """The state after the first `step` events; the returned state is folded further by the
        next call (copy it to keep it)."""
        step = max(0, min(step, len(self.events)))
        if step < self._step or step - self._step > CHECKPOINT_EVERY:
            base = max(k for k in self._checkpoints if k <= step)
            if not (self._step <= step and base <= self._step):  # else folding on from here is shorter
                self._state, self._step = self._checkpoints[base].copy(), base
        while self._step < step:
            self._state.apply(self.events[self._step])
            self._step += 1
            if self._step % CHECKPOINT_EVERY == 0 and self._step not in self._checkpoints:
                self._checkpoints[self._step] = self._state.copy()
        return self._state

    def dashboard_at(self, step: int) -> DashboardData:
        """The dashboard after the first `step` events."""
        state = self.state_at(step)
        return adapt.dashboard_data(state, log=self.lines[: self._step], cells=self._cells)

    def iteration_at(self, step: int) -> int | None:
        """The iteration the event at `step` belongs to (the last one started by then)."""
        for event in reversed(self.events[:step]):
            if event.TYPE == "iteration_started":
                return event.iteration
        return None
