"""Many matchups at once: a process pool of referees.

Every job is a pair of picklable participant descriptions; each worker
process (spawned, so no state is inherited) rebuilds the game spec once and
runs the referee, whose code policies run in their own sandbox hosts.
Results come back in job order.  Games with exact evaluation skip sampling:
their entries are computed from tables in this process, each participant
tabularised once.
"""

from __future__ import annotations

import multiprocessing
import os
import queue
import signal
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Sequence

from csro_tui.evaluation.participants import Participant
from csro_tui.evaluation.referee import play_match
from csro_tui.evaluation.results import MatchResult

if TYPE_CHECKING:
    from csro_tui.games.base import GameSpec

# progress(done_jobs, total_jobs)
JobProgress = Callable[[int, int], None]


@dataclass(frozen=True)
class MatchJob:
    """One matchup: a against b, `episodes` episodes from `seed` (sampled games)."""

    a: Participant
    b: Participant
    episodes: int = 0
    seed: int = 0


def evaluate_matchups(
    spec: "GameSpec",
    jobs: Sequence[MatchJob],
    *,
    workers: int | None = None,
    progress: JobProgress | None = None,
    limits: Any = None,
    exact: bool | None = None,
) -> list[MatchResult]:
    """Play (or compute exactly) every job; results in job order.

    `exact` defaults to `spec.exact`.  `workers` defaults to the CPU count;
    with one worker, or one job, matches run in this process (their code
    policies still run in sandbox hosts).  A policy failure is reported in its
    job's `MatchResult.failure`; other jobs carry on.
    """
    jobs = list(jobs)
    if not jobs:
        return []
    if getattr(spec, "exact", False) if exact is None else exact:
        return _evaluate_exactly(spec, jobs, progress, limits)
    count = min(workers or os.cpu_count() or 1, len(jobs))
    if count <= 1:
        return _evaluate_here(spec, jobs, progress, limits)
    return _evaluate_in_pool(spec, jobs, count, progress, limits)


def _evaluate_exactly(spec, jobs, progress, limits) -> list[MatchResult]:
    from csro_tui.evaluation.exact import exact_payoff

    results = []
    for done, job in enumerate(jobs, start=1):
        results.append(exact_payoff(spec, job.a, job.b, limits=limits))
        if progress is not None:
            progress(done, len(jobs))
    return results


def _evaluate_here(spec, jobs, progress, limits) -> list[MatchResult]:
    results = []
    for done, job in enumerate(jobs, start=1):
        results.append(_play(spec, job, limits))
        if progress is not None:
            progress(done, len(jobs))
    return results


def _play(spec, job: MatchJob, limits) -> MatchResult:
    return play_match(spec, job.a, job.b, episodes=job.episodes, seed=job.seed, limits=limits)


def _evaluate_in_pool(spec, jobs, count, progress, limits) -> list[MatchResult]:
    context = multiprocessing.get_context("spawn")
    results: list[MatchResult | None] = [None] * len(jobs)
    finished: "queue.Queue[tuple[int, bool, Any]]" = queue.Queue()
    pool = context.Pool(count, initializer=_worker_init, initargs=(spec,))
    try:
        for index, job in enumerate(jobs):
            pool.apply_async(
                _worker_play,
                (job, limits),
                callback=lambda value, index=index: finished.put((index, True, value)),
                error_callback=lambda error, index=index: finished.put((index, False, error)),
            )
        for done in range(1, len(jobs) + 1):
            index, succeeded, value = _next(finished)
            if not succeeded:
                raise value
            results[index] = MatchResult.from_dict(value)
            if progress is not None:
                progress(done, len(jobs))
        pool.close()
    except BaseException:
        pool.terminate()  # interrupted, or a worker raised: stop the rest now
        raise
    finally:
        pool.join()
    return results  # type: ignore[return-value]


def _next(finished: "queue.Queue") -> Any:
    """The next finished job; waits in short slices so Ctrl-C gets through."""
    while True:
        try:
            return finished.get(timeout=0.2)
        except queue.Empty:
            continue


_worker_spec = None


def _worker_init(spec) -> None:
    """Runs once in each worker: keep the spec, leave Ctrl-C to the parent."""
    global _worker_spec
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _worker_spec = spec


def _worker_play(job: MatchJob, limits) -> dict:
    # A dict crosses back: PolicyFailure, an exception with a custom
    # constructor, does not survive pickling on its own.
    return _play(_worker_spec, job, limits).to_dict()
