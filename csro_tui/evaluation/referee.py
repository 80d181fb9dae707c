"""The referee: plays sampled matches between participants.

The referee is trusted.  It owns every OpenSpiel state, samples chance
outcomes and the distributions policies return, applies the game's automatic
actions, steps benchmark bots in-process and sends each code policy only its
own observations, through that policy's sandbox host.

Speed comes from lockstep: all episodes advance together, and at each step
every code participant gets one batched `host.act` call covering every live
episode in which it must act.  The cost of crossing the process boundary is
paid once per step, not once per move.  `play_matches` goes further and
plays several matches in one lockstep: a code participant that appears in
several of them gets one host for all (episode ids are unique), so
evaluating a policy against 43 bots starts one sandbox, not 43.

Seats and seeds.  Episodes come in pairs that share one seed: in the first
of a pair participant `a` sits in seat 0, in the second in seat 1.  Sharing
the seed deals the same cards to the seats in both episodes (duplicate
format), which cancels much of the luck of the deal; the standard error is
therefore computed over pair means.  An odd episode count is rounded up to
the next even number so both seats are played equally often.  Everything
an episode uses (chance, sampling of returned distributions, the policies'
and bots' own seeds) derives from its recorded seed, so identical seeds give
identical results.

Seat-fixed matches (`MatchJob.seat` 0 or 1, for two populations): `a` plays
only that seat and `b` the other, every episode from a seed of its own
(`sampling.episode_plan`); the result is a's return in that seat, its
standard error over episodes (there are no pairs), `episodes` exactly as
asked.  Failures, time limits, waves and progress are the same.

Memory.  A host plays at most `limits.episodes_per_host()` episodes at once
(what its memory limit holds at `episode_memory_mb` each), so the limit a
policy's author reads holds per episode.  `play_matches` plays larger sets of
jobs in waves of whole matches, one lockstep after another, each host kept
from wave to wave (a policy that failed fails its later matches at once).

Failures.  A PolicyFailure never escapes: the host is killed (by the
sandbox), and every match that used that host ends with `failure` set; the
other matches of the lockstep play on.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Sequence

from csro_tui.evaluation import rrps_lockstep
from csro_tui.evaluation.lockstep import Lockstep, create_episodes
from csro_tui.evaluation.participants import CodePolicy, Participant
from csro_tui.evaluation.results import MatchResult
from csro_tui.evaluation.sampling import episode_seeds, episode_streams, sample, sample_chance, seed_native_rng  # re-exported: the play screen replays episodes with them

if TYPE_CHECKING:
    from csro_tui.games.base import GameSpec

__all__ = [
    "DEFAULT_MATCH_SECONDS",
    "MatchJob",
    "create_episodes",
    "episode_seeds",
    "episode_streams",
    "play_match",
    "play_matches",
    "sample",
    "sample_chance",
    "seed_native_rng",
]

# progress(done, total), in matches; `done` grows fractionally as moves are played.
Progress = Callable[[float, int], None]
# host_factory(source, game_info, name=..., limits=...) -> a PolicyHost-like object
HostFactory = Callable[..., Any]

# The wall-time limit of one match when neither the caller nor the sandbox
# limits give one; generous, because thousands of episodes legitimately take
# long (slow moves are caught much earlier by the host's per-batch limits).
DEFAULT_MATCH_SECONDS = 600.0


@dataclass(frozen=True)
class MatchJob:
    """One matchup: a against b, `episodes` episodes from `seed` (sampled games).

    The referee's job, over participants; the engine's is `records.MatchJob`
    (over population records, with `exact`), and `seat` means the same in
    both: None, seats swapped and averaged; 0 or 1, a plays only that seat.
    """

    a: Participant
    b: Participant
    episodes: int = 0
    seed: int = 0
    seat: int | None = None

    def __post_init__(self) -> None:
        if self.seat not in (None, 0, 1):
            raise ValueError(f"a match's seat is 0, 1 or None (both, swapped), not {self.seat!r}")

    @property
    def played_episodes(self) -> int:
        """Episodes it plays: seat-swapped matches round up to whole pairs."""
        return self.episodes if self.seat is not None else 2 * ((self.episodes + 1) // 2)


def play_match(
    spec: "GameSpec",
    a: Participant,
    b: Participant,
    *,
    episodes: int,
    seed: int,
    limits: Any = None,
    progress: Progress | None = None,
    match_seconds: float | None = None,
    host_factory: HostFactory | None = None,
    seat: int | None = None,
) -> MatchResult:
    """Play `episodes` episodes of a against b, seats swapped (or a in `seat`
    only, b in the other); a's view of it.

    A code policy failure ends the match and is returned in
    `MatchResult.failure` (never raised); so is overrunning the per-match
    wall-time limit, charged to the code side that used the most time.
    """
    return play_matches(
        spec,
        [MatchJob(a, b, episodes, seed, seat)],
        limits=limits,
        progress=progress,
        match_seconds=match_seconds,
        host_factory=host_factory,
    )[0]


def play_matches(
    spec: "GameSpec",
    jobs: Sequence[MatchJob],
    *,
    limits: Any = None,
    progress: Progress | None = None,
    on_result: Callable[[int, MatchResult], None] | None = None,
    match_seconds: float | None = None,
    host_factory: HostFactory | None = None,
    stop_at: tuple[float, str] | None = None,
) -> list[MatchResult]:
    """Play every job in one lockstep; results in job order.

    Each job's result is exactly what `play_match` gives for it alone (for
    bots that keep their randomness to themselves, as the games layer's RRPS
    agents do).  A code participant that appears in several jobs is served
    by one host.
    `on_result(index, result)` is called as each match ends.  The wall-time
    limit (`match_seconds`, else `limits.match_seconds`, else 600 s) is per
    match: a lockstep may take that times the number of its jobs.  Jobs are
    played in waves (`plan_waves`) so that no host holds more episodes at
    once than its memory allows.  `stop_at` (time.monotonic(), message):
    a deadline of the whole call (an evaluation's cap), also while a host is
    waited for; matches still open then end with a timeout of that message.
    """
    for job in jobs:
        if job.episodes < 1:
            raise ValueError("a match needs at least one episode")
    if not jobs:
        return []
    limit = _match_time_limit(match_seconds, limits)
    waves = plan_waves(jobs, episodes_per_host(limits))
    carried: dict = {}  # participant -> its _SharedHost, from wave to wave
    results: list[MatchResult | None] = [None] * len(jobs)
    seed_native_rng(jobs[0].seed)
    try:
        for wave in waves:
            wave_jobs = [jobs[i] for i in wave]
            # RRPS between code policies needs no OpenSpiel state (rrps_lockstep's doc).
            kind = rrps_lockstep.RRPSLockstep if rrps_lockstep.applies(spec, wave_jobs) else Lockstep
            lockstep = kind(
                spec, wave_jobs, limits, _wave_progress(progress, results, wave, len(jobs)),
                _wave_results(on_result, wave), host_factory, carried=carried,
            )
            lockstep.stop_at = stop_at
            try:
                lockstep.start()
                lockstep.run(time.monotonic() + limit * len(wave_jobs), limit)
            finally:
                lockstep.close()  # the hosts stay open for the next wave (ends what they still hold)
            for index, result in zip(wave, lockstep.results()):
                results[index] = result
    finally:
        for host in carried.values():
            if host.host is not None:
                host.host.close()
    return results


def episodes_per_host(limits: Any) -> int:
    """How many episodes a host may hold at once under `limits` (the sandbox's default when None)."""
    per_host = getattr(limits, "episodes_per_host", None)
    if per_host is None:
        from csro_tui.sandbox.sandbox import SandboxLimits  # start-up time: importing it loads orjson, rich

        per_host = SandboxLimits().episodes_per_host
    return per_host()


def plan_waves(jobs: Sequence[MatchJob], per_host: int) -> list[list[int]]:
    """Job indices in waves, in order: a job joins the current wave while each
    code participant's episodes in it stay within `per_host` (a job larger
    than that on its own gets a wave to itself: a match is never split)."""
    waves: list[list[int]] = []
    held: dict = {}
    for index, job in enumerate(jobs):
        episodes = job.played_episodes
        code = {p for p in (job.a, job.b) if isinstance(p, CodePolicy)}
        if waves and any(held.get(p, 0) + episodes * ((job.a == p) + (job.b == p)) > per_host for p in code):
            waves.append([])
            held = {}
        if not waves:
            waves.append([])
        waves[-1].append(index)
        for p in code:
            held[p] = held.get(p, 0) + episodes * ((job.a == p) + (job.b == p))
    return waves


def _wave_progress(progress: "Progress | None", results: list, wave: list[int], total: int):
    if progress is None:
        return None
    return lambda done, _count: progress(sum(1 for r in results if r is not None) + done, total)


def _wave_results(on_result, wave: list[int]):
    if on_result is None:
        return None
    return lambda index, result: on_result(wave[index], result)


def _match_time_limit(match_seconds: float | None, limits: Any) -> float:
    if match_seconds is not None:
        return match_seconds
    from_limits = getattr(limits, "match_seconds", None)
    return float(from_limits) if from_limits else DEFAULT_MATCH_SECONDS


# ---------------------------------------------------------------- internals
