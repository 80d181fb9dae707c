"""The referee pool starts inside any embedding host, whatever it made of sys.stderr.

Textual replaces sys.stderr with a stand-in whose fileno() is -1; the
multiprocessing resource tracker used to pass that to the new process and
fail with "bad value(s) in fds_to_keep". The tracker is process-wide (once
running it is never started again), so each case runs in a fresh process.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

SCRIPT = textwrap.dedent(
    """
    import io, sys

    class StandIn(io.TextIOBase):  # like Textual's print capture
        def __init__(self, fd):
            self.fd = fd
        def fileno(self):
            return self.fd
        def write(self, text):
            return len(text)

    sys.stderr = StandIn(int(sys.argv[1]))
    replaced = sys.stderr
    from csro_tui.evaluation.participants import BotPolicy
    from csro_tui.evaluation.runner import MatchJob, RefereePool, evaluate_matchups, plan_chunks
    from csro_tui.games.registry import get_game

    spec = get_game("rrps(num_repetitions=10)")
    jobs = [MatchJob(BotPolicy(a), BotPolicy(b), 2, 7 + i)
            for i, (a, b) in enumerate([("rockbot", "copybot"), ("pibot", "rockbot"), ("copybot", "pibot")])]
    pool = RefereePool(spec, 2)
    try:
        results = pool.run(jobs, plan_chunks(jobs, 2), None, None)
    finally:
        pool.close()
    alone = evaluate_matchups(spec, jobs, workers=1)
    assert sys.stderr is replaced, "the host's stderr is given back"
    assert [r.returns for r in results] == [r.returns for r in alone]
    print("played", len(results))
    """
)


@pytest.mark.parametrize("fileno", [-1, 987])  # Textual's stand-in; an fd that is not open
def test_referee_pool_starts_when_stderr_has_no_real_fd(fileno):
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(fileno)], capture_output=True, text=True, timeout=180
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "played 3"


ORPHANING_PARENT = textwrap.dedent(
    """
    import multiprocessing, os, sys, time
    from csro_tui.evaluation.participants import BotPolicy
    from csro_tui.evaluation.runner import MatchJob, RefereePool

    from csro_tui.games.registry import get_game

    pool = RefereePool(get_game("rrps(num_repetitions=10)"), 2)
    pool.run([MatchJob(BotPolicy("rockbot"), BotPolicy("copybot"), 2, 7)], [[0]], None, None)
    print(" ".join(str(child.pid) for child in multiprocessing.active_children()), flush=True)
    time.sleep(600)  # killed by the test
    """
)


def test_referee_workers_end_when_their_parent_is_killed():
    """A Ray actor (or the app) killed with SIGKILL must not leave its referee workers waiting
    forever (multiprocessing's pool workers see their task pipe close)."""
    import os
    import signal
    import time

    parent = subprocess.Popen([sys.executable, "-c", ORPHANING_PARENT], stdout=subprocess.PIPE, text=True)
    try:
        line = parent.stdout.readline()
        workers = [int(pid) for pid in line.split()]
        assert workers, "the pool started workers"
    finally:
        parent.kill()
        parent.wait()

    def alive(pid: int) -> bool:
        try:
            with open(f"/proc/{pid}/stat") as stat:
                return stat.read().split(")")[-1].split()[0] != "Z"
        except FileNotFoundError:
            return False

    deadline = time.monotonic() + 20
    while any(alive(pid) for pid in workers) and time.monotonic() < deadline:
        time.sleep(0.2)
    left = [pid for pid in workers if alive(pid)]
    for pid in left:
        os.kill(pid, signal.SIGKILL)
    assert not left, f"workers {left} outlived their parent"
