"""Naming the policies to profile: a file, `seed:NAME`, a benchmark bot, or
`session:ID:MEMBER` (a member of a recorded session, by id or name)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from csro_tui.errors import CsroError, UnknownName
from csro_tui.evaluation.participants import CodePolicy, Participant, resolve_participant

if TYPE_CHECKING:
    from csro_tui.games.base import GameSpec

SESSION_PREFIX = "session:"


@dataclass(frozen=True)
class Named:
    participant: Participant
    session_seed: int | None = None  # the recorded session's master seed, when it came from one
    session_game: str | None = None
    # The member's payoff per benchmark bot as the session recorded it (sampled games: the
    # profile's row against the benchmark is this evaluation, reused, not replayed).
    benchmark_row: dict | None = None
    # Two populations: the member's seat, the only one it plays (its played profile too).
    seat: int | None = None


def resolve_policy(spec: "GameSpec", reference: str, sessions_dir: str | None = None) -> Named:
    if not reference.startswith(SESSION_PREFIX):
        return Named(resolve_participant(spec, reference))
    session_id, _, member = reference[len(SESSION_PREFIX):].rpartition(":")
    if not session_id or not member:
        raise CsroError(f"{reference!r}: a session member is named session:ID:MEMBER")
    # imported when used, not at the top: keeps csro's start-up fast
    from csro_tui.sessions.state import fold
    from csro_tui.sessions.store import SessionStore

    state = fold(SessionStore(sessions_dir).read(session_id).events)
    record = state.member(member) or next((m for m in state.population if m.name == member), None)
    if record is None:
        # imported when used, not at the top: keeps csro's start-up fast
        from csro_tui.names import did_you_mean

        known = [m.id for m in state.population]
        raise UnknownName(f"session {session_id} has no member {member!r}{did_you_mean(member, known)}; "
                          f"members: {', '.join(known) or 'none'}")
    seed = state.config.get("seed")
    benchmark = state.benchmark.get(record.id)
    return Named(CodePolicy(f"{session_id}:{record.id}", record.source),
                 int(seed) if isinstance(seed, int) else None,
                 state.started.game if state.started else None,
                 dict(benchmark.per_bot) if benchmark is not None and benchmark.failure is None else None,
                 record.seat if state.metagame.populations == 2 and record.seat in (0, 1) else None)


def profile_seed(session_seed: int | None, given: int | None) -> int:
    """The seed of a sampled profile: --seed, else one derived from the session's seed, else 0."""
    if given is not None:
        return given
    if session_seed is not None:
        # imported when used, not at the top: keeps csro's start-up fast
        from csro_tui.evaluation.sampling import derive

        return derive(session_seed, "behaviour-profile")
    return 0
