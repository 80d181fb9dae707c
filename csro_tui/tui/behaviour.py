"""What the behaviour screens need from a session: the game, a snapshot of its state,
and where to record the profiles they compute (csro_tui/profiles/).

A live run records through `Engine.record_profile` (any thread); a session only
viewed records nothing (its log belongs to whoever may resume it)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable


@dataclass
class BehaviourContext:
    spec: Any
    state: Callable[[], Any]  # a SessionState snapshot
    record: Callable[[Any], Any] | None = None  # records a BehaviourProfiled event

    def record_all(self, events) -> None:
        if self.record is None:
            return
        for event in events:
            self.record(event)


def live_context(app: Any) -> BehaviourContext | None:
    """The context of the app's live run, or None when there is none."""
    live = getattr(app, "live", None)
    engine = getattr(live, "engine", None)
    if engine is None:
        return None
    return BehaviourContext(engine.spec, engine.snapshot, engine.record_profile)


def events_context(events: list) -> BehaviourContext:
    """A recorded session's context (nothing is recorded)."""
    from csro_tui.games.registry import get_game
    from csro_tui.sessions.state import fold

    state = fold(events)
    return BehaviourContext(get_game(state.started.game), lambda: state, None)
