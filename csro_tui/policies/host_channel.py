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

    SIGALRM (ITIMER_REAL) raises CallTimeout into the call when its limit
    passes, and again every quarter second after (sleeping, a Python loop
    or a policy that catches it: the handler runs in all of them); once the
    grace period has passed too, the handler reports the timeout itself and
    exits.  Code stuck in C never runs the handler: ITIMER_PROF sends SIGPROF,
    whose default action ends the process, when the call has used its limit
    plus the grace in CPU time.  Handlers cannot be changed afterwards (the
    guard stubs signal.signal; seccomp refuses rt_sigaction for both).
    """

    def __init__(self, channel: "_Channel", limit: float, grace: float) -> None:
        self.channel = channel
        self.limit = max(limit, 0.001)
        self.grace = max(grace, 0.0)
        self.what = ""
        self.expired = False
        self.hard_deadline = 0.0
        self.seq = None
        self._setitimer = signal.setitimer
        self._monotonic = time.monotonic

    def install(self) -> None:
        signal.signal(signal.SIGALRM, self._on_alarm)
        signal.signal(signal.SIGPROF, signal.SIG_DFL)

    def start(self, seq, what: str, limit: float | None = None) -> None:
        self.seq, self.what, self.expired = seq, what, False
        limit = self.limit if limit is None else limit
        self.current_limit = limit
        self._setitimer(signal.ITIMER_REAL, limit, 0.25)
        self._setitimer(signal.ITIMER_PROF, limit + self.grace + 0.5, 0)

    def stop(self) -> None:
        self._setitimer(signal.ITIMER_REAL, 0, 0)
        self._setitimer(signal.ITIMER_PROF, 0, 0)

    def message(self) -> str:
        return f"{self.what} ran past its limit of {self.current_limit:g} s"

    def _on_alarm(self, _signum, _frame):
        if not self.expired:
            self.expired = True
            self.hard_deadline = self._monotonic() + self.grace
        elif self._monotonic() >= self.hard_deadline:
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
