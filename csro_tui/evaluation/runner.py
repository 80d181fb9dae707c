"""Many matchups at once: lockstep chunks in a process pool of referees.

Jobs are split into chunks; each chunk is played by `play_matches` in one
lockstep, so a code policy in it gets one sandbox host for all its matches
and one batched call per step.  Chunks run in worker processes (spawned, so
nothing is inherited; participants are picklable descriptions and a spec
pickles as its name).  Results come back in job order, and progress arrives
while matches are still being played.

Games with exact evaluation skip sampling: their entries are computed from
tables in this process, each participant tabularised once.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import multiprocessing.pool
import os
import queue
import signal
import sys
import threading
import time
from typing import TYPE_CHECKING, Any, Callable, Sequence

from csro_tui.evaluation.participants import CodePolicy
from csro_tui.evaluation.referee import MatchJob, play_matches
from csro_tui.evaluation.results import MatchResult
from csro_tui.sandbox.failures import FailureCategory, PolicyFailure

if TYPE_CHECKING:
    from csro_tui.games.base import GameSpec

__all__ = ["MatchJob", "RefereePool", "evaluate_matchups", "plan_chunks"]

# progress(done, total) in jobs; `done` may be fractional while matches play.
JobProgress = Callable[[float, int], None]

# Most episodes one lockstep holds at once: bounds memory (every episode
# keeps its state, views and bot agents alive) while batches stay large.
MAX_LOCKSTEP_EPISODES = 2048
# Wall-clock cap of one evaluate_matchups call (an `evaluation_seconds`
# attribute of `limits` overrides it): matches not started by then, or still
# playing in a pool, end with a timeout failure naming the cap.
EVALUATION_SECONDS = 3600.0
# Below this many moves (estimated) the default is to play in this process:
# spawning workers that import OpenSpiel costs a few seconds.
MIN_POOL_STEPS = 200_000
# With a RefereePool that is already running (or will be reused), that cost
# is paid once per session, so much smaller batches are worth splitting:
# about 20 RRPS episodes, a second or two of play in one process.
MIN_WARM_POOL_STEPS = 20_000


def evaluate_matchups(
    spec: "GameSpec",
    jobs: Sequence[MatchJob],
    *,
    workers: int | None = None,
    progress: JobProgress | None = None,
    limits: Any = None,
    exact: bool | None = None,
    pool: "RefereePool | None" = None,
) -> list[MatchResult]:
    """Play (or compute exactly) every job; results in job order.

    `exact` defaults to `spec.exact`.  `workers` defaults to the CPU count,
    or to 1 for work too small to pay for starting a pool; with one worker,
    or one chunk, matches run in this process (their code policies still run
    in sandbox hosts).  A `pool` (kept by the caller between calls) is used
    for any batch of at least MIN_WARM_POOL_STEPS moves unless `workers` is
    1.  A policy failure is reported in the `MatchResult.failure` of every
    job its host served; other jobs carry on.  Played here, a code policy's
    later jobs are not played after its first failure: they carry that
    failure.  The whole call has a wall-clock cap (EVALUATION_SECONDS).
    """
    jobs = list(jobs)
    if not jobs:
        return []
    if getattr(spec, "exact", False) if exact is None else exact:
        return _evaluate_exactly(spec, jobs, progress, limits)
    # A remote pool (the Ray backend) takes every batch: the work belongs on the cluster.
    remote = getattr(pool, "remote", False)
    if pool is not None and (workers != 1 or remote):
        if _estimated_steps(spec, jobs) >= getattr(pool, "min_steps", MIN_WARM_POOL_STEPS):
            chunks = plan_chunks(jobs, pool.processes)
            if len(chunks) > 1 or remote:
                return pool.run(jobs, chunks, progress, limits)
        return _evaluate_here(spec, jobs, plan_chunks(jobs, 1), progress, limits)
    if workers is None and _estimated_steps(spec, jobs) < MIN_POOL_STEPS:
        workers = 1  # starting a pool would cost more than it saves
    count = max(1, workers or os.cpu_count() or 1)
    chunks = plan_chunks(jobs, count)
    if count == 1 or len(chunks) == 1:
        return _evaluate_here(spec, jobs, chunks, progress, limits)
    return _evaluate_in_pool(spec, jobs, chunks, min(count, len(chunks)), progress, limits)


def plan_chunks(jobs: Sequence[MatchJob], workers: int) -> list[list[int]]:
    """Job indices per chunk: at least `workers` chunks when there are enough
    jobs, none above MAX_LOCKSTEP_EPISODES episodes unless one job is, and
    balanced by episode count (largest jobs placed first)."""
    total = sum(job.played_episodes for job in jobs)
    count = max(min(workers, len(jobs)), -(-total // MAX_LOCKSTEP_EPISODES))
    chunks: list[list[int]] = [[] for _ in range(count)]
    loads = [0] * count
    for index in sorted(range(len(jobs)), key=lambda i: -jobs[i].played_episodes):
        lightest = loads.index(min(loads))
        chunks[lightest].append(index)
        loads[lightest] += jobs[index].played_episodes
    return [sorted(chunk) for chunk in chunks if chunk]


def _estimated_steps(spec, jobs: Sequence[MatchJob]) -> int:
    """Upper bound on the moves to play: episodes times the longest game."""
    return sum(job.played_episodes for job in jobs) * max(1, spec.load().max_game_length())


def _evaluate_exactly(spec, jobs, progress, limits) -> list[MatchResult]:
    from csro_tui.evaluation.exact import exact_payoff  # start-up time: importing it loads open_spiel

    seat_fixed = [job for job in jobs if job.seat is not None]
    if seat_fixed:
        # exact_payoff averages the seats; the engine computes exact seat-fixed entries itself.
        raise ValueError("evaluate_matchups computes exact payoffs averaged over seats only; "
                         f"{len(seat_fixed)} job(s) ask for a seat")
    results = []
    for done, job in enumerate(jobs, start=1):
        results.append(exact_payoff(spec, job.a, job.b, limits=limits))
        if progress is not None:
            progress(done, len(jobs))
    return results


def evaluation_seconds(limits: Any) -> float:
    """The wall-clock cap of one evaluate_matchups call."""
    value = getattr(limits, "evaluation_seconds", None)
    return float(value) if isinstance(value, (int, float)) and value > 0 else EVALUATION_SECONDS


def _failed_participants(job: MatchJob, failure) -> list:
    """The code participants of `job` that `failure` names (by host name)."""
    return [p for p in (job.a, job.b) if isinstance(p, CodePolicy) and p.name == failure.policy]


def _unplayed(job: MatchJob, failure) -> MatchResult:
    return MatchResult(a=job.a.name, b=job.b.name, mean=0.0, stderr=0.0, episodes=0, failure=failure, seat=job.seat)


def _cap_message(limits: Any) -> str:
    return f"the evaluation reached its wall-time cap of {evaluation_seconds(limits):g} s"


def _cap_failure(limits: Any):
    return PolicyFailure(FailureCategory.TIMEOUT, f"not played: {_cap_message(limits)}")


def _evaluate_here(spec, jobs, chunks, progress, limits) -> list[MatchResult]:
    results: list[MatchResult | None] = [None] * len(jobs)
    finished = 0.0
    failed: dict = {}  # code participant -> its first failure in this call
    cap = time.monotonic() + evaluation_seconds(limits)
    for chunk in chunks:
        play = []
        for index in chunk:
            job = jobs[index]
            known = failed.get(job.a) or failed.get(job.b)
            if known is None and time.monotonic() > cap:
                known = _cap_failure(limits)
            if known is not None:
                # A policy that failed once fails its later matches without
                # playing them (a timeout would otherwise cost its limit again).
                results[index] = _unplayed(job, known)
            else:
                play.append(index)
        if play:
            report = None
            if progress is not None:
                report = lambda done, _total, base=finished: progress(base + done, len(jobs))  # noqa: E731
            chunk_results = play_matches(spec, [jobs[i] for i in play], limits=limits, progress=report,
                                         stop_at=(cap, _cap_message(limits)))
            for index, result in zip(play, chunk_results):
                results[index] = result
                if result.failure is not None:
                    for participant in _failed_participants(jobs[index], result.failure):
                        failed.setdefault(participant, result.failure)
        finished += len(chunk)
        if progress is not None:
            progress(finished, len(jobs))
    return results  # type: ignore[return-value]


def _evaluate_in_pool(spec, jobs, chunks, processes, progress, limits) -> list[MatchResult]:
    """A pool for this call only (see RefereePool for one kept between calls)."""
    pool = RefereePool(spec, processes)
    try:
        return pool.run(jobs, chunks, progress, limits)
    finally:
        pool.close()


# How long ending a referee pool may take before its workers are killed (see RefereePool._end):
# terminating waits for the workers to unwind (their hosts end); closing for the tasks in hand.
POOL_END_SECONDS = 10.0
POOL_CLOSE_SECONDS = 5.0


class RefereePool:
    """Worker processes playing lockstep chunks of one game's matches, kept
    between calls.

    Starting workers (spawned, each importing OpenSpiel) costs seconds; the
    engine evaluates several batches per iteration (smoke runs, previews,
    payoff entries, benchmark scores), so it keeps one pool per session and
    pays that once.  Workers start on first use.  Calls are serialised.  If
    a call fails or is interrupted, the workers are terminated and the next
    call starts fresh ones.  `close` ends them (they are daemonic, so they
    also end with this process).
    """

    def __init__(self, spec: "GameSpec", processes: int | None = None) -> None:
        self.spec = spec
        self.processes = max(1, processes or os.cpu_count() or 1)
        self._pool = None
        self._messages = None
        self._lock = threading.Lock()

    def run(self, jobs: Sequence[MatchJob], chunks: list[list[int]], progress, limits) -> list[MatchResult]:
        """Play the chunks (job indices) in the workers; results in job order."""
        with self._lock:
            if self._pool is None:
                start_resource_tracker()
                context = multiprocessing.get_context("spawn")
                self._messages = context.Queue()
                self._pool = context.Pool(
                    self.processes, initializer=_worker_init, initargs=(self.spec, self._messages)
                )
            try:
                return _collect(self._pool, self._messages, jobs, chunks, progress, limits)
            except _CapReached as reached:
                self._end(terminate=True)  # matches still playing end here
                return reached.results
            except BaseException:
                self._end(terminate=True)  # interrupted, or a worker raised: stop the rest now
                raise

    def close(self) -> None:
        with self._lock:
            if self._pool is not None:
                self._end(terminate=False)

    def _end(self, *, terminate: bool) -> None:
        """Ends the pool: `terminate` (SIGTERM to the workers, so their hosts are ended) or
        close (workers finish their tasks), with a deadline.

        multiprocessing's Pool can wait forever here once workers have died on their own
        (a SIGTERM to the whole process group, as `timeout` and service managers send): a
        task they held never completes, so close's join waits for it; the pool starts
        replacements, one of which holds the task queue's lock while waiting for work, and
        terminate waits for that lock (seen: csro run hung after `kill -TERM -PGID`).  Past
        the deadline every worker is killed and the pool is left to its daemon thread."""
        pool = self._pool
        self._pool = self._messages = None
        if any(worker.exitcode is not None for worker in list(getattr(pool, "_pool", ()))):
            terminate = True  # a worker died on its own: a task it held never ends, so closing would wait for it

        def finish() -> None:
            if not terminate:
                pool.close()
                pool.join()
            # the pool's finalizer, run here under the deadline rather than when the pool is
            # collected (where a lock a dead worker held would stop the caller for good)
            pool.terminate()
            pool.join()

        ending = threading.Thread(target=finish, name="csro-referee-pool-end", daemon=True)
        ending.start()
        ending.join(POOL_END_SECONDS if terminate else POOL_CLOSE_SECONDS)
        if ending.is_alive():
            _abandon(pool)


def _abandon(pool) -> None:
    """Kill a pool's workers and leave the pool to its daemon threads: no replacements are
    started, and its finalizer (which would wait for the queue's lock again when the pool is
    collected, or at exit) is cancelled.  CPython's Pool internals, guarded."""
    handler = getattr(pool, "_worker_handler", None)
    if handler is not None:
        handler._state = multiprocessing.pool.TERMINATE  # stop starting replacements
    for worker in list(getattr(pool, "_pool", ())):
        with contextlib.suppress(Exception):
            worker.kill()
    finalizer = getattr(pool, "_terminate", None)
    if finalizer is not None:
        finalizer.cancel()


_tracker_lock = threading.Lock()


def start_resource_tracker() -> None:
    """Start multiprocessing's resource tracker safely in any embedding host.

    The tracker is started by the first queue or worker and passes
    `sys.stderr.fileno()` to the new process.  A host that replaces
    sys.stderr with a stand-in whose fileno() returns -1 (Textual does, to
    capture prints) makes that start fail with "ValueError: bad value(s) in
    fds_to_keep".  While the tracker starts, sys.stderr is the process's own
    standard error (or /dev/null if it has none); once running, the tracker
    is reused and sys.stderr is never read for it again.
    """
    from multiprocessing import resource_tracker

    with _tracker_lock:
        if _has_real_fileno(sys.stderr):
            resource_tracker.ensure_running()
            return
        with _stderr_with_fileno():
            resource_tracker.ensure_running()


def _has_real_fileno(stream) -> bool:
    try:
        fd = stream.fileno()
    except Exception:  # no fileno at all: multiprocessing skips it itself
        return True
    if not isinstance(fd, int) or fd < 0:
        return False
    try:
        os.fstat(fd)
    except OSError:
        return False
    return True


@contextlib.contextmanager
def _stderr_with_fileno():
    replaced = sys.stderr
    fallback = sys.__stderr__
    opened = None
    if fallback is None or not _has_real_fileno(fallback):
        fallback = opened = open(os.devnull, "w")
    sys.stderr = fallback
    try:
        yield
    finally:
        sys.stderr = replaced
        if opened is not None:
            opened.close()


class _CapReached(Exception):
    """The evaluation's wall-time cap passed; `results` has every job."""

    def __init__(self, results: list) -> None:
        super().__init__("evaluation wall-time cap reached")
        self.results = results


def _collect(pool, messages, jobs, chunks, progress, limits) -> list[MatchResult]:
    results: list[MatchResult | None] = [None] * len(jobs)
    chunk_done = [0.0] * len(chunks)
    for number, chunk in enumerate(chunks):
        pool.apply_async(
            _worker_play,
            (number, [(index, jobs[index]) for index in chunk], limits),
            error_callback=lambda error, number=number: messages.put(("error", number, error)),
        )
    remaining = len(jobs)
    cap = time.monotonic() + evaluation_seconds(limits)
    while remaining:
        kind, number, payload = _next(messages, cap)
        if kind == "cap":
            failure = _cap_failure(limits)
            raise _CapReached([r if r is not None else _unplayed(job, failure) for r, job in zip(results, jobs)])
        if kind == "error":
            raise payload
        if kind == "result":
            index, data = payload
            results[index] = MatchResult.from_dict(data)
            remaining -= 1
        elif kind == "progress":
            chunk_done[number] = payload
        if progress is not None:  # also when idle: the callback is where a stop request interrupts
            # At least the results in: the workers' fractional reports come before their results,
            # so their sum stayed short of the total at the end and a piped `csro crosstable`
            # never printed its final count.
            progress(max(sum(chunk_done), len(jobs) - remaining), len(jobs))
    return results  # type: ignore[return-value]


def _next(messages, cap: float = float("inf")) -> tuple:
    """The next message from the workers, ("cap", ...) once `cap` passes, or
    ("idle", ...) after 0.2 s without one, so Ctrl-C gets through and the
    caller can look at a stop request even while no worker reports (one
    killed by a signal to the whole process group never will)."""
    try:
        return messages.get(timeout=0.2)
    except queue.Empty:
        if time.monotonic() > cap:
            return ("cap", None, None)
        return ("idle", None, None)


_worker_spec = None
_worker_messages = None


def _worker_init(spec, messages) -> None:
    """Runs once in each worker: keep the spec and queue, leave Ctrl-C to the parent,
    and unwind on the SIGTERM of `Pool.terminate` (a stop, a failure elsewhere), so the
    matches' `finally` ends their sandbox hosts and removes their temporary directories."""
    global _worker_spec, _worker_messages
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, _unwind_on_sigterm)
    _worker_spec, _worker_messages = spec, messages


def _unwind_on_sigterm(signum: int, frame) -> None:
    # An exception raised inside a __del__ or a weakref finalizer is swallowed
    # ("Exception ignored in"), and the worker would wait for its next task
    # while Pool.terminate waits for it forever (seen with hosts forked by
    # the zygote, whose close takes a round trip): deliver the signal again
    # once out of it.
    while frame is not None:
        if frame.f_code.co_name in ("__del__", "__call__") and (
            frame.f_code.co_name == "__del__" or frame.f_code.co_filename.endswith("weakref.py")
        ):
            threading.Timer(0.01, os.kill, (os.getpid(), signum)).start()
            return
        frame = frame.f_back
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # a second one ends the worker at once
    raise SystemExit(128 + signum)


def _worker_play(number: int, indexed_jobs: list[tuple[int, MatchJob]], limits) -> None:
    indices = [index for index, _ in indexed_jobs]

    def on_result(position: int, result: MatchResult) -> None:
        # A dict crosses back: PolicyFailure, an exception with a custom
        # constructor, does not survive pickling on its own.
        _worker_messages.put(("result", number, (indices[position], result.to_dict(timing=True))))

    def on_progress(done: float, _total: int) -> None:
        _worker_messages.put(("progress", number, done))

    play_matches(
        _worker_spec,
        [job for _, job in indexed_jobs],
        limits=limits,
        progress=on_progress,
        on_result=on_result,
    )
