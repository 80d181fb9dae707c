"""The parent's end of a policy host's channel: whole lines over its pipes.

The host's end is host_channel.py.  Writes never block the parent on a full
pipe for good (a host that stops reading is found dead by poll); reads wait
for a whole line until the caller's deadline (the parent's clock: the
clock's watchdog may also kill a host past a deadline, which ends the wait
sooner) and refuse a line longer than its request allows (wire.ReplyBound,
never more than `max_message_bytes`) as soon as that many bytes have
arrived, before anything is parsed: what a host sends costs the parent at
most that much memory.  What the lines mean is wire.py's and checks.py's.
"""

from __future__ import annotations

import math
import os
import select
import subprocess
import time

from csro_tui.sandbox.checks import HostFault, reply_too_long
from csro_tui.sandbox.failures import FailureCategory


class HostDied(Exception):
    """The child closed the channel or could not be written to."""


class DeadlinePassed(Exception):
    """No whole line came before the wait's deadline (the parent's clock)."""


class HostChannel:
    """Line I/O with one host process (its stdin and stdout pipes)."""

    def __init__(self, process: subprocess.Popen, max_message_bytes: int) -> None:
        # The descriptors are asked of the pipes at each use, never kept: once
        # the host is killed its pipes are closed, and a kept number could
        # name some other file by then.
        self._process = process
        self._limit = max_message_bytes
        self._buffer = bytearray()
        self._scanned = 0
        os.set_blocking(process.stdin.fileno(), False)
        self._poll_in = select.poll()
        self._poll_in.register(process.stdout.fileno(), select.POLLIN)
        self._poll_out = select.poll()
        self._poll_out.register(process.stdin.fileno(), select.POLLOUT)

    def write(self, data: bytes) -> None:
        """All of `data`; HostDied if the host cannot take it."""
        fd = self._process.stdin.fileno()
        view = memoryview(data)
        while view:
            try:
                written = os.write(fd, view)
            except BlockingIOError:
                events = self._poll_out.poll()
                if any(flag & (select.POLLERR | select.POLLHUP) for _fd, flag in events):
                    raise HostDied from None
                continue
            except (BrokenPipeError, ConnectionResetError):
                raise HostDied from None
            view = view[written:]

    def read_line(self, limit: int, deadline: float | None = None) -> bytes:
        """The next line, without its newline, of at most `limit` bytes;
        HostDied at the end of the stream, HostFault for a longer line (read
        no further than its first `limit` bytes and one more read),
        DeadlinePassed when no whole line has come by `deadline`
        (time.monotonic; None: wait as long as the host lives).  What is
        already in the pipe is read even past the deadline."""
        fd = self._process.stdout.fileno()
        buffer = self._buffer
        limit = min(limit, self._limit)
        while True:
            end = buffer.find(b"\n", self._scanned)
            if end > limit:
                raise HostFault(FailureCategory.MALFORMED, reply_too_long(f"{end} bytes", limit))
            if end >= 0:
                line = bytes(buffer[:end])
                del buffer[: end + 1]
                self._scanned = 0
                return line
            self._scanned = len(buffer)
            if len(buffer) > limit:
                raise HostFault(FailureCategory.MALFORMED, reply_too_long(f"over {len(buffer)} bytes", limit))
            if deadline is None:
                self._poll_in.poll()  # until a reply, or the end of a host the clock killed
            elif not self._poll_in.poll(max(math.ceil((deadline - time.monotonic()) * 1000), 0)):
                raise DeadlinePassed
            # 64 kB, not more: a larger read buffer is mmap'ed and unmapped on
            # every call (measured here: 20 us per read at 1 MB, 1.3 us at 64 kB).
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                raise HostDied
            buffer += chunk
