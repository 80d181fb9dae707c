"""`E` in review with an $EDITOR that cannot start, in the real program in a pseudo-terminal:
the app takes the terminal back (issue 29, item 1: it stayed blank and ctrl+q never exited)."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import signal
import struct
import sys
import termios
import threading
import time

from tests.tui.terminal import WAIT, recorded_events, wait_for

ENTER_APPLICATION_MODE = b"\x1b[?1049h"  # the alternate screen: written on start and on every resume
ESCAPES = re.compile(rb"\x1b(\[[0-9;?<>=]*[ -/]*[@-~]|\][^\x07]*\x07|[()][0-9A-Za-z]|.)")


def test_an_editor_that_cannot_start_hands_the_terminal_back(tmp_path):
    sessions = tmp_path / "sessions"
    command = [sys.executable, "-m", "csro_tui.cli", "tui", "--game", "kuhn_poker", "--oracle", "best-response",
               "--sessions-dir", str(sessions)]
    pid, terminal = pty.fork()
    if pid == 0:
        fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
        os.environ.update(TERM="xterm-256color", EDITOR=str(tmp_path / "no-such-editor"))
        os.environ.pop("VISUAL", None)
        os.execv(sys.executable, command)
    output = bytearray()

    def read() -> None:
        while True:
            try:
                chunk = os.read(terminal, 65536)
            except OSError:
                return
            if not chunk:
                return
            output.extend(chunk)

    threading.Thread(target=read, daemon=True).start()
    status = None
    try:
        wait_for(lambda: any(e["type"] == "iteration_finished" for e in recorded_events(sessions)), "the seed population")

        def asked() -> bool:
            os.write(terminal, b"n")
            time.sleep(1.0)
            return any(e["type"] == "proposal_previewed" for e in recorded_events(sessions))

        wait_for(asked, "a proposal to review")
        time.sleep(1.0)  # the review screen is up
        before = len(output)
        os.write(terminal, b"E")
        wait_for(lambda: ENTER_APPLICATION_MODE in output[before:], "the app to take the terminal back")
        wait_for(lambda: b"could not run" in ESCAPES.sub(b"", bytes(output[before:])), "the one-line error")
        os.write(terminal, b"\x11")  # ctrl+q
        deadline = time.monotonic() + WAIT
        while time.monotonic() < deadline:
            done, waited = os.waitpid(pid, os.WNOHANG)
            if done:
                status = waited
                break
            time.sleep(0.2)
        else:
            raise AssertionError("ctrl+q did not end the app")
    finally:
        os.close(terminal)
        if status is None:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
    assert recorded_events(sessions)[-1]["type"] == "session_closed"
