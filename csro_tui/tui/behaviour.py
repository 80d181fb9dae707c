"""What the behaviour screens need from a session: the game, a snapshot of its state,
and where to record the profiles they compute (csro_tui/profiles/).

A live run records through `Engine.record_profile` (any thread); a session only
viewed records nothing (its log belongs to whoever may resume it)."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Callable

log = logging.getLogger(__name__)


@dataclass
class BehaviourContext:
    spec: Any
    state: Callable[[], Any]  # a SessionState snapshot
    record: Callable[[Any], Any] | None = None  # records a BehaviourProfiled event
    in_log: bool = True  # `record` writes to the session's log (a live run), not only to memory

    def record_all(self, events) -> None:
        """Record what was computed; a session closed meanwhile (its writer gone) keeps
        nothing and loses nothing: the profiles are computed again when next asked."""
        if self.record is None:
            return
        for event in events:
            try:
                self.record(event)
            except Exception:  # noqa: BLE001 - recording is a convenience here, never a crash
                log.info("behaviour profile of %s not recorded: the session is closed", event.policy_id)
                return


def seat_context(context: BehaviourContext, seat: int | None, *, keep_meta: bool = True) -> BehaviourContext:
    """Two populations: the context of one seat's population (members are ranked and
    clustered within their own population, issue 23); `keep_meta` as in
    `adapt.seat_view`.  A seat-less member or one population: `context` itself."""
    if seat not in (0, 1):
        return context
    # imported when used, not at the top: keeps csro's start-up fast
    from csro_tui.tui.adapt import seat_view

    state = context.state
    return BehaviourContext(context.spec, lambda: seat_view(state(), seat, keep_meta=keep_meta), context.record,
                            context.in_log)


def deliver(widget: Any, callback: Callable, *args: Any) -> None:
    """Hand a worker's result to the UI thread, unless the widget or the app has gone
    meanwhile (a thread worker cannot be cancelled and may finish after its screen)."""
    try:
        if widget.is_attached:
            widget.app.call_from_thread(callback, *args)
    except Exception:  # noqa: BLE001 - the app is shutting down
        pass


def live_context(app: Any) -> BehaviourContext | None:
    """The context of the app's live run, or None when there is none."""
    live = getattr(app, "live", None)
    engine = getattr(live, "engine", None)
    if engine is None:
        return None
    return BehaviourContext(engine.spec, engine.snapshot, engine.record_profile)


# Profiles computed while viewing a recorded session, by session id then policy id: never
# written to its log (it belongs to whoever may resume it), but kept while the app runs, so
# that the diversity view opened again (another step of the timeline) reuses them instead of
# profiling 200 members again (a profile is checked against the member's code before reuse).
_VIEWED_PROFILES: dict[str, dict[str, Any]] = {}


def events_context(events: list) -> BehaviourContext:
    """A recorded session's context (nothing is recorded in its log)."""
    # imported when used, not at the top: keeps csro's start-up fast
    from csro_tui.games.registry import get_game
    from csro_tui.sessions.state import fold

    state = fold(events)
    viewed = _VIEWED_PROFILES.setdefault(state.started.session_id if state.started else "", {})
    for policy_id, event in viewed.items():
        state.profiles.setdefault(policy_id, event)
    return BehaviourContext(get_game(state.started.game), lambda: state,
                            lambda event: viewed.__setitem__(event.policy_id, event), in_log=False)
