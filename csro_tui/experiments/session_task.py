"""One cell of a sweep run as an ordinary session, in whatever process runs it.

`run_cell` is the whole of it, used by a local worker process
(`python -m csro_tui.experiments.session_task`) and by a Ray task alike: it
takes the cell's lock (one writer per session log, even when a killed
driver's worker is still finishing), reads what the session's log says,
and then starts the session with `new_engine` or continues it with
`resume_engine`, exactly as `csro run` and `csro run --resume` do, so a
sweep's session has the same events, replay and TUI as any other.  A
session already done is not run again.  The sweep's stop file, SIGINT and
SIGTERM each ask the engine to stop after its current step, which leaves
the session resumable.
"""

from __future__ import annotations

import fcntl
import json
import os
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any

from csro_tui.files import path_inside

# How long a session waits for its lock (held by a previous driver's worker that is stopping).
LOCK_WAIT_SECONDS = 120.0
STOP_POLL_SECONDS = 0.5


def run_cell(cell: dict[str, Any], sessions_dir: str, sweep_directory: str,
             overrides: dict[str, Any] | None = None) -> dict[str, Any]:
    """Run (or resume) the cell's session to its end; what its log says at the end."""
    from csro_tui.experiments.manifest import STOP_FILE, clear_unstarted, session_status  # start-up time: loaded only when this runs

    session_id = cell["session"]
    overrides = dict(overrides or {})
    sweep = Path(sweep_directory)
    _check_shared_storage(sessions_dir, sweep)
    lock_path = path_inside(sweep, "locks", f"{session_id}.lock")
    with open(lock_path, "a+b") as lock:
        _lock(lock, session_id)
        status = session_status(sessions_dir, session_id)
        if status.kind == "done":
            return {"session": session_id, "reason": "completed", "message": status.message,
                    "iterations": status.iterations, "ran": False}
        stop_file = sweep / STOP_FILE
        if stop_file.exists():  # the sweep was stopped before this session's turn came
            return {"session": session_id, "reason": "stopped", "message": "the sweep was stopped",
                    "iterations": status.iterations, "ran": False}
        if status.kind == "new":
            clear_unstarted(sessions_dir, session_id)
        engine = _engine(cell, sessions_dir, overrides, resume=status.kind != "new")
        finished = threading.Event()
        watcher = threading.Thread(target=_watch_stop, args=(engine, stop_file, finished), daemon=True)
        watcher.start()
        try:
            with _stop_on_signals(engine):
                outcome = engine.run()
        finally:
            finished.set()
            if engine.writer is not None:
                engine.writer.close()
        return {"session": session_id, "reason": outcome.reason, "message": outcome.message,
                "iterations": outcome.state.completed_iterations, "ran": True}


def _engine(cell: dict[str, Any], sessions_dir: str, overrides: dict[str, Any], *, resume: bool) -> Any:
    from csro_tui.engine.setup import resolve_recorded_llm  # start-up time: loaded only when this runs
    from csro_tui.config import RunConfig  # start-up time: loaded only when this runs
    from csro_tui.engine import new_engine, resume_engine  # start-up time: loaded only when this runs
    from csro_tui.sessions.store import SessionStore  # start-up time: loaded only when this runs

    store = SessionStore(sessions_dir)
    if resume:
        engine, _warnings = resume_engine(cell["session"], store=store, overrides=overrides)
        return engine
    config = RunConfig.from_dict({**cell["config"], **overrides, "sessions_dir": str(sessions_dir)})
    resolve_recorded_llm(config.oracle_options, store)
    return new_engine(config, store=store, session_id=cell["session"])


def _check_shared_storage(sessions_dir: str, sweep: Path) -> None:
    """On a cluster the sessions directory must be mounted at the same path on every node."""
    from csro_tui.errors import SessionError  # start-up time: loaded only when this runs

    if not (sweep / "locks").is_dir():
        import socket

        raise SessionError(f"{sweep} is not visible on {socket.gethostname()}: a sweep on a cluster needs its "
                           f"sessions directory ({sessions_dir}) on storage every node mounts at the same path")


def _lock(handle: Any, session_id: str) -> None:
    from csro_tui.errors import SessionError  # start-up time: loaded only when this runs

    deadline = time.monotonic() + LOCK_WAIT_SECONDS
    while True:
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            if time.monotonic() > deadline:
                raise SessionError(f"session {session_id} is still being run by another process "
                                   f"(its lock was held for {LOCK_WAIT_SECONDS:.0f} s)") from None
            time.sleep(0.5)


def _watch_stop(engine: Any, stop_file: Path, finished: threading.Event) -> None:
    while not finished.wait(STOP_POLL_SECONDS):
        if stop_file.exists():
            engine.request_stop()
            return


class _stop_on_signals:
    """SIGINT/SIGTERM: stop after the current step (a second SIGINT aborts, the session stays resumable)."""

    def __init__(self, engine: Any) -> None:
        self.engine = engine
        self.previous: dict[int, Any] = {}

    def _handle(self, signum: int, frame: Any) -> None:
        if self.engine.stop_requested and signum == signal.SIGINT:
            raise KeyboardInterrupt
        self.engine.request_stop()

    def __enter__(self) -> "_stop_on_signals":
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGINT, signal.SIGTERM):
                self.previous[sig] = signal.signal(sig, self._handle)
        return self

    def __exit__(self, *exc: object) -> None:
        for sig, handler in self.previous.items():
            signal.signal(sig, handler)


def _die_with_parent() -> None:
    """A local worker gets SIGTERM (a clean stop) when the sweep's driver dies, even by SIGKILL."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, int(signal.SIGTERM), 0, 0, 0)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def main(argv: list[str] | None = None) -> int:
    """A local worker: `python -m csro_tui.experiments.session_task SESSIONS_DIR SWEEP_DIR OVERRIDES_JSON`.

    It runs cells one after another, each read as a JSON line on stdin, and
    answers each with a JSON line on stdout: {"session": ID, "failure": ""}
    or the failure's last line.  Staying up between sessions keeps its
    imports warm (a fresh interpreter costs about a second per session, bench
    section 10); each session's output goes to sweeps/<name>/logs/<id>.log.
    The driver ends it by closing stdin.
    """
    _die_with_parent()
    args = sys.argv[1:] if argv is None else argv
    sessions_dir, sweep_directory = args[0], args[1]
    overrides = json.loads(args[2]) if len(args) > 2 else {}
    answers = os.fdopen(os.dup(1), "w", buffering=1)  # stdout and stderr go to each session's log
    for line in sys.stdin:
        if os.getppid() == 1:  # the driver died before the death signal was armed
            return 130
        if not line.strip():
            continue
        cell = json.loads(line)
        failure, interrupted = _run_logged(cell, sessions_dir, sweep_directory, overrides)
        answers.write(json.dumps({"session": cell["session"], "failure": failure}) + "\n")
        if interrupted:
            return 130
    return 0


def _run_logged(cell: dict[str, Any], sessions_dir: str, sweep_directory: str,
                overrides: dict[str, Any]) -> tuple[str, bool]:
    """Run one cell with fds 1 and 2 on its log; ("" or the failure's last line, whether it was interrupted)."""
    log_path = path_inside(sweep_directory, "logs", f"{cell['session']}.log")
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    with open(log_path, "ab", buffering=0) as log:
        os.dup2(log.fileno(), 1)
        os.dup2(log.fileno(), 2)
        try:
            result = run_cell(cell, sessions_dir, sweep_directory, overrides)
            print(json.dumps(result), flush=True)
            return "", False
        except KeyboardInterrupt:
            print("stopped: interrupted", file=sys.stderr, flush=True)
            return "", True
        except Exception as error:  # noqa: BLE001 - the reason goes to the driver
            import traceback

            traceback.print_exc()
            reason = f"{type(error).__name__}: {error}".strip().splitlines()[0]
            print(reason, file=sys.stderr, flush=True)
            return reason, False
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            os.close(saved[0])
            os.close(saved[1])


if __name__ == "__main__":
    sys.exit(main())
