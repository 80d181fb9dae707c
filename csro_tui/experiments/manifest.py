"""A sweep's manifest, kept beside its sessions: `<sessions dir>/sweeps/<name>/manifest.json`.

It records the sweep file's content hash and, for each cell, its
configuration, its repeat and the session that runs it.  Session ids are
fixed by the cell (not by the clock), so a rerun finds every cell's session
and reads what is done from the session's own log: no new event types, and
a driver killed between starting a session and writing anything more loses
nothing.  Beside it: `logs/<session>.log` (a local worker's output),
`locks/<session>.lock` (held while a session runs: one writer per log) and
`stop` (present while the sweep is being stopped; every session stops after
its current step).
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from csro_tui.errors import ConfigError, SessionError
from csro_tui.experiments.sweep_file import Sweep, slug
from csro_tui.files import load_json, path_inside, quoted
from csro_tui.sessions.events import is_valid_id

SWEEPS_DIR = "sweeps"
MANIFEST_FILE = "manifest.json"
STOP_FILE = "stop"


def sweep_dir(sessions_dir: str | Path, name: str) -> Path:
    return Path(sessions_dir) / SWEEPS_DIR / slug(name)


def _redacted(config: dict[str, Any]) -> dict[str, Any]:
    from csro_tui.config import RunConfig  # start-up time: loaded only when this runs

    return {k: v for k, v in RunConfig.from_dict(config).to_record().items() if k != "sessions_dir"}


def manifest_record(sweep: Sweep) -> dict[str, Any]:
    return {
        "name": sweep.name,
        "file": str(sweep.path.resolve()),
        "file_sha256": sweep.content_hash,
        "iterations": sweep.iterations,
        "repeats": sweep.repeats,
        "seeds": sweep.seeds,
        "grid": sweep.grid,
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "cells": [{**cell.to_dict(), "config": _redacted(cell.config)} for cell in sweep.cells],
    }


def write_manifest(sweep: Sweep, sessions_dir: str | Path) -> Path:
    """Write the manifest (once); a rerun of a changed file under the same name is refused."""
    directory = sweep_dir(sessions_dir, sweep.name)
    path = directory / MANIFEST_FILE
    existing = read_manifest(path) if path.exists() else None
    if existing is not None:
        if existing.get("file_sha256") != sweep.content_hash:
            raise ConfigError(
                f"sweep {sweep.name!r} was started from a different file (sha256 {existing.get('file_sha256', '?')[:12]}, "
                f"this one {sweep.content_hash[:12]}); give the changed sweep another name, "
                f"or remove {directory} to start it over"
            )
        return path
    try:
        (directory / "logs").mkdir(parents=True, exist_ok=True)
        (directory / "locks").mkdir(exist_ok=True)
        temporary = path.with_suffix(".json.tmp")
        temporary.write_text(json.dumps(manifest_record(sweep), indent=2) + "\n", encoding="utf-8")
        os.replace(temporary, path)
    except OSError as error:
        raise SessionError(f"{path}: cannot write the sweep manifest ({error.strerror})") from None
    return path


def read_manifest(path: str | Path) -> dict[str, Any]:
    path = Path(path)
    try:
        data = load_json(path.read_bytes())
    except FileNotFoundError:
        raise SessionError(f"{path}: no such sweep manifest") from None
    except (OSError, ValueError) as error:
        raise SessionError(f"{path}: unreadable sweep manifest ({error})") from None
    if not isinstance(data, dict) or not isinstance(data.get("cells"), list):
        raise SessionError(f"{path}: not a sweep manifest (no cells)")
    for number, cell in enumerate(data["cells"], start=1):  # its session ids become paths: ids only
        if not isinstance(cell, dict) or not is_valid_id(cell.get("session")) or not isinstance(cell.get("label"), str):
            raise SessionError(f"{path}: cell {number} is not a sweep cell (a session id and a label): "
                               f"{quoted(cell)}")
    return data


def find_manifest(sessions_dir: str | Path, name: str) -> dict[str, Any]:
    """The manifest of sweep `name` under `sessions_dir` (a "did you mean" when there is none)."""
    path = sweep_dir(sessions_dir, name) / MANIFEST_FILE
    if not path.exists():
        from csro_tui.names import did_you_mean  # start-up time: loaded only when this runs

        root = Path(sessions_dir) / SWEEPS_DIR
        known = sorted(p.name for p in root.iterdir() if (p / MANIFEST_FILE).exists()) if root.is_dir() else []
        raise SessionError(f"no sweep {name!r} under {Path(sessions_dir).resolve()}{did_you_mean(slug(name), known)}"
                           + (f" (sweeps: {', '.join(known)})" if known else " (csro sweep FILE.toml starts one)"))
    return read_manifest(path)


@dataclass(frozen=True)
class SessionStatus:
    """What a session's log says about its cell: new, done, failed or resumable."""

    kind: str  # "new" (no session yet), "done", "failed" (closed with an error), "stopped" (stopped or crashed)
    message: str = ""
    iterations: int = 0


def session_status(sessions_dir: str | Path, session_id: str) -> SessionStatus:
    from csro_tui.sessions.state import fold  # start-up time: loaded only when this runs
    from csro_tui.sessions.store import EVENTS_FILE, read_log  # start-up time: loaded only when this runs

    directory = path_inside(sessions_dir, session_id)
    events = directory / EVENTS_FILE
    if not directory.exists():
        return SessionStatus("new")
    try:
        empty = not events.exists() or events.stat().st_size == 0
        if empty:
            return SessionStatus("new")
        state = fold(read_log(events).events)
    except SessionError as error:
        if "no complete event" in str(error):
            return SessionStatus("new")
        return SessionStatus("failed", str(error))
    done = state.completed_iterations
    if state.closed is None:
        return SessionStatus("stopped", "crashed or still running", done)
    if state.closed.reason == "completed":
        return SessionStatus("done", state.closed.message, done)
    if state.closed.reason == "error":
        return SessionStatus("failed", state.closed.message, done)
    return SessionStatus("stopped", state.closed.message, done)


def clear_unstarted(sessions_dir: str | Path, session_id: str) -> None:
    """Remove a session directory that holds no complete event (a start cut short), so it can start afresh."""
    directory = path_inside(sessions_dir, session_id)
    if directory.exists() and session_status(sessions_dir, session_id).kind == "new":
        shutil.rmtree(directory)
