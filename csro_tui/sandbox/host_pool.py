"""Warm policy hosts: sandbox processes started ahead of need, each used once.

Starting a host (bubblewrap's namespaces, the interpreter, the host's own
modules, then the first part of its set-up: no-new-privs, Landlock,
seccomp) is tens of milliseconds of CPU; giving a started host its module
(its limits, dropping root, the guard's patches and hook, compiling and
running the module) is ~1-2 ms.  A `HostPool` keeps `size` hosts started
in the background, so a new policy pays the second cost only.

Isolation is unchanged: a pooled process has run nothing but the host's
own start-up and the policy-independent part of its set-up (its kernel
layers are in place while it waits); the second message (the policy's
module with its limits) makes it apply the policy's rlimits, drop root and
arm the guard before the policy's code runs, as every host does.  A
process is handed to exactly one `PolicyHost` (`PolicyHost.adopt`, which
refuses a process adopted before) and dies with it: never reused for
another policy.  A pooled process that died while waiting is dropped and
replaced; one started under another isolation mode is discarded by the
host that takes it.

Use the pool as a host factory (`pool(source, game_info, name=..., limits=...)`
returns a `PolicyHost`), and `close()` it when the session ends: the
pre-started processes are killed and their temporary directories removed.
"""

from __future__ import annotations

import logging
import threading
import time
import weakref
from collections import deque

from csro_tui.errors import ConfigError
from csro_tui.sandbox.host_process import StartedProcess, start_host_process
from csro_tui.sandbox.isolation import isolation_mode
from csro_tui.sandbox.limits import SandboxLimits
from csro_tui.sandbox.policy_host import PolicyHost

log = logging.getLogger(__name__)

# Hosts kept started: an exact-game iteration tabularises one new policy (two
# when a proposal is edited or retried); a host takes ~40-50 ms of wall time
# and ~30 ms of CPU to get ready, two to three Kuhn iterations, so a run of
# quick iterations draws on a stock of them (~12-20 MB each while idle).
DEFAULT_POOL_SIZE = 6
# While hosts are being taken in quick succession and some are left, the
# pool waits this long after the last take before starting replacements: a
# process started during a burst of short iterations shares the CPU with
# the work that takes the hosts, and the stock is there for that burst.
REFILL_AFTER_SECONDS = 0.05
# The longest wait before trying again after a host failed to start.
MAX_RETRY_SECONDS = 30.0


class HostPool:
    """A few sandbox processes started in the background, handed out once each.

    The work is done by a `_PoolState` that the pool's threads share; the
    pool itself is only a handle, so a pool its owner forgot to close is
    closed when it is garbage-collected (weakref.finalize): its processes
    never outlive it.
    """

    def __init__(self, size: int = DEFAULT_POOL_SIZE, *, mode: str | None = None) -> None:
        """`mode`: the isolation mode to start hosts in; None follows
        `isolation_mode()` at each start (a host started under another mode
        than its policy's is discarded by `PolicyHost.launch`)."""
        if not (isinstance(size, int) and size >= 0):
            raise ValueError(f"pool size must be a non-negative integer, not {size!r}")
        self._state = _PoolState(size, mode)
        self._finalizer = weakref.finalize(self, self._state.close)
        self._state.start()

    size = property(lambda self: self._state.size)
    mode = property(lambda self: self._state.mode)
    started = property(lambda self: self._state.started, doc="processes spawned by the pool")
    handed_out = property(lambda self: self._state.handed_out)
    replaced = property(lambda self: self._state.replaced, doc="pooled processes found dead and dropped")

    def __call__(
        self, source: str, game_info: dict, *, name: str = "policy", limits: SandboxLimits | None = None
    ) -> PolicyHost:
        """A `PolicyHost` for this policy, on a pre-started process when one is ready."""
        host = PolicyHost(source, game_info, name=name, limits=limits)
        started = self.take()
        if started is not None:
            host.adopt(started)
        return host

    def take(self) -> StartedProcess | None:
        """A live pre-started process (the caller owns it from here), or None."""
        return self._state.take()

    def retire(self, host: PolicyHost) -> None:
        """Close a host handed out by this pool: killed now, reaped on the
        pool's reaper thread (off the caller's path); `close` waits for it."""
        self._state.retire(host.close_later())

    def ready_pids(self) -> list[int]:
        """Process ids of the pre-started processes waiting now (bwrap's in bubblewrap mode)."""
        with self._state.changed:
            return [started.process.pid for started in self._state.ready]

    def wait_ready(self, count: int | None = None, timeout: float = 30.0) -> bool:
        """Block until `count` (default: the pool's size) processes are ready (tests, benches)."""
        state = self._state
        wanted = state.size if count is None else count
        with state.changed:
            return state.changed.wait_for(lambda: state.closed or len(state.ready) >= wanted, timeout)

    def close(self) -> None:
        """Stop starting hosts, kill every pre-started one and finish reaping
        retired ones (idempotent)."""
        self._finalizer()

    def __enter__(self) -> HostPool:
        return self

    def __exit__(self, *_exc) -> None:
        self.close()


class _PoolState:
    """What the pool's filler and reaper threads share (never the pool itself)."""

    def __init__(self, size: int, mode: str | None) -> None:
        self.size = size
        self.mode = mode
        self.ready: deque[StartedProcess] = deque()
        self.changed = threading.Condition()
        self.closed = False
        self.started = 0
        self.handed_out = 0
        self.replaced = 0
        self.dead: deque = deque()  # the rest of retired hosts' close, for the reaper
        self.filler: threading.Thread | None = None
        self.reaper: threading.Thread | None = None
        self.last_take = float("-inf")

    def start(self) -> None:
        if self.size:
            self.filler = threading.Thread(target=self.fill, name="csro-host-pool", daemon=True)
            self.filler.start()

    def take(self) -> StartedProcess | None:
        with self.changed:
            while self.ready:
                started = self.ready.popleft()
                self.changed.notify_all()  # the filler starts a replacement
                if started.process.poll() is None:
                    self.handed_out += 1
                    self.last_take = time.monotonic()
                    return started
                self.replaced += 1
                log.info("a pre-started policy host had died (exit %s); replacing it", started.process.returncode)
                started.discard()
        return None

    def retire(self, finish) -> None:
        with self.changed:
            if not self.closed:
                if self.reaper is None:
                    self.reaper = threading.Thread(target=self.reap, name="csro-host-reaper", daemon=True)
                    self.reaper.start()
                self.dead.append(finish)
                self.changed.notify_all()
                return
        finish()

    def reap(self) -> None:
        """The reaper thread: finish closing retired hosts until closed."""
        while True:
            with self.changed:
                self.changed.wait_for(lambda: self.dead or self.closed)
                if not self.dead:
                    return
                finish = self.dead.popleft()
            finish()

    def fill(self) -> None:
        """The filler thread: keep `size` processes started until closed."""
        backoff = 0.0  # after a failed start: wait, longer each time, then try again
        while True:
            with self.changed:
                self.changed.wait_for(lambda: self.closed or len(self.ready) < self.size)
                # Some left and one taken a moment ago: refill after the burst.
                while self.ready and not self.closed:
                    lull = REFILL_AFTER_SECONDS - (time.monotonic() - self.last_take)
                    if lull <= 0:
                        break
                    self.changed.wait(lull)
                if self.closed:
                    return
            try:
                started = start_host_process(self.mode or isolation_mode())
            except (OSError, ConfigError) as error:
                # Meanwhile hosts start on demand, as without a pool (and say why there). A
                # passing shortage (EAGAIN, EMFILE) must not leave the session cold for good.
                (log.debug if backoff else log.warning)("could not pre-start a policy host: %s", error)
                backoff = min(MAX_RETRY_SECONDS, backoff * 2 or 1.0)
                with self.changed:
                    if self.changed.wait_for(lambda: self.closed, backoff):
                        return
                continue
            backoff = 0.0
            with self.changed:
                self.started += 1
                if self.closed:
                    started.discard()
                    return
                self.ready.append(started)
                self.changed.notify_all()

    def close(self) -> None:
        with self.changed:
            self.closed = True
            self.changed.notify_all()
        for thread in (self.filler, self.reaper):
            if thread is not None and thread is not threading.current_thread():
                thread.join(timeout=30)
        with self.changed:
            leftovers = list(self.ready)
            self.ready.clear()
            unreaped = list(self.dead)
            self.dead.clear()
        for started in leftovers:
            started.discard()
        for finish in unreaped:  # the reaper did not get to them (it never started, or timed out)
            finish()
