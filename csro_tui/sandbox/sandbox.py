"""The sandbox, parent side: run one policy's code in an isolated child process.

`PolicyHost` starts `host_main.py` (stdlib only) in a fresh process with a
minimal environment, its own process group and temporary working directory,
and talks to it in line-delimited JSON over pipes.  The isolation set-up
(modes, the kernel-layer probe, the bwrap command line, the description) is
in `isolation.py`; this module is the channel and the checks.  Isolation
comes in two strengths (`isolation_mode()`), both with Landlock and seccomp
applied by the host to itself (host_kernel.py):

- "bubblewrap": the child runs under `bwrap` with no network, its own PID,
  IPC and UTS namespaces, a private /tmp, and read-only binds of only what
  the interpreter needs (never /work, the sessions directory or $HOME).
- "rlimits": no namespaces; the child relies on resource limits, dropping
  root, and the runtime guard alone.

Both modes apply, inside the child and before the policy loads: resource
limits (address space, CPU seconds, processes, file size, open files, no
core dumps), dropping root to a uid of the host's own (so the process limit and file
permissions apply), and an audit hook plus restricted builtins that block
imports outside the allowlist, file writes, reads outside the Python
installation, processes, sockets, signals, ctypes and frame introspection.

Deadlines and budgets are kept by the parent (clock.py): each host shares
a page of memory with the parent where it counts the calls it starts, and
one watchdog thread SIGKILLs a host whose call runs past its limit or whose
policy runs out of its time budget; the parent then reports the timeout.
No deadline grows with the size of a batch.  Every reply is checked; any
failure kills the host's whole process group and is raised as a
`PolicyFailure`, again on every later call.

Lists in observations (except `legal_actions`) are sent as appended
suffixes: per episode and key, the host remembers what the child holds.  A
list that is the same object as last time is assumed to have only grown (its
length and last known element are checked); a different list object is
compared with the child's copy and sent in full unless it extends it.  The
child hands the policy its reconstructed list itself (no per-move copy) and
checks a length-and-sample fingerprint after `act`; when the policy changed
the list, the child drops it and asks for it whole next time ("resync").
"""

from __future__ import annotations

import json
import math
import os
import re
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from typing import Callable

from csro_tui.errors import ConfigError
from csro_tui.sandbox.clock import (
    kill_host_process,
    KIND_ACT,
    KIND_END,
    KIND_INIT,
    KIND_LOAD,
    CallTiming,
    HostClock,
    ProgressPage,
    watchdog,
)
from csro_tui.sandbox import zygote
from csro_tui.sandbox.contract import ALLOWED_IMPORTS
from csro_tui.sandbox.failures import FailureCategory, PolicyFailure
from csro_tui.sandbox.host_kernel import syscall_name
from csro_tui.sandbox.isolation import _spawn  # noqa: F401 - the one spawner thread (isolation.py)
from csro_tui.sandbox.isolation import _PASSTHROUGH_ENV, _SANDBOX_SCRIPT, HOST_MODULES, HOST_SCRIPT, SANDBOX_ENV_VAR, WEAK_SANDBOX_ENV_VAR, _bubblewrap_command, _child_env, _python_roots, _site_dirs, bubblewrap_problem, describe_isolation, host_bytecode, host_uid, isolation_mode, kernel_boundary_problem, kernel_layers  # noqa: F401 - re-exported: callers import them from here
from csro_tui.sandbox.validation import (
    ALLOWED_DUNDER_ATTRIBUTES,
    FORBIDDEN_ATTRIBUTES,
    FORBIDDEN_BUILTINS,
    POLICY_FILENAME,
    imported_modules,
)
from csro_tui.text import clean_text

# Modules the host also loads before the policy runs: what allowed modules
# import lazily (Counter.most_common imports heapq, functools.singledispatch
# weakref, str.encode codecs, numpy 2 its submodules on first use, ...).
# After start-up no new executable memory may be mapped, so no extension
# module can load any more (host_kernel.forbid_executable_memory); and after
# the drop from root the installation may be unreadable (pyenv under /root).
# numpy's submodules loaded on first use, each with the words in a policy's
# source that may reach it.  numpy.ma is pure Python but its import parses
# signatures with ast (a compile the guard refuses once a policy is loaded);
# np.unique and the set functions import it.
_NUMPY_SUBMODULES = {
    "numpy.random": r"\brandom\b",
    "numpy.linalg": r"\blinalg\b",
    "numpy.fft": r"\bfft\b",
    "numpy.polynomial": r"\bpolynomial\b",
    "numpy.ma": r"\b(ma|unique\w*)\b|1d\b",
}
_LAZY_STDLIB = ("heapq", "weakref", "copy", "types", "encodings.latin_1", "encodings.ascii", "encodings.utf_16")
# Categories the child may report itself; anything else is malformed.
_CHILD_CATEGORIES = {
    "crash": FailureCategory.CRASH,
    "memory": FailureCategory.MEMORY,
    "forbidden": FailureCategory.FORBIDDEN,
    "timeout": FailureCategory.TIMEOUT,
}
_MEMORY_HINTS = ("MemoryError", "Cannot allocate memory", "out of memory", "Out of memory", "memory allocation")
# The host's own address space before any episode: measured here at 16 MB
# (stdlib only) and 110 MB with numpy loaded (VmSize of the host process,
# both sandbox modes), rounded up.
HOST_BASE_MB = 128
_TEXT_LIMIT = 20_000  # longest message or traceback accepted from the child
_LAST_LINE_LIMIT = 200  # longest line of the host's log quoted in a failure summary
# How much of a policy's printed output its host keeps from the start, for
# the review to show (the count of bytes printed is kept whatever the size).
PRINTED_HEAD_CHARS = 600


@dataclass(frozen=True)
class SandboxLimits:
    """Resource limits of one policy host.

    Every time limit is enforced from outside the host (clock.py): the
    parent's watchdog SIGKILLs a host that passes one, whatever the host did
    to its own signals; the host's own timer only words the failure first.

    init_timeout: wall-clock limit of one run of the module's code (the
        first load includes interpreter start and imports such as numpy at
        ~0.3 s; each episode runs the module afresh), and the reserve of the
        set-up budget.
    move_timeout: wall-clock limit of each single policy call (`__init__`,
        `act`, the end of an episode), whatever the batch size.
    call_grace: seconds past a call's limit after which a host whose policy
        caught the timeout (or is stuck in C code) ends itself, or is killed.
    batch_timeout: seconds a host may take before its first call of a
        request, and to send its reply after the last.
    move_budget: the chess clock: seconds per decision (`act` call) a policy
        may use on average, pooled over the episodes a host plays at once...
    budget_reserve: ...plus this many seconds.  A policy that runs out fails
        with a timeout (episode budget: budget_reserve + move_budget x its
        decisions).
    init_budget: seconds per episode for running the module's code and
        `Policy.__init__`, pooled likewise, on top of init_timeout.
    memory_mb: address-space limit (RLIMIT_AS) of the host process, shared
        by the episodes it plays at once.
    episode_memory_mb: memory each episode may hold: a host plays at most
        `episodes_per_host()` episodes at once, so that many episodes of
        this size fit in memory_mb beside the host itself (the referee
        plays larger evaluations in waves).
    cpu_seconds: CPU time for the host's whole lifetime (RLIMIT_CPU).
    max_processes: RLIMIT_NPROC (counts threads; the host needs no more).
    max_file_bytes: RLIMIT_FSIZE, largest file the host could write.
    max_open_files: RLIMIT_NOFILE.
    max_message_bytes: longest reply line accepted from the host.
    output_tail_chars: how much of the policy's printed output is kept for
        failure reports.
    recursion_limit: cap on sys.setrecursionlimit inside the host.
    """

    init_timeout: float = 10.0
    move_timeout: float = 1.0
    batch_timeout: float = 2.0
    call_grace: float = 2.0
    move_budget: float = 0.02
    budget_reserve: float = 2.0
    init_budget: float = 0.2
    memory_mb: int = 1024
    episode_memory_mb: int = 8
    cpu_seconds: int = 600
    max_processes: int = 1
    max_file_bytes: int = 1 << 20
    max_open_files: int = 64
    max_message_bytes: int = 64 << 20
    output_tail_chars: int = 2000
    recursion_limit: int = 10_000

    def __post_init__(self) -> None:
        for field_name in (
            "init_timeout", "move_timeout", "batch_timeout", "call_grace", "move_budget", "budget_reserve", "init_budget"
        ):
            value = getattr(self, field_name)
            if not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0):
                raise ValueError(f"SandboxLimits.{field_name} must be a positive number of seconds, not {value!r}")
        for field_name in (
            "memory_mb", "episode_memory_mb", "cpu_seconds", "max_processes", "max_open_files", "max_message_bytes"
        ):
            value = getattr(self, field_name)
            if not (isinstance(value, int) and value > 0):
                raise ValueError(f"SandboxLimits.{field_name} must be a positive integer, not {value!r}")
        for field_name in ("max_file_bytes", "output_tail_chars", "recursion_limit"):
            value = getattr(self, field_name)
            if not (isinstance(value, int) and value >= 0):
                raise ValueError(f"SandboxLimits.{field_name} must be a non-negative integer, not {value!r}")

    def episodes_per_host(self) -> int:
        """How many episodes one host may play at once: what memory_mb holds
        beside the host's own address space (HOST_BASE_MB) at
        episode_memory_mb each; at least one."""
        return max(1, (self.memory_mb - HOST_BASE_MB) // self.episode_memory_mb)


def limits_from(values: dict) -> SandboxLimits | None:
    """SandboxLimits with the given options (a name -> value mapping where None
    means the default: RunConfig's fields, `csro eval`'s flags); None when no
    option is given.  ConfigError for a value the limits refuse."""
    given = {name: value for name, value in values.items() if value is not None}
    if not given:
        return None
    try:
        return SandboxLimits(**given)
    except (TypeError, ValueError) as error:
        raise ConfigError(str(error)) from None


# -- spawning ---------------------------------------------------------------------

@dataclass
class StartedProcess:
    """A host process spawned, sent the policy-independent part of its
    set-up (`_prepare_message`), and waiting for the policy's module and
    limits; it has run nothing but the host's own code.
    `host_pool.HostPool` keeps a few ready; `PolicyHost.adopt` takes one, once."""

    process: subprocess.Popen  # or a zygote.ZygoteHost (the same interface)
    temp_dir: str
    mode: str
    page: ProgressPage | None = None  # the clock's page shared with the host
    claimed: bool = False

    def claim(self) -> None:
        if self.claimed:
            raise RuntimeError("this host process was already given to a policy")
        self.claimed = True

    def discard(self) -> None:
        """Kill the process (its whole group) and remove its temporary directory."""
        _kill_process(self.process)
        for stream in (self.process.stdin, self.process.stdout):  # also when it had died already
            try:
                stream.close()
            except OSError:
                pass
        if self.page is not None:
            self.page.close()
        shutil.rmtree(self.temp_dir, ignore_errors=True)


def start_host_process(mode: str, *, fork: bool = True, numpy: bool = False) -> StartedProcess:
    """Spawn a host (`python -s -S -P host_start.py`, in bubblewrap in that
    mode) in a fresh temporary directory and send it the first part of its
    set-up; it then waits for the policy's module.  OSError if it cannot be
    started.  The host is forked by the zygote (zygote.py) when it is on
    and `fork` (by the one that has imported numpy if `numpy`), else spawned."""
    host_bytecode()  # the host's modules compiled once, not at every start
    temp_dir = tempfile.mkdtemp(prefix="csro-host-")
    page = None
    try:
        page = ProgressPage()
        work_dir = os.path.join(temp_dir, "work")
        os.mkdir(work_dir, 0o700)
        log_path = os.path.join(temp_dir, "host.log")
        if mode == "bubblewrap":
            command = _bubblewrap_command(shutil.which("bwrap") or "bwrap", work_dir)
            script = _SANDBOX_SCRIPT
        else:
            command = [sys.executable]
            script = str(HOST_SCRIPT)
        # -S: no site module (faster start, no .pth code, our editable install
        # stays invisible); the child adds the site dirs it needs itself.
        command += ["-s", "-S", "-P", script]
        forked = (zygote.spawn_host(mode, work_dir, log_path, page.fd, numpy) if fork and zygote.zygote_enabled(mode)
                  else None)
        if forked is not None:  # forked by the zygote (zygote.py); it runs the same host_main
            process, clock_fd = forked
        else:
            clock_fd = page.fd
            with open(log_path, "wb") as log:
                process = _spawn(
                    command,
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    stderr=log,
                    cwd=work_dir,
                    env=_child_env(),
                    start_new_session=True,
                    close_fds=True,
                    pass_fds=(page.fd,),
                )
    except BaseException:
        if page is not None:
            page.close()
        shutil.rmtree(temp_dir, ignore_errors=True)
        raise
    started = StartedProcess(process, temp_dir, mode, page)
    drop_to = None
    if os.geteuid() == 0:  # its own uid, made from its pid (isolation.host_uid)
        drop_to = [host_uid(process.pid)] * 2
        os.chown(work_dir, *drop_to)
    prepare = _prepare_message(mode, drop_to)
    prepare["clock_fd"] = clock_fd  # the page the host maps for the parent's clock (clock.py)
    page.close_fd()  # the host has its own copy; the mapping stays
    # Part one of the host's set-up goes at once, so a pooled host has its
    # kernel layers in place before any policy is given to it.
    try:
        process.stdin.write(_encode_message(prepare, "the host's set-up"))
        process.stdin.flush()
    except OSError:  # died at once: whoever loads a policy into it reports why
        pass
    return started


def _prepare_message(mode: str, drop_to: list | None) -> dict:
    """The host's first request: the part of its set-up that does not depend
    on the policy (host_main._prepare).  The same for every host of a mode
    but `drop_to`, the [uid, gid] it drops to as root (None: no drop)."""
    layers = kernel_layers()
    return {
        "seq": 0,
        "op": "prepare",
        # What allowed modules import lazily, loaded while the installation
        # is readable: after the drop to nobody it may not be (pyenv under /root).
        "preimport": ["__future__", *_LAZY_STDLIB],
        "site_dirs": list(_site_dirs()),
        "drop_to": drop_to,
        "allowed_imports": sorted(ALLOWED_IMPORTS),
        "forbidden_builtins": sorted(FORBIDDEN_BUILTINS),
        "forbidden_attributes": sorted(FORBIDDEN_ATTRIBUTES),
        "allowed_dunder_attributes": sorted(ALLOWED_DUNDER_ATTRIBUTES),
        "kernel": {"landlock": bool(layers["landlock"]), "seccomp": bool(layers["seccomp"])},
    }



def _kill_process(process: subprocess.Popen | None) -> None:
    """SIGKILL a host's process group, reap it and close its pipes."""
    if process is None or process.returncode is not None:
        return
    kill_host_process(process)
    process.wait()
    for stream in (process.stdin, process.stdout):
        try:
            stream.close()
        except OSError:
            pass


# -- the host -------------------------------------------------------------------


class _HostDied(Exception):
    """The child closed the channel or could not be written to."""


class PolicyHost:
    """One sandboxed process running one policy for many concurrent episodes.

    Not thread-safe: use one host from one thread.  Calls start the host if
    needed.  Any failure kills the host and raises a `PolicyFailure`; the
    same failure is raised again by every later call.
    """

    def __init__(
        self, source: str, game_info: dict, *, name: str = "policy", limits: SandboxLimits | None = None
    ) -> None:
        if not isinstance(source, str):
            raise TypeError(f"policy source must be str, not {type(source).__name__}")
        try:
            json.dumps(game_info)
        except (TypeError, ValueError) as error:
            raise ValueError(f"game_info must be JSON-serialisable: {error}") from None
        self.source = source
        self.game_info = game_info
        self.name = name
        self.limits = limits or SandboxLimits()
        self.failure: PolicyFailure | None = None
        self.mode: str | None = None
        self.layers: dict | None = None  # the kernel layers the host confirmed
        self._process: subprocess.Popen | None = None
        self._temp_dir: str | None = None
        self._closed = False
        self._seq = 0
        self._buffer = bytearray()
        self._scanned = 0
        self._poll_in: select.poll | None = None
        self._poll_out: select.poll | None = None
        self._in_flight: tuple | None = None  # (requests, legal lists, what) of a sent act
        self._launching = False  # launched: the module load not confirmed yet
        self._prepared = False  # its reply to `prepare` read at launch (zygote hosts)
        self._page: ProgressPage | None = None
        self._clock: HostClock | None = None
        self._timing: CallTiming | None = None  # the page's last figures, once it is closed
        # What the policy printed (to nowhere: the host discards it), as its replies report it:
        # bytes in all and the first PRINTED_HEAD_CHARS characters, untrusted.
        self.printed_bytes = 0
        self.printed_head = ""
        self._prestarted: StartedProcess | None = None  # adopted from a pool, not launched yet
        # episode id -> {observation key -> (last list object, the child's copy)}
        self._episodes: dict[int, dict[str, tuple[list, list]]] = {}
        # (episode id, key) of lists the policy changed in place, which the host
        # dropped: `send_act_columns` must send them whole (`send_act` does so itself)
        self.dropped_lists: set[tuple[int, str]] = set()
        self._mirrors = False  # send_act has kept copies of lists in _episodes

    # -- lifecycle -------------------------------------------------------------

    def __enter__(self) -> PolicyHost:
        return self

    def __exit__(self, *_exc) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass

    def start(self) -> None:
        """Spawn the host and load the module (no-op when already running)."""
        self.launch()
        if self._launching:
            self._launching = False
            # The reply to `prepare` (start_host_process; read at launch for a
            # host forked by the zygote), then to the load.
            if not self._prepared:
                self._receive("setting up the sandbox", expected_seq=0)
            reply = self._receive("loading the module")
            self._clock.disarm()
            self._check_layers(reply.get("layers"))

    def _check_layers(self, applied) -> None:
        """The host must report the kernel layers it was asked to apply."""
        wanted = kernel_layers()
        if not isinstance(applied, dict) or (
            bool(wanted["landlock"]) and not applied.get("landlock")
        ) or (wanted["seccomp"] and not applied.get("seccomp")):
            self._fail(FailureCategory.MALFORMED, "host did not confirm its kernel isolation layers")
        self.layers = applied

    def adopt(self, started: "StartedProcess") -> None:
        """Run this policy in a process started beforehand (`host_pool.HostPool`)
        instead of spawning one at `launch`.  The process must be fresh: it
        was spawned by `start_host_process` and has never been sent a module;
        each one is adopted once (and killed with this host)."""
        if self._process is not None or self._prestarted is not None or self._closed:
            raise RuntimeError(f"policy host {self.name!r} already has a process")
        started.claim()
        self._prestarted = started

    def launch(self) -> None:
        """The first half of `start`: spawn the host and send it the module,
        without waiting for it to load (no-op once launched).

        A caller starting several hosts launches them all, then calls
        `start` on each: the hosts start up at the same time (interpreter,
        sandbox and imports take a few hundred ms each) instead of one after
        another.  `start` (or any other call) then waits for the module.
        """
        self._check_usable()
        if self._process is not None:
            return
        self.mode = isolation_mode()
        problem = kernel_boundary_problem()
        if problem:
            raise ConfigError(problem)
        launched_at = time.monotonic()
        imported = imported_modules(self.source)
        uses_numpy = "numpy" in imported
        started, self._prestarted = self._prestarted, None
        if started is not None and (started.mode != self.mode or started.process.poll() is not None):
            started.discard()  # started for another isolation mode, or dead: not trusted with this policy
            started = None
        if (started is not None and uses_numpy and isinstance(started.process, zygote.ZygoteHost)
                and not started.process.numpy and zygote.numpy_zygote_enabled()):
            started.discard()  # a fork from the zygote that has numpy loaded is cheaper than numpy's import
            started = None
        if started is None:
            try:
                started = start_host_process(self.mode, numpy=uses_numpy)
            except OSError as error:
                self.failure = PolicyFailure(
                    FailureCategory.CRASH, f"could not start the policy host: {error}", "", self.name
                )
                self.close()
                raise self.failure from None
        if isinstance(started.process, zygote.ZygoteHost):
            started = self._proven(started)
        self._process, self._temp_dir, self._page = started.process, started.temp_dir, started.page
        started.page = None  # this host's now (closed with it)
        self._clock = HostClock(self._page, self._process, self.limits)
        watchdog().register(self._clock)
        os.set_blocking(self._process.stdin.fileno(), False)
        self._poll_in = select.poll()
        self._poll_in.register(self._process.stdout.fileno(), select.POLLIN)
        self._poll_out = select.poll()
        self._poll_out.register(self._process.stdin.fileno(), select.POLLOUT)
        # Imported by the host before it drops root and forbids new executable
        # memory (the rest of its set-up came with `start_host_process`:
        # _prepare_message).
        preimport = sorted(imported & ALLOWED_IMPORTS)
        if "numpy" in preimport:
            # numpy 2 loads these on first use (40-50 ms for all of them):
            # those the source names, so honest code finds them loaded; code
            # that reaches one otherwise fails, naming the refused mmap.
            preimport += [name for name, words in _NUMPY_SUBMODULES.items() if re.search(words, self.source)]
        config = {
            "op": "load",
            "source": self.source,
            "game_info": self.game_info,
            "policy_filename": POLICY_FILENAME,
            "preimport": preimport,
            "recursion_limit": self.limits.recursion_limit,
            "output_tail_chars": self.limits.output_tail_chars,
            "output_head_chars": PRINTED_HEAD_CHARS,
            "limits": {
                "call_seconds": self.limits.move_timeout,
                "call_grace_seconds": self.limits.call_grace,
                "load_seconds": self.limits.init_timeout,
                "memory_bytes": self.limits.memory_mb << 20,
                "cpu_seconds": self.limits.cpu_seconds,
                "max_processes": self.limits.max_processes,
                "max_file_bytes": self.limits.max_file_bytes,
                "max_open_files": self.limits.max_open_files,
            },
        }
        self._clock.arm(1, (KIND_LOAD,), at=launched_at)  # from spawn on: start-up, imports, module code
        self._send(config, "loading the module")
        self._launching = True

    def _proven(self, started: StartedProcess) -> StartedProcess:
        """A host forked by the zygote proves its layers (its `prepare` reply)
        before the policy's module is sent; one that cannot is replaced by a
        spawned host, and the policy is not charged with it."""
        problem = zygote.prepared(started.process, self.limits.init_timeout)
        if problem is None:
            self._prepared = True
            return started
        zygote.log.warning("a host forked by the zygote could not prove its sandbox (%s); spawning one instead",
                           problem)
        started.discard()
        try:
            return start_host_process(self.mode, fork=False)
        except OSError as error:
            self.failure = PolicyFailure(FailureCategory.CRASH, f"could not start the policy host: {error}", "",
                                         self.name)
            self.close()
            raise self.failure from None

    def new_episodes(self, episodes: list[tuple[int, int, int]]) -> None:
        """Construct `Policy(player, game)` for each (episode_id, player, seed)."""
        self.start()
        batch = []
        batch_ids: set[int] = set()
        for entry in episodes:
            try:
                episode, player, seed = entry
            except (TypeError, ValueError):
                raise ValueError(f"an episode must be (episode_id, player, seed), not {entry!r}") from None
            for label, value in (("episode id", episode), ("player", player), ("seed", seed)):
                if type(value) is not int:
                    raise ValueError(f"{label} must be an int, not {value!r}")
            if episode in self._episodes or episode in batch_ids:
                raise ValueError(f"episode {episode} is already running on this host")
            batch_ids.add(episode)
            batch.append([episode, player, seed])
        if not batch:
            return
        # Each episode runs the module's code afresh (init_timeout) and then
        # Policy.__init__ (move_timeout), each call on its own deadline.
        self._clock.arm(2 * len(batch), (KIND_LOAD, KIND_INIT), [entry[0] for entry in batch])
        self._call({"op": "new", "eps": batch}, f"constructing {len(batch)} episode(s)")
        self._clock.disarm()
        for episode, _player, _seed in batch:
            self._episodes[episode] = {}

    def act(self, requests: list[tuple[int, dict]]) -> list[int | dict[int, float]]:
        """One round trip for the whole batch; answers in request order.

        Each answer is a legal action id, or a distribution over legal
        actions normalised to sum to 1.  Same as `send_act` then `receive_act`.
        """
        if not self.send_act(requests):
            return []
        return self.receive_act()

    def send_act(self, requests: list[tuple[int, dict]]) -> bool:
        """The first half of `act`: send the batch and return without waiting.

        Lets a caller with several hosts send every host its batch before
        reading any answer, so the hosts think at the same time (and while
        the caller encodes the next batch) instead of one after another.
        Then `receive_act` must be called before any other call on this host.
        Returns False for an empty batch (nothing sent, nothing to receive).
        """
        self.start()
        if not requests:
            return False
        encoded = []
        legal_lists = []
        self._mirrors = True
        # Locals: this loop runs once per move of every episode.
        episodes, encode = self._episodes, self._encode_observation
        for entry in requests:
            try:
                episode, obs = entry
            except (TypeError, ValueError):
                raise ValueError(f"a request must be (episode_id, obs), not {type(entry).__name__}") from None
            sent = episodes.get(episode)
            if sent is None:
                raise ValueError(f"episode {episode!r} is not running on this host; call new_episodes first")
            legal = obs.get("legal_actions") if isinstance(obs, dict) else None
            if not isinstance(legal, (list, tuple)):
                raise ValueError(f"the observation of episode {episode} must be a dict with a legal_actions list")
            encoded.append(encode(episode, obs, sent))
            legal_lists.append(legal)
        what = f"act for {len(requests)} episode(s)"
        self._clock.arm(len(requests), (KIND_ACT,), [entry[0] for entry in encoded])
        self._send({"op": "act", "reqs": encoded}, what)
        self._in_flight = (requests, legal_lists, what)
        return True

    def receive_act(self) -> list[int | dict[int, float]]:
        """The second half of `act`: wait for the answers of the batch sent last."""
        if self._in_flight is None:
            raise RuntimeError(f"policy host {self.name!r} has no act batch in flight")
        requests, legal_lists, what = self._in_flight
        self._in_flight = None
        reply = self._receive(what)
        self._clock.disarm()
        answers = reply.get("answers")
        if not isinstance(answers, list) or len(answers) != len(requests):
            count = len(answers) if isinstance(answers, list) else "no"
            self._fail(FailureCategory.MALFORMED, f"host sent {count} answers for {len(requests)} requests")
        self._forget_lists(reply.get("resync", []))
        shared = legal_lists[0] if legal_lists else None
        if shared is not None and legal_lists[-1] is shared and legal_lists.count(shared) == len(legal_lists):
            # One legal list for the whole batch (send_act_columns): exact ints,
            # all legal, is two C-level passes instead of a check per answer.
            if set(map(type, answers)) == {int} and set(shared).issuperset(answers):
                return answers
        check = self._check_answer
        # Plain legal action ids (the common case) are checked inline; anything
        # else goes through _check_answer, which also words the failures.
        return [
            answer if type(answer) is int and answer in legal else check(answer, legal, episode)
            for answer, legal, (episode, _obs) in zip(answers, legal_lists, requests)
        ]

    def send_act_columns(
        self,
        episodes: list[int],
        *,
        keys: list[str],
        same: dict | None = None,
        each: dict[str, list] | None = None,
        grown: dict[str, tuple] | None = None,
        whole: list[tuple[int, str, list]] = (),
    ) -> bool:
        """`send_act` for a batch whose observations share their keys, sent by
        column: a few flat lists to encode and decode instead of a dict per
        request.  Then `receive_act`, as after `send_act`.

        `episodes`: an episode id per observation.  Each of `keys` (the
        observations' keys, in order) takes its values from one of:
        `same` {key: value}: one value for all, a JSON scalar or a list of
            scalars (every observation gets its own copy);
        `each` {key: [a value per observation]};
        `grown` {key: (length, items)}: the list the host holds for that
            episode and key, which has `length` items (an int for all, or a
            list with one per observation), with items[i] appended;
        `whole` [(index, key, list)]: a `grown` key's list sent whole for the
            observation at `index` instead (its first observation, or a list
            in `dropped_lists`, which the policy changed in place).
        `legal_actions` must come from `same` or `each`.  The caller owns the
        lists: no copy is kept here, and the host fails as out of step if a
        length is wrong.  Returns False for an empty batch.
        """
        self.start()
        count = len(episodes)
        if not count:
            return False
        same, each, grown = same or {}, each or {}, grown or {}
        for key in keys:
            if (key in same) + (key in each) + (key in grown) != 1:
                raise ValueError(f"observation key {key!r} needs exactly one of same, each or grown")
        for key, value in same.items():
            if isinstance(value, (list, tuple)) and not all(type(item) in (int, float, str, bool) for item in value):
                raise ValueError(f"shared value {key!r} must be a scalar or a list of scalars")
        for key, column in each.items():
            if len(column) != count:
                raise ValueError(f"column {key!r} has {len(column)} values for {count} episodes")
        for key, (_length, items) in grown.items():
            if len(items) != count:
                raise ValueError(f"grown list {key!r} has {len(items)} items for {count} episodes")
        if "legal_actions" in same:
            legal = same["legal_actions"]
            legal_lists = [legal] * count
        else:
            legal_lists = each.get("legal_actions")
        if legal_lists is None or not all(isinstance(legal, (list, tuple)) for legal in legal_lists[:1]):
            raise ValueError("the observations need a legal_actions list (in same or each)")
        batch = set(episodes)
        if len(batch) != count or not batch.issubset(self._episodes.keys()):
            unknown = sorted(batch.difference(self._episodes))[:3]
            raise ValueError(
                f"episodes {unknown} are not running on this host; call new_episodes first"
                if unknown else "an episode appears twice in one batch"
            )
        if self.dropped_lists:
            covered = {(episodes[index], key) for index, key, _list in whole}
            missing = [(e, key) for e, key in self.dropped_lists if e in batch and key in grown and (e, key) not in covered]
            if missing:
                raise ValueError(f"lists the host dropped must be sent whole: {missing[:3]}")
            self.dropped_lists -= covered
        if self._mirrors:  # send_act's copies of these episodes' lists no longer match the host's
            for episode in episodes:
                self._episodes[episode].clear()
        message = {
            "op": "cols",
            "ids": episodes,
            "keys": keys,
            "same": same,
            "each": each,
            "grown": {key: [length, items] for key, (length, items) in grown.items()},
        }
        if whole:
            message["whole"] = [[index, key, items] for index, key, items in whole]
        what = f"act for {count} episode(s)"
        self._clock.arm(count, (KIND_ACT,), episodes)
        self._send(message, what)
        self._in_flight = (list(zip(episodes, legal_lists)), legal_lists, what)
        return True

    def end_episodes(self, episode_ids: list[int]) -> None:
        """Drop the episodes' policy instances (unknown ids are ignored)."""
        self._check_usable()
        known = [episode for episode in episode_ids if episode in self._episodes]
        if not known or self._process is None:
            return
        for episode in known:
            del self._episodes[episode]
        if self.dropped_lists:
            self.dropped_lists = {entry for entry in self.dropped_lists if entry[0] in self._episodes}
        self._clock.arm(len(known), (KIND_END,), known)
        self._call({"op": "end", "ids": known}, "ending episodes")
        self._clock.disarm()

    def close(self) -> None:
        """Kill the host's process group, reap it and remove its temp dir."""
        self._closed = True
        if self._prestarted is not None:
            self._prestarted.discard()
            self._prestarted = None
        self._kill()
        self._stop_clock()
        if self._temp_dir is not None:
            shutil.rmtree(self._temp_dir, ignore_errors=True)
            self._temp_dir = None

    def close_later(self) -> "Callable[[], None]":
        """`close` in two halves: SIGKILL the host's process group now (it runs
        nothing more), and return the rest (reap it, close its pipes, remove
        its temp dir) for the caller to run later, e.g. on a background
        thread: a killed bwrap takes ~10 ms to tear its namespaces down."""
        self._closed = True
        if self._prestarted is not None:
            self._prestarted.discard()
            self._prestarted = None
        kill_host_process(self._process)
        self._stop_clock()
        process, temp_dir = self._process, self._temp_dir
        # The process is `finish`'s now: a later `close` (or `__del__`) here must not reap it
        # on this thread too, racing the reaper (found in review).
        self._process, self._temp_dir = None, None

        def finish() -> None:
            _kill_process(process)
            if temp_dir is not None:
                shutil.rmtree(temp_dir, ignore_errors=True)

        return finish

    def timing(self) -> CallTiming | None:
        """How long the policy's calls took so far, as its host measured them,
        and what it printed (discarded)."""
        timing = self._page.timing() if self._page is not None else self._timing
        if timing is not None:
            timing.printed_bytes, timing.printed_head = self.printed_bytes, self.printed_head
        return timing

    @property
    def time_used(self) -> tuple[float, int]:
        """(seconds charged to the policy's act budget, decisions), by the parent's clock."""
        clock = self._clock
        return (clock.play_used, clock.decisions) if clock is not None else (0.0, 0)

    @property
    def live_episodes(self) -> list[int]:
        """The ids of the episodes this host holds (constructed, not ended)."""
        return list(self._episodes)

    @property
    def pid(self) -> int | None:
        """Process id of the host (bwrap's in bubblewrap mode), or None."""
        return self._process.pid if self._process is not None else None

    # -- plumbing --------------------------------------------------------------

    def _check_usable(self) -> None:
        if self.failure is not None:
            raise self.failure
        if self._closed:
            raise RuntimeError(f"policy host {self.name!r} is closed")

    def _kill(self) -> None:
        clock = self._clock
        if clock is None:
            _kill_process(self._process)
            return
        with clock.lock:  # never reaped while the watchdog may be signalling it
            clock.disarm()
            _kill_process(self._process)

    def _stop_clock(self) -> None:
        """The watchdog stops watching this host; its page is closed."""
        clock, self._clock = self._clock, None
        if clock is not None:
            watchdog().unregister(clock)
            with clock.lock:
                clock.disarm()
        if self._page is not None:
            self._timing = self._page.timing()
            self._page.close()
            self._page = None

    def _fail(self, category: FailureCategory, message: str, traceback_text: str = "") -> None:
        self._in_flight = None
        self._launching = False
        self.failure = PolicyFailure(category, message, traceback_text, self.name)
        self._kill()
        raise self.failure

    def _call(self, message: dict, what: str) -> dict:
        """Send one request, wait for its reply; fail the host on any problem."""
        self._send(message, what)
        return self._receive(what)

    def _send(self, message: dict, what: str) -> None:
        self._check_usable()
        if self._in_flight is not None:
            raise RuntimeError(f"policy host {self.name!r} has an act batch in flight; call receive_act first")
        self._seq += 1
        message["seq"] = self._seq
        data = _encode_message(message, what)
        try:
            self._write(data)
        except _HostDied:
            self._fail(*self._death_report(what))

    def _receive(self, what: str, expected_seq: int | None = None) -> dict:
        """The next reply; waits as long as the host lives (the watchdog
        kills a host that passes a deadline, which ends the wait)."""
        try:
            line = self._read_line()
        except _HostDied:
            self._fail(*self._death_report(what))
        verdict = self._clock.verdict if self._clock is not None else None
        if verdict is not None:  # killed just after it replied: the clock's word stands
            self._fail(FailureCategory.TIMEOUT, verdict)
        try:
            reply = _decode_reply(line)
        except (ValueError, RecursionError):  # RecursionError: nested too deep to parse
            self._fail(FailureCategory.MALFORMED, f"host sent a reply that is not JSON while {what}")
        seq = self._seq if expected_seq is None else expected_seq
        if not isinstance(reply, dict) or reply.get("seq") != seq or not isinstance(reply.get("ok"), bool):
            self._fail(FailureCategory.MALFORMED, f"host sent a reply out of protocol while {what}")
        if "printed" in reply:
            self._note_printed(reply["printed"])
        if not reply["ok"]:
            self._fail(*self._child_failure(reply))
        return reply

    def _note_printed(self, printed) -> None:
        """Keep a reply's `printed: [bytes, first characters]`, checked: a count
        that never goes down, a head no longer than asked for."""
        if not (type(printed) is list and len(printed) == 2 and type(printed[0]) is int
                and self.printed_bytes <= printed[0] < 1 << 62 and type(printed[1]) is str
                and len(printed[1]) <= PRINTED_HEAD_CHARS):
            self._fail(FailureCategory.MALFORMED, "host sent a report of printed output out of protocol")
        self.printed_bytes, self.printed_head = printed

    def _write(self, data: bytes) -> None:
        fd = self._process.stdin.fileno()
        view = memoryview(data)
        while view:
            try:
                written = os.write(fd, view)
            except BlockingIOError:
                events = self._poll_out.poll()
                if any(flag & (select.POLLERR | select.POLLHUP) for _fd, flag in events):
                    raise _HostDied from None
                continue
            except (BrokenPipeError, ConnectionResetError):
                raise _HostDied from None
            view = view[written:]

    def _read_line(self) -> bytes:
        fd = self._process.stdout.fileno()
        buffer = self._buffer
        limit = self.limits.max_message_bytes
        while True:
            end = buffer.find(b"\n", self._scanned)
            if end >= 0:
                line = bytes(buffer[:end])
                del buffer[: end + 1]
                self._scanned = 0
                return line
            self._scanned = len(buffer)
            if len(buffer) > limit:
                self._fail(FailureCategory.MALFORMED, f"host sent a reply longer than {limit} bytes")
            self._poll_in.poll()  # until a reply, or the end of a host the clock killed
            # 64 kB, not more: a larger read buffer is mmap'ed and unmapped on
            # every call (measured here: 20 us per read at 1 MB, 1.3 us at 64 kB).
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                raise _HostDied
            buffer += chunk

    def _log_tail(self, chars: int = 1500) -> str:
        if self._temp_dir is None:
            return ""
        try:
            with open(os.path.join(self._temp_dir, "host.log"), "rb") as log:
                log.seek(0, os.SEEK_END)
                log.seek(max(0, log.tell() - chars))
                return clean_text(log.read().decode("utf-8", "replace")).strip()
        except OSError:
            return ""

    def _death_report(self, what: str) -> tuple[FailureCategory, str, str]:
        """Classify a host that stopped talking: by signal, exit code and log."""
        process = self._process
        if self._clock is not None:
            with self._clock.lock:  # from here on the process may be reaped
                self._clock.disarm()
        try:
            process.wait(timeout=1.0)
        except subprocess.TimeoutExpired:
            self._kill()
        code = process.returncode
        log = self._log_tail()
        verdict = self._clock.verdict if self._clock is not None else None
        if verdict is not None:  # the clock killed it
            return FailureCategory.TIMEOUT, verdict, log
        signal_number = -code if code < 0 else (code - 128 if self.mode == "bubblewrap" and code > 128 else 0)
        if signal_number:
            try:
                signal_name = signal.Signals(signal_number).name
            except ValueError:
                signal_name = f"signal {signal_number}"
            if signal_number == signal.SIGPROF:
                return (
                    FailureCategory.TIMEOUT,
                    f"a call ran past its limit of {self.limits.move_timeout:g} s (plus {self.limits.call_grace:g} s "
                    f"of grace) in CPU time while {what}",
                    log,
                )
            if signal_number == signal.SIGXCPU:
                return (
                    FailureCategory.TIMEOUT,
                    f"used up its CPU time limit of {self.limits.cpu_seconds} s while {what}",
                    log,
                )
            if any(hint in log for hint in _MEMORY_HINTS):
                return (
                    FailureCategory.MEMORY,
                    f"host was killed ({signal_name}) while {what}, out of memory (limit {self.limits.memory_mb} MB)",
                    log,
                )
            if signal_number == signal.SIGKILL:
                # Not our doing (the memory limit makes allocations fail, the
                # CPU limit sends SIGXCPU): another process, or the system
                # out of memory as a whole.  Say so rather than guess.
                return (
                    FailureCategory.CRASH,
                    f"host was killed (SIGKILL) while {what}, from outside the sandbox "
                    "(another process, or the system's out-of-memory killer)",
                    log,
                )
            hint = " (too deep recursion?)" if signal_number == signal.SIGSEGV else ""
            return FailureCategory.CRASH, f"host crashed with {signal_name} while {what}{hint}", log
        if any(hint in log for hint in _MEMORY_HINTS):
            return (
                FailureCategory.MEMORY,
                f"host ran out of memory while {what} (limit {self.limits.memory_mb} MB)",
                log,
            )
        last = log.splitlines()[-1] if log else "no message"
        if len(last) > _LAST_LINE_LIMIT:  # the policy may have written it: keep the summary short
            last = last[: _LAST_LINE_LIMIT - 3] + "..."
        return FailureCategory.CRASH, f"host exited with code {code} while {what}: {last}", log

    def _child_failure(self, reply: dict) -> tuple[FailureCategory, str, str]:
        name = reply.get("category")
        category = _CHILD_CATEGORIES.get(name) if isinstance(name, str) else None
        message = reply.get("message")
        traceback_text = reply.get("traceback", "")
        output = reply.get("output", "")
        if category is None or not all(isinstance(v, str) for v in (message, traceback_text, output)):
            return FailureCategory.MALFORMED, "host sent a failure report out of protocol", ""
        number = reply.get("syscall")
        if type(number) is int and 0 <= number < 1 << 16:  # a call seccomp refused: name it

            message = message.replace(f"system call #{number}", f"system call {syscall_name(number)}", 1)
        # Policy-made text: escape sequences and control characters go here,
        # before it reaches a session log, an LLM prompt or a terminal.
        message = clean_text(message[:_TEXT_LIMIT]) or "no message"
        if category is FailureCategory.MEMORY:
            message += (f" (limit {self.limits.memory_mb} MB for the host, which may play "
                        f"{self.limits.episodes_per_host()} episodes at once: {self.limits.episode_memory_mb} MB each)")
        traceback_text = clean_text(traceback_text[:_TEXT_LIMIT])
        if output:
            traceback_text += f"\n--- last output of the policy ---\n{clean_text(output[-self.limits.output_tail_chars:])}"
        return category, message, traceback_text

    # -- observations and answers ------------------------------------------------

    def _forget_lists(self, resync) -> None:
        """Lists the policy changed in place: send them whole next time."""
        if not isinstance(resync, list):
            self._fail(FailureCategory.MALFORMED, "host sent a reply out of protocol (resync)")
        for entry in resync:
            if not (
                isinstance(entry, list) and len(entry) == 2 and type(entry[0]) is int and isinstance(entry[1], str)
            ):
                self._fail(FailureCategory.MALFORMED, "host sent a reply out of protocol (resync)")
            sent = self._episodes.get(entry[0])
            if sent is not None:
                sent.pop(entry[1], None)
                self.dropped_lists.add((entry[0], entry[1]))

    @staticmethod
    def _encode_observation(episode: int, obs: dict, sent: dict[str, tuple[list, list]]) -> list:
        """[episode, plain values, {key: [start, appended items]}] for the child.

        Runs once per request (every move of every episode), so it is kept
        lean: the common case, the same list object grown by a few items, is
        one comparison, one slice and one extend; `sent` is updated in place.
        """
        plain = {}
        deltas = {}
        for key, value in obs.items():
            if value.__class__ is not list or key == "legal_actions":
                plain[key] = value
                continue
            previous = sent.get(key)
            if previous is not None:
                last_object, mirror = previous
                known = len(mirror)
                if known and len(value) >= known and (
                    value[known - 1] == mirror[-1] if value is last_object else value[:known] == mirror
                ):
                    suffix = value[known:]
                    mirror += suffix
                    if value is not last_object:
                        sent[key] = (value, mirror)
                    deltas[key] = [known, suffix]
                    continue
            sent[key] = (value, list(value))
            deltas[key] = [0, value]
        if len(sent) != len(deltas):  # lists the observation no longer has
            for key in [key for key in sent if key not in deltas]:
                del sent[key]
        return [episode, plain, deltas or 0]

    def _check_answer(self, answer, legal, episode: int) -> int | dict[int, float]:
        if type(answer) is int:
            if answer not in legal:
                self._fail(
                    FailureCategory.ILLEGAL_ACTION,
                    f"act returned action {answer}, which is not legal (legal: {_brief_list(legal)}) "
                    f"in episode {episode}",
                )
            return answer
        if isinstance(answer, dict) and set(answer) == {"dist"} and isinstance(answer["dist"], list):
            return self._check_distribution(answer["dist"], legal, episode)
        if isinstance(answer, dict) and set(answer) == {"type"} and isinstance(answer["type"], str):
            self._fail(
                FailureCategory.MALFORMED,
                f"act returned a {answer['type'][:60]}; expected an action id (int) or a dict "
                f"{{action id: probability}} (episode {episode})",
            )
        self._fail(FailureCategory.MALFORMED, f"host sent an answer out of protocol (episode {episode})")

    def _check_distribution(self, pairs: list, legal, episode: int) -> dict[int, float]:
        where = f"(episode {episode})"
        if not pairs:
            self._fail(FailureCategory.MALFORMED, f"act returned an empty distribution {where}")
        legal_set = set(legal)
        result: dict[int, float] = {}
        for pair in pairs:
            if not (isinstance(pair, list) and len(pair) == 2):
                self._fail(FailureCategory.MALFORMED, f"host sent an answer out of protocol {where}")
            key, probability = pair
            if type(key) is not int:
                kind = key.get("type") if isinstance(key, dict) else None
                self._fail(
                    FailureCategory.MALFORMED,
                    f"distribution key of type {str(kind)[:60]} is not an action id {where}",
                )
            if type(probability) not in (int, float):
                kind = probability.get("type") if isinstance(probability, dict) else None
                self._fail(
                    FailureCategory.MALFORMED,
                    f"probability of action {key} is a {str(kind)[:60]}, not a number {where}",
                )
            if type(probability) is int:  # only a forged reply has ints too big for a float
                probability = float(probability) if probability.bit_length() <= 1023 else math.inf
            if not math.isfinite(probability):
                self._fail(FailureCategory.MALFORMED, f"probability of action {key} is {probability} {where}")
            if probability < 0:
                self._fail(FailureCategory.MALFORMED, f"probability of action {key} is negative ({probability}) {where}")
            if key not in legal_set:
                if probability == 0:
                    continue  # zero weight on an illegal action changes nothing
                self._fail(
                    FailureCategory.ILLEGAL_ACTION,
                    f"act gave probability {probability:g} to action {key}, which is not legal "
                    f"(legal: {_brief_list(legal)}) {where}",
                )
            result[key] = float(probability)
        total = math.fsum(result.values())
        if not abs(total - 1.0) <= 1e-6:
            self._fail(FailureCategory.MALFORMED, f"probabilities sum to {total:.9g}, not 1 {where}")
        return {key: probability / total for key, probability in result.items()}


# -- the wire ----------------------------------------------------------------------
#
# Messages to the host are encoded with orjson when it can produce exactly
# what the json module would mean (measured: ~10x faster on act batches,
# the biggest single cost of a lockstep step in the referee).  Anything it
# refuses or would change goes through json as before: values it does not
# serialise the way json does (subclasses, dataclasses, datetimes, big
# ints, non-str keys) raise and fall back, and a b"null" in its output
# (None, but also NaN/inf, which orjson turns into null while json writes
# NaN/Infinity) re-encodes with json.  The host reads every message with
# json.loads, so what the policy receives is unchanged.

try:
    import orjson as _orjson
except ImportError:  # optional: everything works (slower) without it
    _orjson = None

_ORJSON_STRICT = (
    _orjson.OPT_PASSTHROUGH_SUBCLASS | _orjson.OPT_PASSTHROUGH_DATACLASS | _orjson.OPT_PASSTHROUGH_DATETIME
    if _orjson is not None
    else 0
)


def _encode_message(message: dict, what: str) -> bytes:
    """One protocol line; ValueError for a message JSON cannot carry."""
    if _orjson is not None:
        try:
            data = _orjson.dumps(message, option=_ORJSON_STRICT)
        except TypeError:  # orjson.JSONEncodeError: let json decide, as before
            data = None
        if data is not None and b"null" not in data:
            return data + b"\n"
    try:
        return json.dumps(message, separators=(",", ":")).encode("utf-8") + b"\n"
    except (TypeError, ValueError) as error:
        raise ValueError(f"cannot send {what} to the policy host: {error}") from None


def _decode_reply(line: bytes):
    """The reply as Python data; ValueError if it is not JSON.

    json, not orjson: replies are small (an action id per request), and
    orjson reads integers beyond 64 bits as floats where json keeps them.
    """
    return json.loads(line)


def _brief_list(values, limit: int = 12) -> str:
    values = list(values)
    shown = ", ".join(str(v) for v in values[:limit])
    return f"[{shown}{', ...' if len(values) > limit else ''}]"
