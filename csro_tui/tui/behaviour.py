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
    return BehaviourContext(context.spec, lambda: seat_view(state(), seat, keep_meta=keep_meta), context.record)


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


# Profiles computed in this app's run, by (game, code, seed, seat): a recorded session's log is
# never written while it is only viewed (it belongs to whoever may resume it), and a profile
# read back from a log is slow to rebuild, so the diversity view opened again (another step of
# the timeline) takes them from here instead of profiling or parsing 200 members again.
_PROFILES: dict[tuple, Any] = {}


def remembered_profile(spec: Any, participant: Any, **options: Any) -> Any:
    """`profiles.compute.profile_policy`, remembered for the app's run (deterministic: same code, seed, seat)."""
    # imported when used, not at the top: keeps csro's start-up fast
    from csro_tui.profiles.compute import profile_policy

    key = (getattr(spec, "name", ""), participant.source_hash, tuple(sorted(options.items())))
    if key not in _PROFILES:
        _PROFILES[key] = profile_policy(spec, participant, **options)
    return _PROFILES[key]


def events_context(events: list, *, fold_later: bool = False) -> BehaviourContext:
    """A recorded session's context (nothing is recorded).  `fold_later`: the events are folded
    once, when the state is first asked for (a screen's worker: folding 2,000 Leduc events
    took 0.3-0.9 s on the UI thread); the asker must catch what the fold raises."""
    # imported when used, not at the top: keeps csro's start-up fast
    from csro_tui.games.registry import get_game
    from csro_tui.sessions.state import fold

    first = events[0]
    if not fold_later or getattr(first, "TYPE", "") != "session_started":
        state = fold(events)
        return BehaviourContext(get_game(state.started.game), lambda: state, None)
    folded: list = []

    def state() -> Any:
        if not folded:
            folded.append(fold(events))
        return folded[0]

    return BehaviourContext(get_game(first.game), state, None)
