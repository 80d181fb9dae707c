"""Running a sweep's cells concurrently: local worker processes or Ray tasks.

The driver (this process) keeps a queue of the cells whose session is not
done, starts up to `workers` of them at a time, and reads each one's outcome
from its session log when it ends, so every count it reports is what the
logs say.  A session that fails is reported with its reason and the others
go on.  Stopping (Ctrl-C, SIGTERM) writes the sweep's stop file: every
running session stops after its current step, resumable, and the queue is
not started; a second Ctrl-C stops them at once (still resumable: a session
log loses at most the event being written).

Locally each session is a child process (`session_task`), so a crash of one
cannot take another down, and a child gets SIGTERM if the driver dies.  On
Ray each session is a task asking for the CPUs its evaluation uses; Ray
queues the tasks a small cluster has no room for.  On either, logs are
written where the driver reads them: the sessions directory, which on a
cluster must be on storage every node mounts at the same path.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from csro_tui.experiments.manifest import STOP_FILE, SessionStatus, session_status, sweep_dir, write_manifest
from csro_tui.experiments.sweep_file import Cell, Sweep
from csro_tui.oracles.llm.keys import KeyTrust

POLL_SECONDS = 0.05  # a finished session waits for the driver at most this long


@dataclass
class CellRun:
    cell: Cell
    state: str = "queued"  # queued, running, done, failed, stopped
    reason: str = ""
    started: float | None = None
    seconds: float | None = None
    handle: Any = None
    ran: bool = False  # False: it was already done before this run


@dataclass
class SweepProgress:
    done: int
    running: int
    failed: int
    queued: int
    stopped: int
    seconds_left: float | None
    elapsed: float

    def line(self) -> str:
        from csro_tui.numbers import duration  # start-up time: loaded only when this runs

        if not self.running and not self.queued:
            left = "finished"
        else:
            left = "time left ?" if self.seconds_left is None else f"about {duration(self.seconds_left)} left"
        stopped = f", {self.stopped} stopped" if self.stopped else ""
        return (f"{self.done} done, {self.running} running, {self.failed} failed, {self.queued} queued{stopped}"
                f" · {duration(self.elapsed)} · {left}")


@dataclass
class SweepResult:
    runs: list[CellRun] = field(default_factory=list)
    interrupted: bool = False

    def count(self, state: str) -> int:
        return sum(1 for run in self.runs if run.state == state)


def default_workers(session_cpus: int) -> int:
    """Concurrent sessions the machine affords: its CPUs over each session's evaluation processes."""
    return max(1, (os.cpu_count() or 1) // max(1, session_cpus))


def session_cpus(sweep: Sweep) -> int:
    """CPUs one session uses: its evaluation processes (the sweep's `workers` option, else 1)."""
    return max((cell.config.get("workers") or 1) for cell in sweep.cells) if sweep.cells else 1


class LocalLauncher:
    """Sessions on local worker processes (`session_task`), each running one session at a time.

    A worker stays up between sessions (warm imports); if it dies mid-session,
    that session fails with the last line its log holds, and the next session
    gets a new worker, so a crash never takes another session down.
    """

    def __init__(self, sessions_dir: Path, directory: Path, overrides: dict[str, Any]) -> None:
        self.sessions_dir = sessions_dir
        self.directory = directory
        self.overrides = overrides
        self.idle: list[_Worker] = []
        self.workers: list[_Worker] = []

    def start(self, cell: Cell) -> Any:
        while self.idle and self.idle[-1].process.poll() is not None:
            self.idle.pop()  # ended (interrupted): not reused
        worker = self.idle.pop() if self.idle else self._new_worker()
        worker.assign(cell)
        return worker

    def _new_worker(self) -> "_Worker":
        worker = _Worker(subprocess.Popen(
            [sys.executable, "-m", "csro_tui.experiments.session_task", str(self.sessions_dir), str(self.directory),
             json.dumps(self.overrides)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, bufsize=1,
        ))
        self.workers.append(worker)
        return worker

    def poll(self, handle: Any) -> str | None:
        """None while running; else "" or, when the session failed, why."""
        worker: _Worker = handle
        answer = worker.answer()
        if answer is None:
            if worker.process.poll() is None:
                return None
            # The worker died mid-session: its log's last line says why, if anything does.
            log = self.directory / "logs" / f"{worker.cell.session_id}.log"
            code = worker.process.returncode
            return "" if code in (130, -signal.SIGINT, -signal.SIGTERM) else (
                _last_line(log) or f"the worker process ended (status {code})")
        self.idle.append(worker)
        return answer

    def interrupt(self, handle: Any) -> None:
        worker: _Worker = handle
        if worker.process.poll() is None:
            worker.process.send_signal(signal.SIGINT)

    def close(self) -> None:
        for worker in self.workers:
            worker.close()


class _Worker:
    """One local worker process and the answers it writes, read by a thread."""

    def __init__(self, process: subprocess.Popen) -> None:
        import queue
        import threading

        self.process = process
        self.cell: Cell | None = None
        self.answers: "queue.Queue[str]" = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.process.stdout:
            if line.strip():
                self.answers.put(line)

    def assign(self, cell: Cell) -> None:
        self.cell = cell
        self.process.stdin.write(json.dumps(cell.to_dict()) + "\n")
        self.process.stdin.flush()

    def answer(self) -> str | None:
        import queue

        try:
            return json.loads(self.answers.get_nowait())["failure"]
        except queue.Empty:
            return None

    def close(self) -> None:
        try:
            self.process.stdin.close()
        except OSError:
            pass
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


class RayLauncher:
    """Each session a Ray task asking for the CPUs its evaluation uses."""

    def __init__(self, sessions_dir: Path, directory: Path, overrides: dict[str, Any], address: str,
                 cpus: int, cells: list[Cell] | None = None) -> None:
        from csro_tui.evaluation.ray_backend import _ray, connect  # optional extra: ray

        connect(address)
        self.ray = _ray()
        from csro_tui.experiments.session_task import run_cell  # start-up time: loaded only when this runs

        options: dict[str, Any] = {"num_cpus": cpus, "max_retries": 0}
        environment = llm_environment(cells or [])
        if environment:  # a Ray worker has the head's environment, not this one's
            options["runtime_env"] = {"env_vars": environment}
        self.task = self.ray.remote(run_cell).options(**options)
        self.sessions_dir = sessions_dir
        self.directory = directory
        self.overrides = overrides

    def start(self, cell: Cell) -> Any:
        return self.task.remote(cell.to_dict(), str(self.sessions_dir), str(self.directory), self.overrides)

    def poll(self, handle: Any) -> str | None:
        ready, _ = self.ray.wait([handle], timeout=0)
        if not ready:
            return None
        try:
            self.ray.get(handle)
        except self.ray.exceptions.TaskCancelledError:
            return ""  # cancelled by a stop: its session is as the log says (not started, or stopped)
        except Exception as error:  # noqa: BLE001 - a task's failure is that session's reason
            cause = getattr(error, "cause", None) or error
            return f"{type(cause).__name__}: {str(cause).strip().splitlines()[-1] if str(cause).strip() else ''}"
        return ""

    def interrupt(self, handle: Any) -> None:
        self.ray.cancel(handle)

    def cancel_waiting(self, runs: list[CellRun]) -> None:
        """On a stop: tasks Ray has not started yet are cancelled, not started only to stop at once."""
        for run in runs:
            if not _is_running_elsewhere(self.directory, run.cell.session_id):
                self.ray.cancel(run.handle)

    def close(self) -> None:
        pass


def llm_environment(cells: list[Cell], env: Any = None) -> dict[str, str]:
    """What an LLM oracle's session reads from its environment (the API key variable, OPENAI_BASE_URL,
    CSRO_LLM_*), as set here, for the cells with an LLM oracle: Ray tasks get it with their task
    (sent to the nodes that call the model; never written to a session or the manifest)."""
    env = os.environ if env is None else env
    if not any(str(cell.config.get("oracle", "")).startswith("llm") for cell in cells):
        return {}
    names = {"OPENAI_API_KEY", "OPENAI_BASE_URL"} | {name for name in env if name.startswith("CSRO_LLM_")}
    # A variable the sweep file names as api_key_env travels only if the user trusts it
    # (their own config's [trust] api_key_envs): a file does not choose which secret leaves (issue 35).
    trusted = KeyTrust.of_user(env).key_variables
    for cell in cells:
        for table in (cell.config.get("oracle_options") or {}, cell.config.get("llm") or {}):
            if isinstance(table.get("api_key_env"), str) and table["api_key_env"] in trusted:
                names.add(table["api_key_env"])
    return {name: env[name] for name in sorted(names) if name in env}


def _last_line(path: Path) -> str:
    try:
        lines = [line.strip() for line in path.read_text(encoding="utf-8", errors="replace").splitlines() if line.strip()]
    except OSError:
        return ""
    return lines[-1] if lines else ""


def _is_running_elsewhere(directory: Path, session_id: str) -> bool:
    """Whether a session's lock is held (its task has started)."""
    import fcntl

    path = directory / "locks" / f"{session_id}.lock"
    if not path.exists():
        return False
    with open(path, "rb") as handle:
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
    return False


def run_sweep(
    sweep: Sweep,
    sessions_dir: str | Path,
    *,
    workers: int | None = None,
    backend: str = "local",
    ray_address: str = "",
    on_progress: Callable[[SweepProgress], None] | None = None,
    on_finished: Callable[[CellRun], None] | None = None,
    progress_seconds: float = 5.0,
) -> SweepResult:
    """Run every cell whose session is not done; see the module docstring."""
    sessions_dir = Path(sessions_dir)
    if backend == "ray":  # an unreachable cluster is one line before anything is written
        from csro_tui.evaluation.ray_backend import connect  # optional extra: ray

        connect(ray_address)
    sessions_dir.mkdir(parents=True, exist_ok=True)
    write_manifest(sweep, sessions_dir)
    directory = sweep_dir(sessions_dir, sweep.name)
    stop_file = directory / STOP_FILE
    stop_file.unlink(missing_ok=True)  # a previous run's stop is over
    cpus = session_cpus(sweep)
    # Sessions evaluate on the CPUs they asked for, with local processes (see session_task).
    overrides: dict[str, Any] = {"workers": cpus, "backend": "local", "ray_address": ""}
    result = SweepResult([CellRun(cell) for cell in sweep.cells])
    queue: list[CellRun] = []
    for run in result.runs:
        status = session_status(sessions_dir, run.cell.session_id)
        if status.kind == "done":
            run.state = "done"
        else:
            queue.append(run)
    if backend == "ray":
        launcher: Any = RayLauncher(sessions_dir, directory, overrides, ray_address, cpus, [r.cell for r in queue])
        limit = workers or len(queue) or 1  # Ray queues what the cluster has no room for
    else:
        launcher = LocalLauncher(sessions_dir, directory, overrides)
        limit = workers or default_workers(cpus)
    running: list[CellRun] = []
    began = time.monotonic()
    last_report = 0.0
    stopping = False
    # Ctrl-C and SIGTERM are counted here and acted on by the loop, so a stop never lands
    # half-way through starting a session or closing the workers.
    signals = _SignalCount()

    def report(force: bool = False) -> None:
        nonlocal last_report
        now = time.monotonic()
        if on_progress is not None and (force or now - last_report >= progress_seconds):
            last_report = now
            on_progress(_progress(result, running, queue, limit, began, directory, backend, sessions_dir))

    with signals:
        try:
            handled = 0
            while queue or running:
                if signals.count > handled:
                    if stopping:  # a second Ctrl-C: stop the running sessions now (still resumable)
                        for run in running:
                            launcher.interrupt(run.handle)
                    else:
                        stopping = True
                        result.interrupted = True
                        stop_file.touch()
                        if hasattr(launcher, "cancel_waiting"):
                            launcher.cancel_waiting(running)
                        report(force=True)
                    handled = signals.count
                while not stopping and queue and len(running) < limit:
                    run = queue.pop(0)
                    run.state, run.started = "running", time.monotonic()
                    run.handle = launcher.start(run.cell)
                    running.append(run)
                for run in list(running):
                    failure = launcher.poll(run.handle)
                    if failure is None:
                        continue
                    running.remove(run)
                    _finish(run, failure, session_status(sessions_dir, run.cell.session_id))
                    if on_finished is not None:
                        on_finished(run)
                report()
                if stopping and not running:
                    break
                time.sleep(POLL_SECONDS)
        finally:
            launcher.close()
            stop_file.unlink(missing_ok=True)
    report(force=True)
    return result


class _SignalCount:
    """While active (in the main thread): SIGINT and SIGTERM are counted instead of raising."""

    def __init__(self) -> None:
        self.count = 0
        self.previous: dict[int, Any] = {}

    def _count(self, signum: int, frame: Any) -> None:
        self.count += 1

    def __enter__(self) -> "_SignalCount":
        import threading

        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGINT, signal.SIGTERM):
                self.previous[sig] = signal.signal(sig, self._count)
        return self

    def __exit__(self, *exc: object) -> None:
        for sig, handler in self.previous.items():
            signal.signal(sig, handler)


def _finish(run: CellRun, failure: str, status: SessionStatus) -> None:
    run.seconds = time.monotonic() - (run.started or time.monotonic())
    run.ran = True
    if status.kind == "done":
        run.state, run.reason = "done", status.message
    elif status.kind == "failed":
        run.state, run.reason = "failed", status.message or failure
    elif failure:
        run.state, run.reason = "failed", failure
    else:
        run.state, run.reason = "stopped", status.message or "stopped"


def _progress(result: SweepResult, running: list[CellRun], queue: list[CellRun], limit: int, began: float,
              directory: Path, backend: str, sessions_dir: Path | None = None) -> SweepProgress:
    active_runs = list(running)
    waiting = len(queue)
    if backend == "ray":  # submitted tasks the cluster has not started yet are queued
        active_runs = [run for run in running if _is_running_elsewhere(directory, run.cell.session_id)]
        waiting += len(running) - len(active_runs)
    # A session's length: those done in this run and the running ones' pace so far (time / share done);
    # a running session's time left is its own pace's.
    lengths = [run.seconds for run in result.runs if run.state == "done" and run.ran and run.seconds]
    now = time.monotonic()
    shares = []
    for run in active_runs:
        share = _share_done(sessions_dir, run.cell) if sessions_dir is not None else 0.0
        pace = (now - run.started) / share if share > 0 and run.started is not None else None
        shares.append((share, pace))
    known = lengths + [pace for _, pace in shares if pace is not None]
    left = None
    if known:
        length = sum(known) / len(known)
        running_left = [pace * (1 - share) if pace is not None else length for share, pace in shares]
        concurrency = max(1, min(limit, len(active_runs) + waiting) or 1)
        left = max([(sum(running_left) + waiting * length) / concurrency, *running_left])
    return SweepProgress(done=result.count("done"), running=len(active_runs), failed=result.count("failed"),
                         queued=waiting, stopped=result.count("stopped"), seconds_left=left,
                         elapsed=now - began)


def _share_done(sessions_dir: Path, cell: Cell) -> float:
    """The share of its iterations a running session has finished (0 when unknown)."""
    target = cell.config.get("iterations") or 0
    if target <= 0:
        return 0.0
    try:
        return min(1.0, session_status(sessions_dir, cell.session_id).iterations / target)
    except Exception:  # noqa: BLE001 - a log being written is read again at the next report
        return 0.0
