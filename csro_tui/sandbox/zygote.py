"""The host zygote, parent side: new sandbox hosts forked in milliseconds.

One zygote process per csro process (and per referee-pool worker or Ray
actor, each a process of its own) has done, once, the start-up work no
policy can influence (zygote_main.py); `spawn_host` asks it to fork a child
that then runs `host_main.main()` exactly as a spawned host does, applying
every layer to itself before any policy byte.  `start_host_process`
(host_process.py) uses it when `zygote_enabled(mode)`, so the warm pool, exact
tabularisation and sampled matches all take their hosts from it, and falls
back to spawning when the zygote cannot start or has died (it is started
again on the next host).

Each child gets from the parent, through the zygote (SCM_RIGHTS): its own
stdin and stdout pipes, its log, its clock page (a memfd the parent made,
so the page is the parent's whatever becomes of the zygote, and the child
maps it exactly as a spawned host maps the one it inherits) and a status
pipe on which the zygote reports its exit code.  `ZygoteHost` stands in for
`subprocess.Popen` towards the rest of the sandbox (pid, stdin, stdout,
poll, wait, returncode).

Under bubblewrap the zygote runs in one bubblewrap sandbox (the command
line a spawned host gets) and its children share its namespaces; each one
still drops to a uid of its own (isolation.host_uid of its pid as the
parent sees it, found through /proc: the zygote only knows the pid in its
namespace).

A second zygote per mode has imported numpy: a policy that imports numpy
gets its host from it (`PolicyHost.launch`), so its load skips numpy's
import, while other hosts stay small (CSRO_ZYGOTE_NUMPY=0: no second one).

CSRO_ZYGOTE=0 turns the zygote off (every host spawned, as before).
"""

from __future__ import annotations

import atexit
import json
import logging
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

from csro_tui.booleans import parse_boolean
from csro_tui.sandbox.isolation import (
    _SANDBOX_SCRIPT,
    HOST_SCRIPT,
    _bubblewrap_command,
    _child_env,
    _site_dirs,
    _spawn,
    host_bytecode,
)

log = logging.getLogger(__name__)

ZYGOTE_ENV_VAR = "CSRO_ZYGOTE"
ZYGOTE_NUMPY_ENV_VAR = "CSRO_ZYGOTE_NUMPY"
_CLOCK_FD_IN_CHILD = 10  # zygote_main.CLOCK_FD
_READY_SECONDS = 20.0  # the zygote's start (interpreter and imports) on a loaded machine
_REPLY_SECONDS = 10.0  # a fork and its reply
_RETRY_AFTER_SECONDS = 5.0  # after a zygote failed to start: spawn hosts meanwhile


def zygote_enabled(mode: str) -> bool:
    """Whether hosts of this isolation mode come from the zygote."""
    if _switched_off(ZYGOTE_ENV_VAR):
        return False
    return mode in ("rlimits", "bubblewrap")


def numpy_zygote_enabled() -> bool:
    """Whether policies that import numpy get hosts from a second zygote
    that has imported it (its import is most of such a policy's load; its
    submodules stay lazy, as in a spawned host).  CSRO_ZYGOTE_NUMPY=0: no."""
    return not _switched_off(ZYGOTE_NUMPY_ENV_VAR)


def _switched_off(variable: str) -> bool:
    """The project's off-words in any case (0/false/no/off, csro_tui.booleans);
    unset or anything else leaves the zygote on, its default."""
    return parse_boolean(os.environ.get(variable, "1")) is False


class ZygoteHost:
    """A host forked by the zygote, with the part of `subprocess.Popen`'s
    interface the sandbox uses.  Its exit code comes from the zygote (its
    parent); if the zygote dies first the host dies with it (parent-death
    signal) and reads as killed."""

    def __init__(self, zygote: "_Zygote", pid: int, inner_pid: int, stdin_fd: int, stdout_fd: int,
                 status_fd: int) -> None:
        self.pid = pid
        self.inner_pid = inner_pid  # its pid as the zygote sees it (another under bubblewrap)
        self.numpy = zygote.numpy  # numpy loaded before the fork
        self.args = ["zygote child", str(pid)]
        self.stdin = open(stdin_fd, "wb")
        self.stdout = open(stdout_fd, "rb")
        self.returncode: int | None = None
        self._zygote = zygote
        self._status_fd = status_fd
        self._lock = threading.Lock()
        try:
            # Readable once the process has ended, before the zygote has
            # noticed: poll() must see a dead host at once, as Popen.poll does
            # (a pool must not hand it out).  The pid cannot be reused first: the
            # zygote reaps it only on release.
            self._pidfd = os.pidfd_open(pid)
        except (AttributeError, OSError):
            self._pidfd = -1

    def poll(self) -> int | None:
        if self.returncode is None and self._pidfd >= 0 and select.select([self._pidfd], [], [], 0)[0]:
            try:
                return self.wait(_REPLY_SECONDS)  # ended: the zygote's report follows at once
            except subprocess.TimeoutExpired:
                return None
        try:
            return self.wait(0)
        except subprocess.TimeoutExpired:
            return None

    def wait(self, timeout: float | None = None) -> int:
        if self.returncode is not None:
            return self.returncode
        status_fd = self._status_fd
        if status_fd >= 0:
            ready, _, _ = select.select([status_fd], [], [], timeout)
            if not ready:
                raise subprocess.TimeoutExpired(self.args, timeout)
        with self._lock:
            if self.returncode is not None:
                return self.returncode
            data = b""
            while True:
                chunk = os.read(self._status_fd, 64)
                if not chunk:
                    break
                data += chunk
            os.close(self._status_fd)
            self._status_fd = -1
            if self._pidfd >= 0:
                os.close(self._pidfd)
                self._pidfd = -1
            try:
                code = int(data.strip())
            except ValueError:
                # The zygote died: the child dies with it (parent-death signal);
                # make sure, through its pidfd (never a recycled pid), and wait for it.
                code = -signal.SIGKILL
                if self._pidfd >= 0:
                    try:
                        signal.pidfd_send_signal(self._pidfd, signal.SIGKILL)
                    except OSError:
                        pass
                    select.select([self._pidfd], [], [], _REPLY_SECONDS)
                else:
                    _kill_quietly(self.pid)
            else:
                self._zygote.release(self.inner_pid)
            self.returncode = code
            return code

    def send_signal(self, number: int) -> None:
        if self.returncode is None:
            _kill_quietly(self.pid, number)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    def __del__(self) -> None:
        for name in ("_status_fd", "_pidfd"):
            if getattr(self, name, -1) >= 0:
                try:
                    os.close(getattr(self, name))
                except OSError:
                    pass


def _kill_quietly(pid: int, number: int = signal.SIGKILL) -> None:
    try:
        os.kill(pid, number)
    except (ProcessLookupError, PermissionError):
        pass


class _Zygote:
    """One running zygote process and the socket to it."""

    def __init__(self, mode: str, numpy: bool = False) -> None:
        host_bytecode()
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.mode = mode
        self.numpy = numpy  # the flavour that has imported numpy
        self.lock = threading.Lock()
        self.socket = ours
        self.work_dir = None
        self.pid = 0  # the zygote's pid here (not bwrap's)
        if mode == "bubblewrap":
            self.work_dir = tempfile.mkdtemp(prefix="csro-zygote-")
            command = _bubblewrap_command(shutil.which("bwrap") or "bwrap", self.work_dir) + ["-s", "-S", "-P", _SANDBOX_SCRIPT]
        else:
            command = [sys.executable, "-s", "-S", "-P", str(HOST_SCRIPT)]
        try:
            # Started on the long-lived spawner thread (isolation._spawn): the
            # zygote's parent-death signal is tied to the thread that starts it.
            self.process = _spawn(
                command + ["--zygote", str(theirs.fileno())],
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                env=_child_env(), start_new_session=True, close_fds=True,
                pass_fds=(theirs.fileno(),),
            )
        except BaseException:
            ours.close()
            if self.work_dir is not None:
                shutil.rmtree(self.work_dir, ignore_errors=True)
            raise
        finally:
            theirs.close()
        try:
            reply = self._receive(_READY_SECONDS)
        except OSError:
            self.close()
            raise
        ready = reply.get("ready") if isinstance(reply, dict) else None
        if type(ready) is not int:
            self.close()
            raise OSError("the host zygote did not start")
        if mode == "bubblewrap":
            found = [pid for pid in _descendants(self.process.pid, 3) if _namespace_pid(pid) == ready]
            if len(found) != 1:
                self.close()
                raise OSError("the host zygote's process was not found under bubblewrap")
            self.pid = found[0]
        elif ready != self.process.pid:
            self.close()
            raise OSError("the host zygote did not start")
        else:
            self.pid = ready
        modules = ["numpy"] if numpy else []
        if modules:
            self.socket.send(json.dumps({"op": "preload", "site_dirs": list(_site_dirs()), "modules": modules}).encode())
            try:
                self._receive(_READY_SECONDS)
            except (OSError, ValueError):
                self.close()
                raise

    def _receive(self, timeout: float):
        ready, _, _ = select.select([self.socket], [], [], timeout)
        if not ready:
            raise OSError(f"the host zygote did not answer within {timeout:g} s")
        data = self.socket.recv(1 << 16)
        if not data:
            raise OSError("the host zygote ended")
        return json.loads(data)

    def alive(self) -> bool:
        return self.process.poll() is None

    def spawn(self, work_dir: str, stdin_r: int, stdout_w: int, log_fd: int, clock_fd: int,
              status_w: int) -> tuple[int, int]:
        """(pid here, pid in the zygote's namespace) of a child forked for a host.  Under bubblewrap the
        child makes its working directory in the sandbox's private /tmp."""
        cwd = None if self.mode == "bubblewrap" else work_dir
        with self.lock:
            socket.send_fds(self.socket, [json.dumps({"op": "spawn", "cwd": cwd}).encode()],
                            [stdin_r, stdout_w, log_fd, clock_fd, status_w])
            reply = self._receive(_REPLY_SECONDS)
        pid = reply.get("pid") if isinstance(reply, dict) else None
        if type(pid) is not int or pid <= 0:
            raise OSError(f"the host zygote refused to fork a host: {reply!r}")
        inner = pid
        if self.mode == "bubblewrap":
            found = [child for child in _children(self.pid) if _namespace_pid(child) == inner]
            if len(found) != 1:
                # A child the parent cannot name: end the zygote, and the child with it.
                try:
                    self.process.kill()
                except OSError:
                    pass
                raise OSError("the host the zygote forked was not found under bubblewrap")
            pid = found[0]
        return pid, inner

    def release(self, pid: int) -> None:
        """The zygote reaps the child; once this returns its pid is free (as
        after `Popen.wait`)."""
        try:
            with self.lock:
                self.socket.send(json.dumps({"op": "release", "pid": pid}).encode())
                self._receive(_REPLY_SECONDS)
        except (OSError, ValueError):
            pass  # the zygote is gone, and its zombies with it

    def close(self) -> None:
        try:
            self.socket.close()
        except OSError:
            pass
        if self.process.poll() is None:
            try:
                self.process.kill()
            except OSError:
                pass
            self.process.wait()
        if self.work_dir is not None:
            shutil.rmtree(self.work_dir, ignore_errors=True)


def _children(pid: int) -> list[int]:
    """The pids of a process's children (its threads' children, all of them)."""
    found = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return found
    for task in tasks:
        try:
            with open(f"/proc/{pid}/task/{task}/children") as stream:
                found += [int(word) for word in stream.read().split()]
        except (OSError, ValueError):
            pass
    return found


def _descendants(pid: int, depth: int) -> list[int]:
    found, frontier = [], [pid]
    for _level in range(depth):
        frontier = [child for parent in frontier for child in _children(parent)]
        found += frontier
    return found


def _namespace_pid(pid: int) -> int | None:
    """A process's pid in its own (innermost) PID namespace."""
    try:
        with open(f"/proc/{pid}/status") as stream:
            for line in stream:
                if line.startswith("NSpid:"):
                    return int(line.split()[-1])
    except (OSError, ValueError, IndexError):
        pass
    return None


_zygotes: dict[tuple[str, bool], _Zygote] = {}  # (isolation mode, numpy) -> this process's zygote
_zygotes_pid = 0  # the process they belong to: a forked child starts its own
_zygote_lock = threading.Lock()
_failed_at: dict[tuple[str, bool], float] = {}
starts = 0  # zygotes started by this process (tests, benches)


def _current(mode: str, numpy: bool = False) -> _Zygote | None:
    """This process's zygote for `mode`, started (or restarted) if needed;
    None while one cannot be started (hosts are then spawned)."""
    global _zygotes_pid, starts
    with _zygote_lock:
        if _zygotes_pid != os.getpid():
            _zygotes.clear()  # a forked process's copies: not its children
            _zygotes_pid = os.getpid()
        key = (mode, numpy)
        zygote = _zygotes.get(key)
        if zygote is not None and zygote.alive():
            return zygote
        if zygote is not None:
            log.warning("the host zygote died (exit %s); starting another", zygote.process.returncode)
            zygote.close()
            del _zygotes[key]
        if time.monotonic() - _failed_at.get(key, float("-inf")) < _RETRY_AFTER_SECONDS:
            return None
        try:
            zygote = _Zygote(mode, numpy)
        except (OSError, ValueError) as error:
            log.warning("could not start the host zygote (hosts are spawned instead): %s", error)
            _failed_at[key] = time.monotonic()
            return None
        _zygotes[key] = zygote
        starts += 1
        return zygote


def spawn_host(mode: str, work_dir: str, log_path: str, clock_fd: int,
               numpy: bool = False) -> tuple[ZygoteHost, int] | None:
    """A host forked by the zygote, with the descriptor number of its clock
    page inside it; None when the zygote is unavailable (the caller spawns)."""
    zygote = _current(mode, numpy and numpy_zygote_enabled())
    if zygote is None:
        return None
    stdin_r, stdin_w = os.pipe()
    stdout_r, stdout_w = os.pipe()
    status_r, status_w = os.pipe()
    theirs = [stdin_r, stdout_w, status_w]
    ours = [stdin_w, stdout_r, status_r]
    try:
        log_fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
        theirs.append(log_fd)
        try:
            pid, inner_pid = zygote.spawn(work_dir, stdin_r, stdout_w, log_fd, clock_fd, status_w)
        except (OSError, ValueError) as error:
            log.warning("the host zygote failed (%s); spawning this host", error)
            with _zygote_lock:
                if _zygotes.get((mode, zygote.numpy)) is zygote:
                    zygote.close()
            for fd in ours:
                os.close(fd)
            return None
    except BaseException:
        for fd in ours:
            os.close(fd)
        raise
    finally:
        for fd in theirs:
            os.close(fd)
    return ZygoteHost(zygote, pid, inner_pid, stdin_w, stdout_r, status_r), _CLOCK_FD_IN_CHILD


def prepared(host: ZygoteHost, timeout: float) -> str | None:
    """Read a forked host's reply to `prepare` (its layers in place); None if
    it came and is a success, else what went wrong.  The parent checks this
    before a policy's module is sent, so a child that cannot set its sandbox
    up is replaced, never charged to the policy."""
    fd = host.stdout.fileno()
    line = b""
    deadline = time.monotonic() + timeout
    while not line.endswith(b"\n"):
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            return f"no reply to its set-up within {timeout:g} s"
        chunk = os.read(fd, 1)  # byte by byte: nothing after the reply may be consumed here (none is sent)
        if not chunk:
            return f"it ended before its set-up was done (exit {host.poll()})"
        line += chunk
        if len(line) > 1 << 16:
            return "its reply to the set-up is too long"
    try:
        reply = json.loads(line)
    except ValueError:
        return "its reply to the set-up is not JSON"
    if not isinstance(reply, dict) or reply.get("seq") != 0 or reply.get("ok") is not True:
        message = reply.get("message") if isinstance(reply, dict) else None
        return f"its set-up failed: {str(message)[:200]}" if message else "its reply to the set-up is out of protocol"
    return None


def shutdown() -> None:
    """Kill this process's zygotes (their hosts die with them)."""
    with _zygote_lock:
        zygotes = list(_zygotes.values()) if _zygotes_pid == os.getpid() else []
        _zygotes.clear()
    for zygote in zygotes:
        zygote.close()


atexit.register(shutdown)
