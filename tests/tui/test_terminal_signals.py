"""Closing the terminal (SIGHUP) or `kill` (SIGTERM) while a review waits: the app records the
session closed as ctrl+q does, and `csro run --resume` takes the waiting proposal up again.

The real program runs in a pseudo-terminal; closing our end of it is what closing a terminal
window does (the kernel hangs the terminal up and sends SIGHUP)."""

from __future__ import annotations

import fcntl
import os
import pty
import signal
import struct
import subprocess
import sys
import termios
import threading
import time

import pytest

from csro_tui.sessions.state import fold
from csro_tui.tui.backend import Backend
from tests.tui.terminal import WAIT, recorded_events, wait_for

def _drain(fd: int) -> None:
    """Read the app's screen output so that it never blocks on a full terminal."""
    while True:
        try:
            if not os.read(fd, 65536):
                return
        except OSError:
            return


@pytest.mark.parametrize("how", ["close the terminal", "SIGTERM"])
def test_a_closed_terminal_records_the_session_closed_and_resume_goes_on(tmp_path, how):
    sessions = tmp_path / "sessions"
    command = [sys.executable, "-m", "csro_tui.cli", "tui", "--game", "kuhn_poker", "--oracle", "best-response",
               "--sessions-dir", str(sessions)]
    pid, terminal = pty.fork()
    if pid == 0:  # the child: the app, with the pseudo-terminal as its controlling terminal
        fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
        os.environ["TERM"] = "xterm-256color"
        os.execv(sys.executable, command)
    reader = threading.Thread(target=_drain, args=(terminal,), daemon=True)
    reader.start()
    status = None
    try:
        # the seeds are evaluated, then n asks for a proposal, which waits for the person's review
        wait_for(lambda: any(e["type"] == "iteration_finished" for e in recorded_events(sessions)), "the seed population")

        def asked() -> bool:
            os.write(terminal, b"n")  # refused while the seeds' work is still winding down; the review ignores it
            time.sleep(1.0)
            return any(e["type"] == "proposal_previewed" for e in recorded_events(sessions))

        wait_for(asked, "a proposal to review")
        time.sleep(0.5)  # the review screen is up (the engine waits for the person)
        if how == "SIGTERM":
            os.kill(pid, signal.SIGTERM)
        else:
            os.close(terminal)
            terminal = -1
        deadline = time.monotonic() + WAIT
        while time.monotonic() < deadline:
            done, waited = os.waitpid(pid, os.WNOHANG)
            if done:
                status = waited
                break
            time.sleep(0.2)
        else:
            raise AssertionError("the app did not exit after the terminal went away")
    finally:
        if terminal >= 0:
            os.close(terminal)
        if status is None:  # never leave the app running after a failure
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
    assert os.WIFEXITED(status), f"killed by signal {os.WTERMSIG(status)}, not a clean exit"

    events = recorded_events(sessions)
    assert events[-1]["type"] == "session_closed" and events[-1]["reason"] == "stopped", events[-1]
    [info] = Backend(sessions).list_sessions()
    state = fold(Backend(sessions).read_events(info.id))
    [waiting] = state.proposals.values()
    assert waiting.decision is None  # the review was interrupted, not decided

    resumed = subprocess.run(
        [sys.executable, "-m", "csro_tui.cli", "run", "--resume", info.id, "--iterations", "1", "--review", "valid",
         "--sessions-dir", str(sessions)],
        capture_output=True, text=True, timeout=600,
    )
    assert resumed.returncode == 0, resumed.stderr
    state = fold(Backend(sessions).read_events(info.id))
    assert state.resumes
    # the proposal that waited for the review is decided on resume and joins
    assert state.proposals[waiting.id].decision.action == "accept"
    assert [m.name for m in state.population][-1] == waiting.proposal.name
