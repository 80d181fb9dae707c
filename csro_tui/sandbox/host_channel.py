"""Policy host, channel layer: the line-delimited JSON channel to the parent,
the bounded stand-in for the policy's stdout/stderr, each policy call's own
wall-clock timer, and the page it shares with the parent's clock.

STDLIB ONLY; imported by host_main.py from its own directory.
"""

import builtins

# Every builtin bound here, now (see host_guard.py).
globals().update({name: value for name, value in vars(builtins).items() if not name.startswith("__")})

import json  # noqa: E402
import mmap  # noqa: E402
import os  # noqa: E402
import signal  # noqa: E402
import time  # noqa: E402

EXIT_AFTER_FAILURE = 3  # the host's exit code after it has reported a failure


class _OutputTail:
    """A stand-in for sys.stdout/sys.stderr that keeps only a bounded tail (for
    failure reports), the first `head_limit` characters, and how many bytes
    (UTF-8) were printed in all: the parent says that output is discarded."""

    encoding = "utf-8"
    errors = "replace"

    def __init__(self, limit: int, head_limit: int = 0) -> None:
        self._limit = max(limit, 0)
        self._parts: list[str] = []
        self._size = 0
        self._head_limit = max(head_limit, 0)
        self.head = ""
        self.printed = 0  # bytes, UTF-8

    def write(self, text):
        if not isinstance(text, str):
            raise TypeError(f"write() argument must be str, not {type(text).__name__}")
        # isascii is O(1) on CPython's compact strings: no copy for the common case.
        self.printed += len(text) if text.isascii() else len(text.encode("utf-8", "replace"))
        if len(self.head) < self._head_limit:
            self.head += text[: self._head_limit - len(self.head)]
        if self._limit:
            piece = text[-self._limit :]
            self._parts.append(piece)
            self._size += len(piece)
            if self._size > 2 * self._limit:
                joined = "".join(self._parts)[-self._limit :]
                self._parts = [joined]
                self._size = len(joined)
        return len(text)

    def writelines(self, lines):
        for line in lines:
            self.write(line)

    def flush(self):
        pass

    def isatty(self):
        return False

    def writable(self):
        return True

    def tail(self) -> str:
        return "".join(self._parts)[-self._limit :] if self._limit else ""


class _Progress:
    """The page shared with the parent's clock (csro_tui/sandbox/clock.py).

    `counts[0]` goes up by one when a policy call starts and when a request
    is finished: the parent's watchdog times the calls from it, on its own
    clock, and kills the host when one overruns.  Slots 1-6 hold the host's
    own measurements of act and __init__ (count, total seconds, longest),
    shown with validation.  Without a page (a parent that sent none) the
    same views exist over private memory.
    """

    def __init__(self, fd) -> None:
        if type(fd) is int and fd >= 0:
            self._map = mmap.mmap(fd, 4096)
            os.close(fd)
            data = memoryview(self._map)
        else:
            data = memoryview(bytearray(4096))
        self.counts = data.cast("Q")
        self.seconds = data.cast("d")

    def tick(self) -> None:
        self.counts[0] += 1

    def add(self, count_slot: int, count: int, total: float, longest: float) -> None:
        """Fold a batch's measurements into slots count_slot (calls), +1 (seconds), +2 (longest)."""
        if count:
            self.counts[count_slot] += count
            self.seconds[count_slot + 1] += total
            if longest > self.seconds[count_slot + 2]:
                self.seconds[count_slot + 2] = longest


class CallTimeout(BaseException):
    """Raised into policy code when one call overruns its wall-clock limit."""


class _CallTimer:
    """Each policy call's own wall-clock limit, whatever the batch size: the
    host's courtesy, which words the failure with the policy's traceback.
    The limit that holds is the parent's (`_Progress`), which needs nothing
    from this process but the counter.

    While calls run, SIGALRM ticks every `tick` seconds (ITIMER_REAL); the
    handler raises CallTimeout into the call once it has run past its limit,
    and again at every tick after (sleeping, a Python loop or a policy that
    catches it: the handler runs in all of them); once the grace period has
    passed too, the handler reports the timeout itself and exits.  Code
    stuck in C never runs the handler: ITIMER_PROF, renewed at each tick,
    then sends SIGPROF, whose default action ends the process, after the
    call's limit plus the grace in CPU time.  Handlers cannot be changed
    afterwards (the guard stubs signal.signal; seccomp refuses rt_sigaction
    for both).

    `start` is called per policy call and costs no system call once the
    timers are armed (setitimer costs microseconds, more than a typical
    `act`); `stop` disarms them at the end of a batch.
    """

    def __init__(self, channel: "_Channel", limit: float, grace: float) -> None:
        self.channel = channel
        self.set_limits(limit, grace)
        self.what = ""
        self.episode = None
        self.current_limit = self.limit
        self.call_started = 0.0
        self.armed = False
        self.expired = False
        self.hard_deadline = 0.0
        self.seq = None
        self.progress = None  # the page shared with the parent's clock (_Progress), set by the host
        self._setitimer = signal.setitimer
        self._monotonic = time.monotonic

    def set_limits(self, limit: float, grace: float) -> None:
        """Each call's limit and grace (the policy's, set when its module arrives)."""
        self.limit = max(limit, 0.001)
        self.grace = max(grace, 0.0)
        self.tick = max(0.01, min(0.25, self.limit / 4))

    def install(self) -> None:
        signal.signal(signal.SIGALRM, self._on_alarm)
        signal.signal(signal.SIGPROF, signal.SIG_DFL)

    def start(self, seq, what, limit: float | None = None, episode=None) -> None:
        """Time one call.  `what` names it ("act"; with `episode`, "act
        (episode N)"), formatted only if it overruns."""
        self.seq, self.what, self.episode, self.expired = seq, what, episode, False
        self.current_limit = self.limit if limit is None else limit
        self.call_started = self._monotonic()
        if not self.armed:
            self.armed = True
            self._setitimer(signal.ITIMER_PROF, self.current_limit + self.grace + 0.5, 0)
            self._setitimer(signal.ITIMER_REAL, self.tick, self.tick)

    def stop(self) -> None:
        self.armed = False
        self._setitimer(signal.ITIMER_REAL, 0, 0)
        self._setitimer(signal.ITIMER_PROF, 0, 0)

    def message(self) -> str:
        what = self.what if self.episode is None else f"{self.what} (episode {self.episode})"
        return f"{what} ran past its limit of {self.current_limit:g} s"

    def _on_alarm(self, _signum, _frame):
        if not self.armed:
            return
        # Python is running, so no call is stuck in C: renew the CPU backstop.
        self._setitimer(signal.ITIMER_PROF, self.current_limit + self.grace + 0.5, 0)
        now = self._monotonic()
        if not self.expired:
            if now - self.call_started < self.current_limit:
                return
            self.expired = True
            self.hard_deadline = self.call_started + self.current_limit + self.grace
        elif now >= self.hard_deadline:
            self.stop()
            try:
                self.channel.send({"seq": self.seq, "ok": False, "category": "timeout",
                                   "message": self.message() + " (and kept running)", "traceback": "", "output": ""})
            finally:
                os._exit(EXIT_AFTER_FAILURE)
        raise CallTimeout(self.message())


def _cut_texts(reply: dict, limit: int) -> dict:
    """A failure reply with its message and traceback cut to `limit` characters each."""
    return {key: value[:limit] if key in ("message", "traceback") and type(value) is str else value
            for key, value in reply.items()}


class _Channel:
    """Line-delimited JSON over two private file descriptors."""

    def __init__(self, in_fd: int, out_fd: int) -> None:
        self._reader = os.fdopen(in_fd, "rb", buffering=1 << 16)
        self._out_fd = out_fd
        # A failure reply's message and traceback are cut to this many
        # characters (the policy's load sets it): the parent reads a reply
        # only up to the size its request allows (wire.reply_bound).
        self.text_limit = None

    def receive(self):
        line = self._reader.readline()
        if not line:
            return None
        return json.loads(line)

    def send(self, message) -> None:
        if self.text_limit is not None and message.get("ok") is False:
            message = _cut_texts(message, self.text_limit)
        data = json.dumps(message, separators=(",", ":")).encode("utf-8") + b"\n"
        view = memoryview(data)
        while view:
            written = os.write(self._out_fd, view)
            view = view[written:]
