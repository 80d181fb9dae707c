"""Policy hosts disturbed from outside while the referee uses them.

A host killed (SIGKILL, SIGTERM) or frozen (SIGSTOP) by another process in
the middle of a match: the match ends with a clear one-line failure charged
to that policy, the referee stays up and the next match plays normally.  A
host lives exactly as long as its parent process (it dies with it) and not
as long as the thread that started it.  Run in both sandbox modes.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import textwrap
import threading
import time

import pytest

from csro_tui.evaluation.participants import CodePolicy
from csro_tui.evaluation.referee import play_match
from csro_tui.games.registry import get_game
from csro_tui.play import PlaySession
from csro_tui.sandbox.failures import FailureCategory
from csro_tui.sandbox.sandbox import PolicyHost, SandboxLimits

GAME = "rrps(num_repetitions=50)"
LIMITS = SandboxLimits(init_timeout=20.0, move_timeout=0.5, batch_timeout=1.0)


def seeds(spec):
    policies = spec.seed_policies()
    return CodePolicy("victim", policies["frequency_counter"]), CodePolicy("other", policies["markov_predictor"])


class Hosts:
    """A host factory for the referee.  The host called `victim` holds the
    referee (on its own thread) right after sending its `pause_after`-th act
    batch, until the test has done its deed and sets `go`: the disturbance
    lands while the host is answering, at a point chosen by count, not time."""

    def __init__(self, pause_after: int = 20) -> None:
        self.made: dict[str, PolicyHost] = {}
        self.paused = threading.Event()
        self.go = threading.Event()
        self.pause_after = pause_after

    def __call__(self, source, game_info, **kwargs) -> PolicyHost:
        hosts = self
        sends = [0]

        class Victim(PolicyHost):
            def send_act(self, requests):
                return self._pause(super().send_act(requests))

            def send_act_columns(self, episodes, **columns):  # the RRPS fast path's wire
                return self._pause(super().send_act_columns(episodes, **columns))

            def _pause(self, sent):
                sends[0] += 1
                if sends[0] == hosts.pause_after:
                    hosts.paused.set()
                    hosts.go.wait(60)
                return sent

        kind = Victim if kwargs.get("name") == "victim" else PolicyHost
        host = kind(source, game_info, **kwargs)
        self.made[host.name] = host
        return host


def process_tree(root: int) -> list[int]:
    """`root` and all its descendants, from /proc."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = open(f"/proc/{entry}/stat").read()
            except OSError:
                continue
            parent = int(stat.rsplit(")", 1)[1].split()[1])
            children.setdefault(parent, []).append(int(entry))
    tree, todo = [], [root]
    while todo:
        pid = todo.pop()
        tree.append(pid)
        todo += children.get(pid, [])
    return tree


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def wait_until(condition, what: str, seconds: float = 60.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, f"gave up waiting for {what}"
        time.sleep(0.01)


@pytest.mark.parametrize(
    "sig, category, pattern",
    [
        (signal.SIGKILL, FailureCategory.CRASH,
         r"^crash: host was killed \(SIGKILL\) while act for \d+ episode\(s\), from outside the sandbox"),
        (signal.SIGTERM, FailureCategory.CRASH, r"^crash: host (crashed with SIGTERM|exited with code 143) while act"),
        # stopped: no handler of its own can run; the parent's clock ends it.  The
        # stop lands mid-call, or (rarely: CI saw it once) after the batch's last
        # call finished and before the reply was written; the clock names either.
        (signal.SIGSTOP, FailureCategory.TIMEOUT,
         r"^timeout: (act \(episode \d+\) ran past its limit of [\d.]+ s \(stopped from outside the host"
         r"|the host finished a request but sent no reply within [\d.]+ s)"),
    ],
    ids=["SIGKILL", "SIGTERM", "SIGSTOP"],
)
def test_a_host_disturbed_from_outside_mid_match_fails_only_its_match(sandbox_mode, sig, category, pattern):
    spec = get_game(GAME)
    victim, other = seeds(spec)
    hosts = Hosts()
    result = {}

    def referee() -> None:
        result["match"] = play_match(spec, victim, other, episodes=2, seed=5, limits=LIMITS, host_factory=hosts)

    thread = threading.Thread(target=referee)
    thread.start()
    try:
        assert hosts.paused.wait(60), "the match never got going"
        tree = process_tree(hosts.made["victim"].pid)  # bwrap and the host inside it, or the host itself
        for pid in tree:
            try:
                os.kill(pid, sig)
            except ProcessLookupError:  # gone with its parent (bwrap) already: what the signal is for
                pass
    finally:
        hosts.go.set()
        thread.join(120)
    assert not thread.is_alive()
    wait_until(lambda: not any(alive(pid) for pid in tree), "the host's processes to be gone", seconds=30)
    failure = result["match"].failure
    assert failure is not None and failure.category is category
    assert failure.policy == "victim"
    summary = failure.summary()
    assert "\n" not in summary and re.search(pattern, summary), summary
    assert "out of memory (limit" not in summary  # no sandbox limit did this: do not blame one
    assert result["match"].episodes == 0  # killed within its two episodes: no result is kept

    # The referee is fine: the same policies play a whole match again.
    again = play_match(spec, victim, other, episodes=2, seed=5, limits=LIMITS)
    assert again.failure is None and again.episodes == 2


def test_a_host_started_on_a_thread_that_ended_keeps_working(sandbox_mode):
    """The TUI's play screen starts a game on one worker thread and plays each move on another."""
    spec = get_game("rrps(num_repetitions=5)")
    box = {}
    starter = threading.Thread(target=lambda: box.setdefault(
        "game", PlaySession(spec, CodePolicy("cycle", spec.seed_policies()["cycle"]), seat=0, seed=1)))
    starter.start()
    starter.join()
    game = box["game"]
    time.sleep(0.2)  # give a host killed with its starting thread time to die
    for _ in range(5):
        mover = threading.Thread(target=game.play, args=(0,))
        mover.start()
        mover.join()
    assert game.finished and len(game.moves) == 10
    assert game.host is None  # closed at the end of the game


HOLDER = textwrap.dedent(
    """
    import sys, time
    from csro_tui.sandbox.sandbox import PolicyHost, SandboxLimits
    source = "class Policy:\\n    def __init__(self, player, game):\\n        pass\\n" \\
             "    def act(self, obs):\\n        while True:\\n            pass\\n"
    host = PolicyHost(source, {"name": "x"}, limits=SandboxLimits(move_timeout=600, batch_timeout=600))
    host.new_episodes([(1, 0, 0)])
    print(host.pid, flush=True)
    host.act([(1, {"legal_actions": [0, 1]})])  # spins until this process dies
    """
)


def test_hosts_die_with_their_parent_process(sandbox_mode):
    """A referee process killed without any chance to clean up takes its hosts with it."""
    holder = subprocess.Popen([sys.executable, "-c", HOLDER], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              start_new_session=True)
    try:
        line = holder.stdout.readline()
        assert line.strip().isdigit(), holder.stderr.read().decode()
        pid = int(line)
        assert alive(pid)
        os.kill(holder.pid, signal.SIGKILL)  # only the parent, not its process group
        holder.wait()
        wait_until(lambda: not alive(pid), "the orphaned host to die", seconds=30)
    finally:
        try:
            os.killpg(holder.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        holder.wait()
