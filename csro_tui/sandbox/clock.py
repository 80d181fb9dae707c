"""The sandbox's clock, parent side: every time limit of a policy host,
enforced from outside the host, on the parent's own clock.

The host is not trusted with time (a policy that owns its process can stop
its timers, never return to Python, or write what it likes into memory it
shares with the parent).  What the parent uses:

- **Deadlines from sending.** `HostClock.arm` gives each request, when it
  is sent, a deadline: `batch_timeout` to start, each call's limit
  (`init_timeout` for the module's code, `move_timeout` for `__init__`,
  `act` and the end of an episode) and `call_grace` once.  The owner waits
  for the reply no longer than that (`deadline()`; channel.py's poll), the
  watchdog kills a host past it, and nothing the host does moves it.
- **The page, checked.** Each host shares one page of memory with the
  parent (`ProgressPage`, a memfd mapped before any policy code exists)
  and counts on it each call it starts and each request it finishes.  The
  page only makes detection sooner: a call showing no progress for its
  limit plus `call_grace` is stopped at once; a finished request's reply
  must follow within `batch_timeout`.  An honest host only counts up, to
  the request's calls plus one: a counter that goes back or jumps past
  that is a protocol violation (`forbidden`).
- **Budgets of the host's own time.** A chess clock pooled over the
  episodes a host plays at once: `act` may use `move_budget` seconds per
  decision on average plus `budget_reserve`; module loads (the first one
  included) and `__init__` may use `init_timeout` plus `init_budget` per
  episode.  Budgets are earned per request sent, and charged by the
  watchdog (`Watchdog`, one thread per csro process, a look every `TICK`
  at each busy host) with the host's own time (`HostUsage`): the CPU time
  of the process that runs the policy, and, while its reply is due, the
  rest of the time but what it spent waiting for a CPU (never a
  neighbour's use of the machine).  Without schedstat, wall time while the
  reply is due.

A batch of n requests is n calls, each on its own limit, all drawing on
the same budget.  Budgets are exact to about a tick per request; the
per-call figures shown with validation come from the host's own
measurements, written to the same page (display only: nothing is enforced
on them).
"""

from __future__ import annotations

import math
import mmap
import os
import select
import signal
import threading
import time

from csro_tui.sandbox.failures import FailureCategory
from csro_tui.text import one_line

# Seconds between the watchdog's looks at busy hosts: limits are seconds, so
# 50 ms is precise enough, and each look costs the parent's CPU (at 20 ms
# the looks were ~7% of the referee's CPU in the code-vs-code bench).
TICK = 0.05
PAGE_BYTES = 4096
# Slots of the page (8 bytes each): written by the host, read by the parent.
SLOT_TICKS = 0  # uint64: calls started + requests finished, since the host started
SLOT_ACT_CALLS = 1  # uint64: act calls timed
SLOT_ACT_TOTAL = 2  # float64: seconds in those calls
SLOT_ACT_MAX = 3  # float64: the longest of them
SLOT_INIT_CALLS = 4  # uint64: __init__ calls timed
SLOT_INIT_TOTAL = 5  # float64
SLOT_INIT_MAX = 6  # float64

# The kinds of policy call: load and init draw on the set-up budget (load's
# own limit is init_timeout), act and end on the play budget (move_timeout).
KIND_LOAD, KIND_INIT, KIND_ACT, KIND_END = "load", "init", "act", "end"



def kill_host_process(process) -> None:
    """SIGKILL a host's process group (not reaped yet: the owner reaps it).
    The group catches bwrap and everything under it; the pid itself in case the
    policy left the group (os.setsid is not audited)."""
    if process is None or process.returncode is not None:
        return
    for kill, target in ((os.killpg, process.pid), (os.kill, process.pid)):
        try:
            kill(target, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass

class ProgressPage:
    """The shared page: a memfd the host inherits (`fd`) and maps at start-up."""

    def __init__(self) -> None:
        self.fd = os.memfd_create("csro-host-clock", os.MFD_CLOEXEC)
        try:
            os.ftruncate(self.fd, PAGE_BYTES)
            self._map = mmap.mmap(self.fd, PAGE_BYTES)
        except BaseException:
            os.close(self.fd)
            raise
        self.counts = memoryview(self._map).cast("Q")
        self.seconds = memoryview(self._map).cast("d")

    def close_fd(self) -> None:
        """The parent's copy of the descriptor, once the host has it."""
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def ticks(self) -> int:
        return self.counts[SLOT_TICKS]

    def timing(self) -> "CallTiming":
        """The host's own measurements (untrusted: clipped to sane values)."""
        def seconds(slot: int) -> float:
            value = self.seconds[slot]
            return value if math.isfinite(value) and value > 0 else 0.0

        act_calls, init_calls = self.counts[SLOT_ACT_CALLS], self.counts[SLOT_INIT_CALLS]
        act_total, init_total = seconds(SLOT_ACT_TOTAL), seconds(SLOT_INIT_TOTAL)
        return CallTiming(
            act_calls, act_total, min(seconds(SLOT_ACT_MAX), act_total),
            init_calls, init_total, min(seconds(SLOT_INIT_MAX), init_total),
        )

    def close(self) -> None:
        self.close_fd()
        self.counts.release()
        self.seconds.release()
        self._map.close()


class CallTiming:
    """How long a policy's calls took (as its host measured them), and what it
    printed: `printed_bytes` in all and the first characters (`printed_head`,
    raw policy text), output the host discards."""

    __slots__ = ("act_calls", "act_seconds", "act_max", "init_calls", "init_seconds", "init_max",
                 "printed_bytes", "printed_head")

    def __init__(self, act_calls=0, act_seconds=0.0, act_max=0.0, init_calls=0, init_seconds=0.0, init_max=0.0,
                 printed_bytes=0, printed_head=""):
        self.act_calls, self.act_seconds, self.act_max = int(act_calls), float(act_seconds), float(act_max)
        self.init_calls, self.init_seconds, self.init_max = int(init_calls), float(init_seconds), float(init_max)
        self.printed_bytes, self.printed_head = int(printed_bytes), str(printed_head)

    @property
    def act_mean(self) -> float:
        return self.act_seconds / self.act_calls if self.act_calls else 0.0

    @property
    def init_mean(self) -> float:
        return self.init_seconds / self.init_calls if self.init_calls else 0.0

    def merged(self, other: "CallTiming") -> "CallTiming":
        return CallTiming(
            self.act_calls + other.act_calls, self.act_seconds + other.act_seconds, max(self.act_max, other.act_max),
            self.init_calls + other.init_calls, self.init_seconds + other.init_seconds,
            max(self.init_max, other.init_max),
            self.printed_bytes + other.printed_bytes, self.printed_head or other.printed_head,
        )

    def to_dict(self) -> dict:
        return {name: getattr(self, name) for name in self.__slots__}

    @classmethod
    def from_dict(cls, data: dict | None) -> "CallTiming":
        return cls(**{k: v for k, v in (data or {}).items() if k in cls.__slots__})

    def describe(self) -> str:
        """'act: 0.42 ms per call on average, 3.1 ms at most (2000 calls)' (and __init__ when timed)."""
        parts = []
        if self.act_calls:
            parts.append(f"act: {_ms(self.act_mean)} per call on average, {_ms(self.act_max)} at most "
                         f"({self.act_calls} calls)")
        if self.init_calls:
            parts.append(f"__init__: {_ms(self.init_mean)} on average, {_ms(self.init_max)} at most")
        return "; ".join(parts)


# An act averaging this or more is flagged (review, `csro eval`): the
# contract asks for well under a millisecond (the seeds take ~0.02-0.05 ms,
# a strong Iocaine-style predictor 0.06 ms); the budget (move_budget) fails
# a policy only at 20 ms a decision.
SLOW_ACT_SECONDS = 0.001


def slow_act_note(timing: CallTiming | None) -> str:
    """A warning when `act` is far slower than the contract expects, else ''."""
    if timing is None or not timing.act_calls or timing.act_mean < SLOW_ACT_SECONDS:
        return ""
    return (f"slow: act takes {_ms(timing.act_mean)} per call on average ({_ms(timing.act_max)} at most); "
            f"the contract expects well under 1 ms")


def _ms(seconds: float) -> str:
    milliseconds = seconds * 1000
    if milliseconds >= 100:
        return f"{milliseconds:.0f} ms"
    if milliseconds >= 10:
        return f"{milliseconds:.1f} ms"
    return f"{milliseconds:.2g} ms" if milliseconds >= 0.01 else "< 0.01 ms"


class HostClock:
    """One host's deadlines and budgets (see the module doc).

    The owner (`PolicyHost`) calls `arm` before it sends a request and
    `disarm` when it has read the reply, and waits for the reply no longer
    than `deadline()`; the watchdog does the rest and, when it kills the
    host, leaves the failure in `verdict` (category, message).
    """

    def __init__(self, page: ProgressPage, process, limits, usage: "HostUsage | None" = None) -> None:
        self.page = page
        self.process = process
        self.limits = limits
        self.usage = usage
        self.lock = threading.Lock()  # held while killing, and by the owner while reaping
        self.verdict: tuple[FailureCategory, str] | None = None
        # Each kind of call's limit, and what a request gets once (to start; the grace).
        self._limit_of = {kind: self._call_limit(kind) for kind in (KIND_LOAD, KIND_INIT, KIND_ACT, KIND_END)}
        self._fixed_allowance = limits.batch_timeout + limits.call_grace
        # (calls, kinds, episodes, armed_at, base ticks, deadline)
        self.batch: tuple | None = None
        # Pooled budgets: seconds charged, and what has been earned.
        self.play_used = 0.0
        self.decisions = 0
        self.setup_used = 0.0
        self.episodes_set_up = 0
        self.used_by_episode: dict[int, float] = {}
        # The watchdog's view of the current batch.
        self._seen_batch: tuple | None = None
        self._seen_ticks = 0
        self._last_change = 0.0
        self._last_sample = 0.0
        self._done_at: float | None = None
        self._usage_seen: tuple[float, float] | None = None  # the host's (cpu, run-queue wait) at the last look
        self._sleep_balance = 0.0  # seconds the host slept while its reply was due, as far as charged (_own_time)

    def arm(self, calls: int, kinds: tuple[str, ...], episodes=(), at: float | None = None) -> None:
        """A request of `calls` policy calls is about to be sent: call i is of
        kind kinds[i % len(kinds)], for episode episodes[i // len(kinds)].

        The request earns its budget now (a decision per act, an episode's
        set-up per load of a new episode) and gets its deadline, from this
        moment on the parent's clock: the host starts the request within
        batch_timeout, each call has its limit, and call_grace is added
        once.  Nothing the host writes to its page moves this deadline."""
        armed_at = time.monotonic() if at is None else at
        if len(kinds) == 1:  # one kind of call: act (the path of every move), end, the first load
            kind = kinds[0]
            if kind == KIND_ACT:
                self.decisions += calls
            deadline = armed_at + self._fixed_allowance + calls * self._limit_of[kind]
        else:
            width = len(kinds)
            deadline = armed_at + self._fixed_allowance
            for offset, kind in enumerate(kinds):
                count = (calls - offset + width - 1) // width
                deadline += count * self._limit_of[kind]
                if kind == KIND_LOAD:  # a module per new episode (the first load, alone, is no episode)
                    self.episodes_set_up += count
        self.batch = (calls, kinds, episodes, armed_at, self.page.ticks(), deadline)

    def disarm(self) -> None:
        self.batch = None

    def note_started(self) -> None:
        """The host is up (its set-up replied): its own time counts from here."""
        if self.usage is not None and self._usage_seen is None:
            self.usage.find()
            self._usage_seen = self.usage.read()

    def deadline(self) -> float | None:
        """When the parent stops waiting for the reply to the armed request."""
        batch = self.batch
        return batch[5] if batch is not None else None

    def overrun(self, now: float) -> str:
        """The failure of a request whose deadline passed (the owner's words
        when its wait ends so; the watchdog's are the same)."""
        batch = self.batch
        if batch is None:
            return "the host ran past its limit"
        calls, kinds, episodes, armed_at, base, _deadline = batch
        index = min(max(self.page.ticks() - base - 1, 0), max(calls - 1, 0))  # the page's word: a label only
        kind = kinds[index % len(kinds)]
        episode = episodes[index // len(kinds)] if episodes and index // len(kinds) < len(episodes) else None
        return (f"{_call_label(kind, episode)} ran past its limit of {self._call_limit(kind):g} s "
                f"(stopped from outside the host after {now - armed_at:.1f} s, {calls} call(s) asked)")

    # -- the watchdog's side --------------------------------------------------

    def _call_limit(self, kind: str) -> float:
        return self.limits.init_timeout if kind == KIND_LOAD else self.limits.move_timeout

    def check(self, now: float, readable) -> tuple[FailureCategory, str] | None:
        """Charge the host's time since the last look; the failure to kill it
        for, or None.  `readable()`: whether its reply waits in the pipe."""
        batch = self.batch
        if batch is None:
            return None
        calls, kinds, episodes, armed_at, base, deadline = batch
        ticks = self.page.ticks() - base
        if self.batch is not batch:
            # The owner moved on to another request meanwhile (this thread
            # can lose the GIL between the two reads): its ticks are not
            # this request's.  The next look sees the new one.
            return None
        if batch is not self._seen_batch:
            self._seen_batch, self._seen_ticks, self._done_at = batch, 0, None
            self._last_change = self._last_sample = armed_at
        seen = self._seen_ticks
        if ticks != seen:
            # An honest host only counts up, one call at a time, to calls + 1
            # (finished): anything else is a host writing its own clock.
            if ticks < seen:
                return _tampered(f"its progress counter went back from {seen} to {ticks}")
            if ticks > calls + 1:
                return _tampered(f"its progress counter jumped to {ticks} in a request of {calls} call(s)")
            self._seen_ticks = ticks
            self._last_change = now
        span = max(now - self._last_sample, 0.0)
        self._last_sample = now
        replied = readable()
        own = self._own_time(span, replied)
        limits = self.limits
        if ticks > calls:  # finished: the reply must follow at once
            if self._done_at is None:
                self._done_at = now
            if replied or now - self._done_at <= limits.batch_timeout:
                self._charge(kinds[0], None, own)
                return None
            return (FailureCategory.TIMEOUT,
                    f"the host finished a request but sent no reply within {limits.batch_timeout:g} s")
        if now > deadline and not replied:
            return FailureCategory.TIMEOUT, self.overrun(now)
        index = max(ticks - 1, 0)  # the call running now (the first one before it starts)
        kind = kinds[index % len(kinds)]
        episode = episodes[index // len(kinds)] if episodes else None
        what = _call_label(kind, episode)
        limit = self._call_limit(kind)
        allowed = limit + limits.call_grace + (limits.batch_timeout if ticks <= 0 else 0.0)
        running = now - self._last_change
        if running > allowed and not replied:
            return (FailureCategory.TIMEOUT,
                    f"{what} ran past its limit of {limit:g} s (stopped from outside the host "
                    f"after {running:.1f} s without progress)")
        self._charge(kind, episode, own)
        # A call past its own limit is the per-call limit's (the host words
        # it, or the lines above): the budget speaks for calls within it.
        if running > limit:
            return None
        reason = self._over_budget(kind, episode)
        return (FailureCategory.TIMEOUT, f"{what} {reason}") if reason else None

    def _own_time(self, span: float, replied: bool) -> float:
        """The host's own share of the last `span` seconds: the CPU time it
        used, plus, while the parent waits for its reply, the time it spent
        neither running nor waiting for a CPU (asleep or blocked: its own
        doing).  Time it waited for a CPU (another process's use of the
        machine) is never the policy's.  Without the host's figures: the
        span while the reply is due (wall time).

        The kernel adds a wait for a CPU to the figures only when it ends,
        so a look during one sees it as sleep; the balance corrects that at
        the next look (and never runs more than a tick into credit)."""
        now_usage = self.usage.read() if self.usage is not None else None
        if now_usage is None:
            return 0.0 if replied else span
        before, self._usage_seen = self._usage_seen, now_usage
        if before is None:  # nothing to compare with yet (see `note_started`): wall time, once
            return 0.0 if replied else span
        cpu, waited = now_usage[0] - before[0], now_usage[1] - before[1]
        old = self._sleep_balance
        self._sleep_balance = max(old + (0.0 if replied else span) - cpu - waited, -TICK)
        return cpu + max(self._sleep_balance, 0.0) - max(old, 0.0)

    def _charge(self, kind: str, episode, seconds: float) -> None:
        if kind in (KIND_LOAD, KIND_INIT):
            self.setup_used += seconds
        else:
            self.play_used += seconds
            if episode is not None:
                self.used_by_episode[episode] = self.used_by_episode.get(episode, 0.0) + seconds

    def _over_budget(self, kind: str, episode) -> str | None:
        """Why the pooled budget of `kind`'s calls is spent, or None."""
        limits = self.limits
        if kind in (KIND_LOAD, KIND_INIT):
            # The first load has init_timeout to itself; each episode adds init_budget.
            allowed = limits.init_timeout + limits.init_budget * self.episodes_set_up
            if self.setup_used <= allowed:
                return None
            return (f"ran out of the time budget for loading the module and Policy.__init__: "
                    f"{self.setup_used:.1f} s used for {self.episodes_set_up} episode(s), more than "
                    f"init_timeout {limits.init_timeout:g} s plus init_budget {limits.init_budget:g} s per episode")
        allowed = limits.budget_reserve + limits.move_budget * self.decisions
        if self.play_used <= allowed:
            return None
        share = self.used_by_episode.get(episode, 0.0) if episode is not None else 0.0
        return (f"ran out of the policy's time budget: {self.play_used:.1f} s used over "
                f"{self.decisions} decision(s), more than move_budget {limits.move_budget * 1000:g} ms "
                f"per decision plus budget_reserve {limits.budget_reserve:g} s "
                f"(this episode {share:.1f} s, {len(self.used_by_episode)} episode(s) charged)")

    def kill(self, verdict: tuple[FailureCategory, str]) -> None:
        """SIGKILL the host's process group (the owner reaps it)."""
        self.verdict = verdict
        kill_host_process(self.process)

    def close(self) -> None:
        if self.usage is not None:
            self.usage.close()


def _tampered(what: str) -> tuple[FailureCategory, str]:
    return (FailureCategory.FORBIDDEN,
            f"the host tampered with the sandbox's clock: {what} (a protocol violation; the host was stopped)")


class HostUsage:
    """The host process's own time, read by the parent: CPU time it ran and
    time it waited for a CPU (runnable, but another process had it), from
    /proc/<pid>/schedstat of the process that runs the policy.

    That process is not always the one the parent started: under bubblewrap
    the parent's child is bwrap, the host two levels down (found through
    /proc/<pid>/task/<pid>/children, once it has started); a host forked by
    the zygote is known by its pid as the parent sees it.  The file is kept
    open: an open /proc file names that process, never one that later
    reuses its pid (reads fail once it has ended).  `read` is None until
    `find` has found the host (called once its set-up has replied: before
    that the chain may still be forking), or where the kernel keeps no
    schedstat."""

    def __init__(self, process) -> None:
        self._process = process
        self._fd = -1

    def read(self) -> tuple[float, float] | None:
        """(seconds on a CPU, seconds waiting for one) since the host started, or None."""
        if self._fd < 0:
            return None
        try:
            fields = os.pread(self._fd, 128, 0).split()
            return int(fields[0]) / 1e9, int(fields[1]) / 1e9
        except (OSError, ValueError, IndexError):
            return None

    def find(self) -> None:
        """Find the host's process, now that it runs (no-op once found)."""
        if self._fd >= 0:
            return
        pid = _policy_pid(self._process)
        if pid is not None:
            try:
                self._fd = os.open(f"/proc/{pid}/schedstat", os.O_RDONLY | os.O_CLOEXEC)
            except OSError:  # ended, or no schedstat on this kernel (no CONFIG_SCHED_INFO): wall time
                pass

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


def _policy_pid(process) -> int | None:
    """The pid of the process that runs the policy: `process` itself, or the
    end of its chain of children (bwrap -> bwrap's init -> host); None
    while that chain still ends in bwrap (the host not started yet)."""
    pid = getattr(process, "pid", None)
    if not isinstance(pid, int) or pid <= 0 or getattr(process, "returncode", None) is not None:
        return None
    for _depth in range(4):
        try:
            with open(f"/proc/{pid}/task/{pid}/children", "rb") as file:
                children = file.read().split()
        except OSError:
            return None
        if not children:
            break
        pid = int(children[0])
    try:
        with open(f"/proc/{pid}/comm", "rb") as file:
            if file.read().strip() == b"bwrap":
                return None
    except OSError:
        return None
    return pid


def _call_label(kind: str, episode) -> str:
    if kind == KIND_LOAD:
        return "module load" if episode is None else f"module load (episode {episode})"
    name = {KIND_INIT: "Policy.__init__", KIND_ACT: "act", KIND_END: "end of episode"}[kind]
    return name if episode is None else f"{name} (episode {episode})"


class Watchdog:
    """The thread that looks at every busy host every `TICK` seconds."""

    def __init__(self) -> None:
        self._clocks: set[HostClock] = set()
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        self._thread: threading.Thread | None = None
        self._pid = os.getpid()

    def register(self, clock: HostClock) -> None:
        with self._lock:
            self._clocks.add(clock)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="csro-host-clock", daemon=True)
                self._thread.start()
            self._wake.notify()

    def unregister(self, clock: HostClock) -> None:
        with self._lock:
            self._clocks.discard(clock)

    def _run(self) -> None:
        poll = select.poll()
        while True:
            with self._lock:
                while not self._clocks:
                    self._wake.wait()
                clocks = list(self._clocks)
            now = time.monotonic()
            for clock in clocks:
                if clock.batch is not None:
                    self._look(clock, now, poll)
            time.sleep(TICK)

    @staticmethod
    def _look(clock: HostClock, now: float, poll: select.poll) -> None:
        with clock.lock:  # the owner neither reaps the host nor closes its page meanwhile
            if clock.batch is None:
                return
            try:
                verdict = clock.check(now, lambda: _readable(poll, clock.process))
            except Exception as error:  # noqa: BLE001 - the clock must keep running for the others
                verdict = FailureCategory.TIMEOUT, f"the sandbox's clock failed ({type(error).__name__}: {error})"
            if verdict is not None:
                try:
                    clock.kill(verdict)
                except OSError:  # gone already: the owner sees it end
                    pass
                clock.batch = None


def _readable(poll: select.poll, process) -> bool:
    """Whether the host's reply (or its end) is waiting in the pipe."""
    try:
        fd = process.stdout.fileno()
    except (AttributeError, ValueError):
        return True  # closed: nothing to wait for
    poll.register(fd, select.POLLIN)
    try:
        return bool(poll.poll(0))
    finally:
        poll.unregister(fd)


_watchdog: Watchdog | None = None
_watchdog_lock = threading.Lock()


def watchdog() -> Watchdog:
    """This process's watchdog (a fresh one in a forked child)."""
    global _watchdog
    with _watchdog_lock:
        if _watchdog is None or _watchdog._pid != os.getpid():
            _watchdog = Watchdog()
        return _watchdog


def describe_timing(timing: dict | None) -> str:
    """A MatchResult's timing as one line, with the slow flag when it applies; '' when not measured."""
    if not timing:
        return ""
    measured = CallTiming.from_dict(timing)
    line = measured.describe()
    if line and slow_act_note(measured):
        return f"slow: {line} (the contract expects act well under 1 ms)"
    return line


def timing_of(results) -> dict | None:
    """Side a's timing over MatchResults it played: the host's figures with the
    most calls (later results of a host include its earlier calls), with the
    longest call of any (several worker processes each run their own host)."""
    timings = [t for t in (getattr(result, "timing", None) for result in results) if t]
    if not timings:
        return None
    chosen = dict(max(timings, key=lambda t: t.get("act_calls", 0)))
    chosen["act_max"] = max(t.get("act_max", 0.0) for t in timings)
    chosen["init_max"] = max(t.get("init_max", 0.0) for t in timings)
    printed = max(timings, key=lambda t: t.get("printed_bytes", 0))
    chosen["printed_bytes"], chosen["printed_head"] = printed.get("printed_bytes", 0), printed.get("printed_head", "")
    return chosen


PRINTED_LINES_SHOWN = 3  # first lines of a policy's printed output quoted by describe_printed
PRINTED_LINE_CHARS = 100


def describe_printed(timing: dict | None) -> str:
    """What a policy printed, in words ('' when nothing): how much, that it is
    discarded, and its first lines quoted, cleaned of escape sequences
    (`printed 2,000,000 bytes, discarded (policies' output is not kept); it began: "a" / "b"`)."""
    measured = CallTiming.from_dict(timing) if timing else None
    if measured is None or measured.printed_bytes <= 0:
        return ""
    lines = [one_line(line, PRINTED_LINE_CHARS) for line in measured.printed_head.splitlines()]
    lines = [line for line in lines if line][:PRINTED_LINES_SHOWN]
    began = ("; it began: " + " / ".join(f'"{line}"' for line in lines)) if lines else ""
    return (f"printed {measured.printed_bytes:,} bytes to stdout/stderr, discarded "
            f"(a policy's printed output is not kept){began}")
