"""Hosts forked by the zygote (issue 26): the same layers as a spawned host,
siblings and the zygote out of a policy's reach, and a zygote that dies
taking nothing down with it but its own hosts, which fail cleanly."""

from __future__ import annotations

import ast
import errno
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from csro_tui.sandbox import zygote
from csro_tui.sandbox.failures import FailureCategory, PolicyFailure
from csro_tui.sandbox.isolation import host_uid
from csro_tui.sandbox.sandbox import PolicyHost, SandboxLimits, bubblewrap_problem, kernel_layers
from tests.takeover import policy

LIMITS = SandboxLimits(init_timeout=30.0, move_timeout=10.0, batch_timeout=10.0)
GAME = {"name": "test", "num_players": 2, "num_actions": 3, "action_names": ["a", "b", "c"], "params": {}}
HONEST = """
class Policy:
    def __init__(self, player, game):
        self.calls = 0

    def act(self, obs):
        self.calls += 1
        return obs["legal_actions"][self.calls % len(obs["legal_actions"])]
"""


@pytest.fixture
def mode(sandbox_mode, monkeypatch):
    """Each sandbox mode in turn (tests/conftest.py), the zygote on."""
    monkeypatch.setenv(zygote.ZYGOTE_ENV_VAR, "1")
    return sandbox_mode


def _play(host: PolicyHost, episode: int = 1) -> int:
    host.new_episodes([(episode, 0, 0)])
    return host.act([(episode, {"legal_actions": [0, 1, 2]})])[0]


def _status(pid: int, field: str) -> str:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return line.split(":", 1)[1].strip()
    raise AssertionError(f"no {field} for {pid}")


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")


def test_hosts_are_forked_by_the_zygote_each_with_its_own_uid_and_layers(mode):
    with PolicyHost(HONEST, GAME, name="a", limits=LIMITS) as first, \
            PolicyHost(HONEST, GAME, name="b", limits=LIMITS) as second:
        assert _play(first) in (0, 1, 2) and _play(second) in (0, 1, 2)
        forked = zygote._current(mode)
        assert isinstance(first._process, zygote.ZygoteHost) and isinstance(second._process, zygote.ZygoteHost)
        for host in (first, second):
            assert int(_status(host.pid, "PPid")) == forked.pid  # the zygote's child, not bwrap's or ours
            assert _status(host.pid, "NoNewPrivs") == "1"
            if kernel_layers()["seccomp"]:
                assert _status(host.pid, "Seccomp") == "2"  # filter mode
            assert host.layers["seccomp"] or not kernel_layers()["seccomp"]
            assert bool(host.layers["landlock"]) == bool(kernel_layers()["landlock"])
            if os.geteuid() == 0:
                assert _status(host.pid, "Uid").split()[0] == str(host_uid(host.pid))
        if os.geteuid() == 0:
            assert _status(first.pid, "Uid") != _status(second.pid, "Uid")
        assert _status(forked.pid, "Seccomp") == "0"  # the zygote applies no layer: each child does
        # A zygote child's descriptors are a spawned host's: /dev/null, its log,
        # its two channel pipes and its clock page; nothing of the zygote's.
        if os.geteuid() == 0:
            links = sorted(os.readlink(f"/proc/{first.pid}/fd/{fd}") for fd in os.listdir(f"/proc/{first.pid}/fd"))
            assert len(links) == 6, links
            assert links.count("/dev/null") == 2 and sum(link.startswith("pipe:") for link in links) == 2, links
            assert any(link == os.path.join(first._temp_dir, "host.log") for link in links), links
            assert any(link.startswith("/memfd:csro-host-clock") for link in links), links


@pytest.mark.parametrize("off", ["0", "false", "FALSE", " Off ", "no"])
def test_zygote_off_spawns_hosts_as_before(off, monkeypatch):
    monkeypatch.setenv("CSRO_SANDBOX", "rlimits")
    monkeypatch.setenv(zygote.ZYGOTE_ENV_VAR, off)
    with PolicyHost(HONEST, GAME, name="spawned", limits=LIMITS) as host:
        assert _play(host) in (0, 1, 2)
        assert isinstance(host._process, subprocess.Popen)
        assert int(_status(host.pid, "PPid")) == os.getpid()


def test_a_zygote_that_cannot_start_leaves_hosts_spawned(monkeypatch):
    monkeypatch.setenv("CSRO_SANDBOX", "rlimits")
    monkeypatch.setenv(zygote.ZYGOTE_ENV_VAR, "1")
    zygote.shutdown()

    def broken(*_args):
        raise OSError("no zygote today")

    monkeypatch.setattr(zygote, "_Zygote", broken)
    monkeypatch.setattr(zygote, "_failed_at", {})
    with PolicyHost(HONEST, GAME, name="spawned", limits=LIMITS) as host:
        assert _play(host) in (0, 1, 2)
        assert isinstance(host._process, subprocess.Popen)


def test_zygote_killed_mid_evaluation_fails_its_hosts_cleanly_and_the_next_host_works(mode):
    first = PolicyHost(HONEST, GAME, name="first", limits=LIMITS)
    second = PolicyHost(HONEST, GAME, name="second", limits=LIMITS)
    try:
        _play(first), _play(second)
        forked = zygote._current(mode)
        at_kill = zygote.starts
        children = [first.pid, second.pid]
        os.kill(forked.process.pid, signal.SIGKILL)  # bwrap's process under bubblewrap: the whole sandbox
        deadline = time.monotonic() + 5
        while any(_alive(pid) for pid in children) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert not any(_alive(pid) for pid in children), "hosts outlived their zygote"
        for host in (first, second):
            started = time.monotonic()
            with pytest.raises(PolicyFailure) as failure:
                host.act([(1, {"legal_actions": [0, 1, 2]})])
            assert failure.value.category is FailureCategory.CRASH
            assert time.monotonic() - started < 5
        with PolicyHost(HONEST, GAME, name="after", limits=LIMITS) as after:
            assert _play(after) in (0, 1, 2)
            assert isinstance(after._process, zygote.ZygoteHost)
        assert zygote.starts == at_kill + 1  # started again, once
        assert zygote._current(mode) is not forked
    finally:
        first.close()
        second.close()


# Takes over its host (raw memory, then ctypes: tests/takeover.py), then
# aims at its sibling and at the zygote with raw system calls.
SIBLING_ATTACK = policy(init="""
targets = game["params"]["targets"]
results = {}
errno = ctypes.get_errno
for name, pid in targets.items():
    results["kill " + name] = (libc.syscall(62, pid, 0), errno())  # kill(pid, 0): is it even visible?
    results["ptrace " + name] = (libc.syscall(101, 16, pid, 0, 0), errno())  # PTRACE_ATTACH
    for what in ("environ", "mem", "maps"):
        results[what + " " + name] = (libc.open(("/proc/%d/%s" % (pid, what)).encode(), 0), errno())
raise RuntimeError("RESULTS" + repr(sorted(results.items())))
""")


def test_a_taken_over_child_cannot_signal_trace_or_read_its_sibling_or_the_zygote(mode):
    if not kernel_layers()["seccomp"]:
        pytest.skip("no seccomp here: the takeover's system calls are what this tests")
    # The attacker imports numpy (its takeover needs it), so it is forked by
    # the zygote that has numpy loaded: so is its sibling here.
    honest_numpy = "import numpy as np\n" + HONEST
    with PolicyHost(honest_numpy, GAME, name="sibling", limits=LIMITS) as sibling:
        assert _play(sibling) in (0, 1, 2)
        forked = zygote._current(mode, sibling._process.numpy)
        # Under bubblewrap the hosts see pids of the zygote's namespace.
        inner = {"sibling": sibling._process.inner_pid, "zygote": zygote._namespace_pid(forked.pid)}
        game = {**GAME, "params": {"targets": inner}}
        attacker = PolicyHost(SIBLING_ATTACK, game, name="attacker", limits=LIMITS)
        try:
            with pytest.raises(PolicyFailure) as failure:
                attacker.new_episodes([(1, 0, 0)])
        finally:
            attacker.close()
        message = failure.value.message
        assert failure.value.category is FailureCategory.FORBIDDEN, message
        assert "RESULTS" in message, message  # every attempt ran (and seccomp named the refused ptrace)
        results = ast.literal_eval(message.split("RESULTS", 1)[1].split(" in Policy.__init__")[0])
        assert len(results) == 10, results
        for what, (returned, error) in results:  # refused, each one: EPERM (kill, ptrace) or EACCES (/proc)
            assert returned == -1 and error in (errno.EPERM, errno.EACCES), (what, returned, error)
        # Both still alive, and the sibling still plays.
        assert _alive(sibling.pid) and forked.alive()
        sibling.new_episodes([(2, 0, 0)])
        assert sibling.act([(2, {"legal_actions": [0, 1, 2]})])[0] in (0, 1, 2)


def test_a_child_that_cannot_prove_its_layers_is_replaced_not_charged_to_the_policy(mode, monkeypatch, caplog):
    real = zygote.spawn_host

    def dying(*args, **kwargs):
        forked = real(*args, **kwargs)
        os.kill(forked[0].pid, signal.SIGKILL)  # dies before its reply to prepare
        return forked

    monkeypatch.setattr(zygote, "spawn_host", dying)
    with PolicyHost(HONEST, GAME, name="honest", limits=LIMITS) as host:
        assert _play(host) in (0, 1, 2)  # no PolicyFailure: served by a spawned host
        assert not isinstance(host._process, zygote.ZygoteHost)
        assert host.failure is None
    assert "could not prove its sandbox" in caplog.text


def test_the_zygote_switches_read_the_projects_boolean_words_in_any_case(monkeypatch):
    for on in ("1", "TRUE", "yes", "On", "anything else"):
        monkeypatch.setenv(zygote.ZYGOTE_ENV_VAR, on)
        monkeypatch.setenv(zygote.ZYGOTE_NUMPY_ENV_VAR, on)
        assert zygote.zygote_enabled("rlimits") and zygote.numpy_zygote_enabled(), on
    for off in ("0", "FALSE", "No", "OFF"):
        monkeypatch.setenv(zygote.ZYGOTE_ENV_VAR, off)
        monkeypatch.setenv(zygote.ZYGOTE_NUMPY_ENV_VAR, off)
        assert not zygote.zygote_enabled("rlimits") and not zygote.numpy_zygote_enabled(), off
    monkeypatch.delenv(zygote.ZYGOTE_ENV_VAR)
    assert zygote.zygote_enabled("bubblewrap") and not zygote.zygote_enabled("none")


@pytest.mark.parametrize("numpy_flag", ["1", "0"])
def test_numpy_policies_are_forked_from_a_zygote_that_has_numpy_the_others_from_one_without(numpy_flag, monkeypatch):
    monkeypatch.setenv("CSRO_SANDBOX", "rlimits")
    monkeypatch.setenv(zygote.ZYGOTE_ENV_VAR, "1")
    monkeypatch.setenv(zygote.ZYGOTE_NUMPY_ENV_VAR, numpy_flag)
    zygote.shutdown()
    try:
        uses_numpy = "import numpy as np\n" + HONEST.replace("self.calls += 1", "self.calls += int(np.int64(1))")
        with PolicyHost(uses_numpy, GAME, name="numpy", limits=LIMITS) as with_numpy, \
                PolicyHost(HONEST, GAME, name="plain", limits=LIMITS) as plain:
            assert _play(with_numpy) in (0, 1, 2) and _play(plain) in (0, 1, 2)
            assert isinstance(with_numpy._process, zygote.ZygoteHost) and isinstance(plain._process, zygote.ZygoteHost)
            assert with_numpy._process.numpy == (numpy_flag == "1")
            assert not plain._process.numpy
            plain_maps = Path(f"/proc/{zygote._current('rlimits').pid}/maps").read_text()
            assert "_multiarray_umath" not in plain_maps
            if numpy_flag == "1":
                numpy_maps = Path(f"/proc/{zygote._current('rlimits', True).pid}/maps").read_text()
                assert "_multiarray_umath" in numpy_maps
                assert "pocketfft" not in numpy_maps  # numpy.fft stays lazy: loaded only for a policy naming it
            else:
                assert ("rlimits", True) not in zygote._zygotes
    finally:
        zygote.shutdown()


def test_a_pool_workers_sigterm_inside_a_finalizer_is_delivered_again_not_swallowed(monkeypatch):
    """Pool.terminate's SIGTERM raising SystemExit inside a __del__ (a host's
    close, a zygote round trip) was swallowed and the parent waited for the
    worker forever (test_stop_mid_evaluation hung once): it is sent again."""
    import sys
    import threading

    from csro_tui.evaluation import runner

    sent = []
    done = threading.Event()
    monkeypatch.setattr(os, "kill", lambda pid, number: (sent.append((pid, number)), done.set()))
    monkeypatch.setattr(signal, "signal", lambda *_args: None)  # the test process keeps its handlers

    class Closing:
        def __del__(self):
            runner._unwind_on_sigterm(signal.SIGTERM, sys._getframe())  # as if the signal came now

    Closing()  # its __del__ runs here: the handler must not raise into it
    assert done.wait(5) and sent == [(os.getpid(), signal.SIGTERM)]
    with pytest.raises(SystemExit):  # outside a finalizer it unwinds, as before
        runner._unwind_on_sigterm(signal.SIGTERM, sys._getframe())


def test_under_bubblewrap_each_child_has_its_own_working_directory_removed_with_it(monkeypatch):
    if bubblewrap_problem():
        pytest.skip(f"bubblewrap unavailable: {bubblewrap_problem()}")
    monkeypatch.setenv("CSRO_SANDBOX", "bubblewrap")
    monkeypatch.setenv(zygote.ZYGOTE_ENV_VAR, "1")
    with PolicyHost(HONEST, GAME, name="a", limits=LIMITS) as first, \
            PolicyHost(HONEST, GAME, name="b", limits=LIMITS) as second:
        _play(first), _play(second)
        forked = zygote._current("bubblewrap")
        cwd = {os.readlink(f"/proc/{host.pid}/cwd") for host in (first, second)}
        assert len(cwd) == 2 and all(path.startswith("/tmp/host-") for path in cwd), cwd
    leftover = [name for name in os.listdir(f"/proc/{forked.pid}/root/tmp") if name.startswith("host-")]
    assert not leftover  # removed when the zygote reaped each child
