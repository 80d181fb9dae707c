"""Policy host, channel layer: the line-delimited JSON channel to the parent,
the bounded stand-in for the policy's stdout/stderr, and each policy call's
own wall-clock timer.

STDLIB ONLY; imported by host_main.py from its own directory.
"""

import builtins

# Every builtin bound here, now (see host_guard.py).
globals().update({name: value for name, value in vars(builtins).items() if not name.startswith("__")})

import json  # noqa: E402
import os  # noqa: E402
import signal  # noqa: E402
import time  # noqa: E402

EXIT_AFTER_FAILURE = 3  # the host's exit code after it has reported a failure


class _OutputTail:
    """A stand-in for sys.stdout/sys.stderr that keeps only a bounded tail."""

    encoding = "utf-8"
    errors = "replace"

    def __init__(self, limit: int) -> None:
        self._limit = max(limit, 0)
        self._parts: list[str] = []
        self._size = 0

    def write(self, text):
        if not isinstance(text, str):
            raise TypeError(f"write() argument must be str, not {type(text).__name__}")
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


class CallTimeout(BaseException):
    """Raised into policy code when one call overruns its wall-clock limit."""


class _CallTimer:
    """Each policy call's own wall-clock limit, whatever the batch size.

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


class _Channel:
    """Line-delimited JSON over two private file descriptors."""

    def __init__(self, in_fd: int, out_fd: int) -> None:
        self._reader = os.fdopen(in_fd, "rb", buffering=1 << 16)
        self._out_fd = out_fd

    def receive(self):
        line = self._reader.readline()
        if not line:
            return None
        return json.loads(line)

    def send(self, message) -> None:
        data = json.dumps(message, separators=(",", ":")).encode("utf-8") + b"\n"
        view = memoryview(data)
        while view:
            written = os.write(self._out_fd, view)
            view = view[written:]
