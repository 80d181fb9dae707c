"""The session store: `<root>/<id>/events.jsonl`, append-only, one event a line.

Each event is written as one line and flushed and fsync'ed before `append`
returns, so a crash loses at most the event being written.  Such a torn last
line is reported as a `LogWarning` and skipped when reading; before a resumed
session appends again the torn bytes are moved to `events.jsonl.torn`, so the
log stays one valid event per line.  Anything else that is wrong (a corrupt
line in the middle, a foreign file, a missing session) is a `SessionError`
naming the file and the line.  `SessionStore.repair` (`csro repair`) cuts a
log at its first bad line, keeping a backup of the whole log beside it.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import threading
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Mapping

from csro_tui.errors import SessionError
from csro_tui.files import JsonTooLarge, load_json, path_inside, quoted
from csro_tui.names import did_you_mean
from csro_tui.records import PolicyRecord
from csro_tui.sessions.events import (
    EVENT_TYPES,
    ID_RULE,
    Event,
    EventFormatError,
    SessionClosed,
    SessionStarted,
    from_record,
    is_valid_id,
    to_record,
)

EVENTS_FILE = "events.jsonl"
TORN_SUFFIX = ".torn"
POLICIES_DIR = "policies"
DEFAULT_SESSIONS_DIR = "sessions"
SESSIONS_DIR_ENV = "CSRO_SESSIONS_DIR"


def default_sessions_root(env: Mapping[str, str] | None = None) -> Path:
    """`$CSRO_SESSIONS_DIR`, else `./sessions`."""
    env = os.environ if env is None else env
    return Path(env.get(SESSIONS_DIR_ENV) or DEFAULT_SESSIONS_DIR)


def _reason(error: OSError) -> str:
    return error.strerror or str(error)


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass(frozen=True)
class LogWarning:
    """Something recovered from while reading a log (not an error)."""

    path: Path
    line: int
    message: str

    def __str__(self) -> str:
        return f"{self.path} line {self.line}: {self.message}"


@dataclass
class SessionLog:
    """The events read from one log, plus what was recovered on the way."""

    path: Path
    events: list[Event]
    warnings: list[LogWarning] = field(default_factory=list)
    # Byte offset where a torn (incomplete) last line starts, if there is one.
    torn_offset: int | None = None
    # The last event's line lacks its newline (a crash between the two writes).
    missing_newline: bool = False

    @property
    def started(self) -> SessionStarted:
        first = self.events[0]
        assert isinstance(first, SessionStarted)  # read_log guarantees it
        return first


@dataclass(frozen=True)
class BadLine:
    """The first line of a log that is not the next event."""

    line: int  # 1-based
    offset: int  # byte offset where the line starts
    problem: str


def read_log(path: Path) -> SessionLog:
    """Read and check a session log; see the module docstring for what is an error."""
    path, data = _log_bytes(path)
    log, bad = _scan(path, data)
    if bad is not None:
        if not log.events:
            raise SessionError(f"{path} line {bad.line}: not a csro session log ({bad.problem})")
        raise SessionError(f"{path} line {bad.line}: corrupt event ({bad.problem}); "
                           f"`csro repair {path.parent}` keeps the {len(log.events)} events before it")
    if not log.events:
        raise SessionError(f"{path}: no complete event (the run stopped while writing its first event)")
    return log


def _log_bytes(path: Path) -> tuple[Path, bytes]:
    path = Path(path)
    if path.is_dir():
        path = path / EVENTS_FILE
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise SessionError(f"{path}: no such session log") from None
    except OSError as error:
        raise SessionError(f"{path}: cannot read ({error.strerror})") from None
    if not data:
        raise SessionError(f"{path}: empty session log (the run stopped before its first event)")
    return path, data


def _scan(path: Path, data: bytes) -> tuple[SessionLog, BadLine | None]:
    """The events up to the first bad line, and that line (None if there is none).

    A bad last line with no newline after it is not bad but torn: a write
    that never finished (`torn_offset`, with a warning)."""
    log = SessionLog(path=path, events=[])
    offset = 0
    lines = data.split(b"\n")
    last_index = len(lines) - 1  # the part after the final newline ("" if the file ends with one)
    for index, raw in enumerate(lines):
        line_number = index + 1
        line_start = offset
        offset += len(raw) + 1
        is_tail = index == last_index
        if not raw.strip():
            continue
        try:
            event = _parse_line(raw, expected_seq=len(log.events) + 1)
        except EventFormatError as error:
            if is_tail:
                # No newline after it: the write of this line never finished.
                log.torn_offset = line_start
                log.warnings.append(
                    LogWarning(path, line_number, f"incomplete last line skipped ({len(raw)} bytes; {error})")
                )
                break
            return log, BadLine(line_number, line_start, str(error))
        if not log.events and not isinstance(event, SessionStarted):
            return log, BadLine(line_number, line_start, f"first event is {event.TYPE!r}")
        log.events.append(event)
        if is_tail:
            log.missing_newline = True
    return log, None


def _parse_line(raw: bytes, *, expected_seq: int) -> Event:
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        raise EventFormatError("not UTF-8 text") from None
    try:
        record = load_json(raw)
    except JsonTooLarge as error:
        raise EventFormatError(str(error)) from None
    except json.JSONDecodeError as error:
        # (removesuffix: some messages end in "at", as "Invalid control character at")
        raise EventFormatError(f"not valid JSON: {error.msg.removesuffix(' at')} at column {error.colno}") from None
    except ValueError as error:  # an integer of more digits than Python converts
        raise EventFormatError(f"not valid JSON: {error}") from None
    event = from_record(record)
    if event.seq != expected_seq:
        raise EventFormatError(f"sequence number {event.seq}, expected {expected_seq}")
    return event


class SessionWriter:
    """Appends events to one session's log; safe to call from several threads."""

    def __init__(self, directory: Path, *, next_seq: int = 1, fsync: bool = True) -> None:
        self.directory = Path(directory)
        self.fsync = fsync
        self.path = self.directory / EVENTS_FILE
        self._next_seq = next_seq
        self._lock = threading.Lock()
        try:
            # Unbuffered: a failed write leaves no bytes behind to be written later.
            self._file = open(self.path, "ab", buffering=0)  # noqa: SIM115 - closed by close()
        except OSError as error:
            raise SessionError(f"{self.path}: cannot open the session log for writing ({_reason(error)})") from None

    @property
    def session_id(self) -> str:
        return self.directory.name

    def append(self, event: Event) -> Event:
        """Stamp `event` with its sequence number and time, write it durably, return it."""
        with self._lock:
            if self._file.closed:
                raise SessionError(f"{self.path}: the session log is closed")
            event.seq = self._next_seq
            event.ts = _now()
            line = json.dumps(to_record(event), ensure_ascii=False, default=str, allow_nan=False)
            self._write_line(line.encode("utf-8") + b"\n")
            self._next_seq += 1
            return event

    def _write_line(self, data: bytes) -> None:
        """Write one whole line or nothing: after a failed write (a full disk)
        the bytes that did get written are cut off again, so the next event
        does not land after half a line."""
        fd = self._file.fileno()
        start = os.fstat(fd).st_size
        try:
            view = memoryview(data)
            while view:
                view = view[self._file.write(view):]
            if self.fsync:
                os.fsync(fd)
        except OSError as error:
            try:
                os.ftruncate(fd, start)
            except OSError:
                self._file.close()  # cannot undo it: leave a torn last line, which resume repairs
            raise SessionError(f"{self.path}: cannot write the session log ({_reason(error)})") from None

    def write_policy(self, policy: PolicyRecord) -> Path:
        """Write accepted code to `policies/<id>.py` (atomically: temp file, then rename)."""
        if not is_valid_id(policy.id):
            raise SessionError(f"{self.directory}: policy id {quoted(policy.id)} is not an id; its code is not written")
        try:
            (self.directory / POLICIES_DIR).mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise SessionError(f"{self.directory / POLICIES_DIR}: cannot create the policies folder ({_reason(error)})") from None
        target = path_inside(self.directory, POLICIES_DIR, f"{policy.id}.py")
        temporary = target.with_suffix(".py.tmp")
        try:
            with open(temporary, "w", encoding="utf-8") as handle:
                handle.write(policy.source)
                handle.flush()
                if self.fsync:
                    os.fsync(handle.fileno())
            os.replace(temporary, target)
        except OSError as error:
            try:
                temporary.unlink(missing_ok=True)
            except OSError:
                pass
            raise SessionError(f"{target}: cannot write the policy file ({_reason(error)})") from None
        return target

    def close(self) -> None:
        with self._lock:
            if not self._file.closed:
                self._file.close()

    def __enter__(self) -> "SessionWriter":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _describe_line(raw: bytes) -> str:
    """A dropped line in a few words: its event type and number, or that it is no event."""
    try:
        record = load_json(raw)
    except ValueError:  # (UnicodeDecodeError, JSONDecodeError and JsonTooLarge are ValueErrors)
        return f"unreadable ({len(raw)} bytes)"
    if isinstance(record, dict) and isinstance(record.get("type"), str):
        kind = record["type"] if record["type"] in EVENT_TYPES else quoted(record["type"], 40)
        seq = record.get("seq")
        return f"{kind} (event {seq if isinstance(seq, int) and not isinstance(seq, bool) else '?'})"
    return f"not an event ({len(raw)} bytes)"


def _free_path(path: Path) -> Path:
    """`path`, or `path.2`, `path.3`, ... : the first that does not exist."""
    candidate, n = path, 1
    while candidate.exists():
        n += 1
        candidate = path.with_name(f"{path.name}.{n}")
    return candidate


def _write_durably(path: Path, data: bytes) -> None:
    with open(path, "wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())


def _fsync_directory(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")


def _slug(text: str) -> str:
    return _UNSAFE.sub("_", text).strip("_.") or "x"


@dataclass(frozen=True)
class SessionInfo:
    """One line of `csro sessions`."""

    id: str
    path: Path
    game: str = ""
    oracle: str = ""
    solver: str = ""
    started: str = ""
    iterations: int = 0  # iterations that proposed (or tried to): not the oracle's empty last one
    oracle_finished: bool = False  # the session ended with the oracle having nothing more to propose
    population_size: int = 0
    # Two populations: the members of seat 0 and of seat 1; () for one population.
    seat_sizes: tuple[int, ...] = ()
    best_metric: tuple[str, float] | None = None  # (name, value)
    closed: str | None = None  # close reason, None if it never closed
    error: str | None = None  # set when the log cannot be read
    populations: int = 1  # 2: one population per seat


BACKUP_SUFFIX = ".bak"


@dataclass(frozen=True)
class LogRepair:
    """What `SessionStore.repair` did: the events kept, the lines dropped and where the whole log went."""

    path: Path
    kept_events: int
    kept_lines: int  # lines 1..kept_lines were kept
    dropped: list[tuple[int, str]]  # (line number, what it held) of each non-blank dropped line
    problem: str  # why the first dropped line was dropped; "" when nothing was
    backup: Path | None  # None when nothing needed repairing

    @property
    def repaired(self) -> bool:
        return self.backup is not None


class SessionStore:
    """All sessions under one root directory."""

    def __init__(self, root: Path | str | None = None, *, fsync: bool = True) -> None:
        self.root = Path(root) if root is not None else default_sessions_root()
        # Flushing to the disk per event is what makes a crash lose at most one
        # event; only tests that write thousands of events turn it off.
        self.fsync = fsync

    def session_dir(self, session_id: str) -> Path:
        return self.root / session_id

    def resolve(self, ref: str | Path) -> Path:
        """A session directory from an id under the root, a directory or an events file."""
        candidate = Path(ref)
        if candidate.name == EVENTS_FILE and candidate.is_file():
            return candidate.parent
        if candidate.is_dir() and (candidate / EVENTS_FILE).exists():
            return candidate
        under_root = self.root / str(ref)
        if (under_root / EVENTS_FILE).exists():
            return under_root
        if under_root.is_dir() or candidate.is_dir():
            where = under_root if under_root.is_dir() else candidate
            raise SessionError(f"{where}: not a session directory (no {EVENTS_FILE})")

        ids = [d.name for d in self.root.iterdir() if (d / EVENTS_FILE).exists()] if self.root.is_dir() else []
        raise SessionError(
            f"no session {str(ref)!r} under {self.root.resolve()}{did_you_mean(str(ref), ids)} "
            f"(`csro sessions` lists them; another directory: --sessions-dir DIR or CSRO_SESSIONS_DIR)"
        )

    def new_session_id(self, game: str, oracle: str) -> str:
        stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
        base = f"{stamp}-{_slug(game)}-{_slug(oracle)}"
        candidate, n = base, 1
        while self.session_dir(candidate).exists():
            n += 1
            candidate = f"{base}-{n}"
        return candidate

    def create(self, session_id: str) -> SessionWriter:
        if not is_valid_id(session_id):  # what is written must read back (events.ID_PATTERN)
            raise SessionError(f"session id {quoted(session_id)} is not an id ({ID_RULE})")
        directory = path_inside(self.root, session_id)
        try:
            directory.mkdir(parents=True, exist_ok=False)
        except FileExistsError:
            raise SessionError(f"{directory}: a session with this id already exists") from None
        except OSError as error:
            raise SessionError(f"{directory}: cannot create the session directory ({error.strerror})") from None
        return SessionWriter(directory, fsync=self.fsync)

    def read(self, ref: str | Path) -> SessionLog:
        return read_log(self.resolve(ref) / EVENTS_FILE)

    def open_for_append(self, ref: str | Path) -> tuple[SessionWriter, SessionLog]:
        """Read a session to continue it, repairing a torn or unterminated last line."""
        directory = self.resolve(ref)
        log = read_log(directory / EVENTS_FILE)
        path = directory / EVENTS_FILE
        try:
            if log.torn_offset is not None:
                # Keep the torn bytes for inspection, then cut them off the log.
                with open(path, "rb") as handle:
                    handle.seek(log.torn_offset)
                    torn = handle.read()
                with open(path.with_name(EVENTS_FILE + TORN_SUFFIX), "ab") as keep:
                    keep.write(torn + b"\n")
                with open(path, "r+b") as handle:
                    handle.truncate(log.torn_offset)
                    os.fsync(handle.fileno())
            elif log.missing_newline:
                with open(path, "ab") as handle:
                    handle.write(b"\n")
                    os.fsync(handle.fileno())
        except OSError as error:
            raise SessionError(f"{path}: cannot repair the log's last line to continue ({_reason(error)})") from None
        return SessionWriter(directory, next_seq=len(log.events) + 1, fsync=self.fsync), log

    def repair(self, ref: str | Path) -> LogRepair:
        """Cut a session's log at its first bad line (a corrupt event, or a torn last line), so it
        reads, replays and resumes again: the whole log is first copied beside it
        (events.jsonl.bak, .bak.2, ...), then replaced at once by the events before that line.
        Refused when no event would be left, or when the events kept do not fold into a state.
        Run it while no `csro run` writes the session."""
        from csro_tui.sessions.state import fold  # start-up time: importing it loads numpy; the fold imports the store's types

        path, data = _log_bytes(self.resolve(ref) / EVENTS_FILE)
        log, bad = _scan(path, data)
        cut = bad.offset if bad is not None else log.torn_offset
        if cut is None:  # (a last line without its newline reads, and resuming adds the newline)
            return LogRepair(path, len(log.events), len(data.rstrip(b"\n").split(b"\n")), [], "", None)
        if not log.events:
            problem = bad.problem if bad is not None else "no complete event"
            raise SessionError(f"{path}: nothing to keep: line 1 is not a csro session event ({problem})")
        try:
            fold(log.events)
        except Exception as error:  # noqa: BLE001 - any failure means the kept events are no session
            raise SessionError(f"{path}: the {len(log.events)} readable events do not make a session "
                               f"({type(error).__name__}: {error}); left unchanged") from None
        kept = data[:cut]
        first_dropped = kept.count(b"\n") + 1
        dropped = [(first_dropped + i, _describe_line(raw))
                   for i, raw in enumerate(data[cut:].split(b"\n")) if raw.strip()]
        problem = bad.problem if bad is not None else log.warnings[-1].message
        backup = _free_path(path.with_name(EVENTS_FILE + BACKUP_SUFFIX))
        try:
            _write_durably(backup, data)
            replacement = path.with_name(EVENTS_FILE + ".repairing")
            _write_durably(replacement, kept)
            os.replace(replacement, path)
            _fsync_directory(path.parent)
        except OSError as error:
            raise SessionError(f"{path}: cannot repair the log ({_reason(error)})") from None
        return LogRepair(path, len(log.events), first_dropped - 1, dropped, problem, backup)

    def append_to_closed(self, ref: str | Path, event: Event) -> Event:
        """Append one event to a session no run is writing: its log ends with
        `session_closed` (games played since may follow).  For recording a game
        played against a replayed session's policy.  An exclusive lock on the
        log serialises two windows doing this at once; a session that is not
        closed may be running in another process, so it is refused (resume it
        to record there)."""
        directory = self.resolve(ref)
        path = directory / EVENTS_FILE
        try:
            lock = open(path, "rb")  # noqa: SIM115 - closed below
        except OSError as error:
            raise SessionError(f"{path}: cannot open the session log ({_reason(error)})") from None
        with lock:
            fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
            log = read_log(path)
            last = next((e for e in reversed(log.events) if e.TYPE != "game_played"), None)
            if not isinstance(last, SessionClosed):
                raise SessionError(
                    f"{directory.name} is not closed (it may be running elsewhere): resume it to record games in it"
                )
            writer, _ = self.open_for_append(directory)
            try:
                return writer.append(event)
            finally:
                writer.close()

    def list_sessions(self) -> list[SessionInfo]:
        """Every session under the root, newest first; unreadable ones carry `error`."""
        if not self.root.is_dir():
            return []
        from csro_tui.sessions.state import fold  # start-up time: importing it loads numpy; the fold imports the store's types

        infos: list[SessionInfo] = []
        for directory in sorted(self.root.iterdir()):
            path = directory / EVENTS_FILE
            if not path.is_file():
                continue
            try:
                infos.append(fold(read_log(path).events).summary(directory))
            except Exception as error:  # noqa: BLE001 - a crafted log never hides the other sessions
                reason = str(error) if isinstance(error, SessionError) else f"{type(error).__name__}: {error}"
                # listed beside its id: the reason first ("line 4: corrupt event ..."), not the path
                infos.append(SessionInfo(id=directory.name, path=directory,
                                         error=reason.removeprefix(f"{path} ").removeprefix(f"{path}: ")))
        infos.sort(key=lambda info: (info.started, info.id), reverse=True)
        return infos
