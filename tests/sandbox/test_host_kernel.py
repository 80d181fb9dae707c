"""host_kernel.py's seccomp filter on its own, no Python guard: what a policy
that owns its host process (arbitrary native code; see docs/SECURITY.md,
threat model) meets at the kernel.  Each probe applies the filter the way
the host does, then makes the raw system calls through ctypes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from csro_tui.sandbox.sandbox import kernel_layers

POLICIES = Path(__file__).resolve().parents[2] / "csro_tui" / "sandbox"

PROBE = textwrap.dedent(
    r'''
    import ctypes, errno, json, os, signal, sys
    sys.path.insert(0, sys.argv[1])
    import host_kernel
    victim = int(sys.argv[2])
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    libc.prctl(38, 1, 0, 0, 0)
    libc.prctl(1, int(signal.SIGKILL), 0, 0, 0)
    host_kernel.install_syscall_filter((signal.SIGALRM, signal.SIGPROF), drop_to=DROP)
    result = {}

    def call(name, *args, function=None):
        ctypes.set_errno(0)
        value = (function or libc.syscall)(*args)
        result[name] = "allowed" if value >= 0 else errno.errorcode.get(ctypes.get_errno(), str(ctypes.get_errno()))

    class Limit(ctypes.Structure):
        _fields_ = [("soft", ctypes.c_uint64), ("hard", ctypes.c_uint64)]

    low = Limit(1 << 23, 1 << 23)
    call("prlimit64_other", 302, victim, 9, ctypes.byref(low), None)  # RLIMIT_AS of another process
    call("prlimit64_self_by_pid", 302, os.getpid(), 9, None, ctypes.byref(Limit()))
    call("prlimit64_self", 302, 0, 9, None, ctypes.byref(Limit()))
    call("pdeathsig_0", 1, 0, 0, 0, 0, function=libc.prctl)
    call("pdeathsig_kill", 1, int(signal.SIGKILL), 0, 0, 0, function=libc.prctl)
    call("set_dumpable", 4, 1, 0, 0, 0, function=libc.prctl)
    call("set_name", 15, b"innocent", 0, 0, 0, function=libc.prctl)
    call("setresuid_other", 117, 4242, 4242, 4242)
    call("setuid", 105, 4242)
    os.write(1, json.dumps(result).encode())
    '''
)


def _probe(drop) -> dict:
    victim = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        completed = subprocess.run(
            [sys.executable, "-s", "-S", "-c", PROBE.replace("DROP", repr(drop)), str(POLICIES), str(victim.pid)],
            capture_output=True, timeout=60,
        )
        assert completed.returncode == 0, completed.stderr.decode()
        with open(f"/proc/{victim.pid}/limits") as limits:
            untouched = "8388608" not in next(line for line in limits if line.startswith("Max address space"))
        return {**json.loads(completed.stdout), "victim_untouched": untouched}
    finally:
        victim.kill()
        victim.wait()


@pytest.fixture(autouse=True)
def _needs_seccomp():
    if not kernel_layers()["seccomp"]:
        pytest.skip("no seccomp here")


def test_a_host_reaches_no_other_process_limits_and_keeps_its_death_signal():
    result = _probe(None)
    assert result["prlimit64_other"] == "EPERM" and result["victim_untouched"], result
    assert result["prlimit64_self"] == "allowed"  # glibc's setrlimit/getrlimit
    assert result["pdeathsig_0"] == "EPERM" and result["pdeathsig_kill"] == "allowed", result
    for name in ("set_dumpable", "set_name", "setresuid_other", "setuid"):
        assert result[name] == "EPERM", (name, result)


@pytest.mark.skipif(os.geteuid() != 0, reason="the drop to a host uid happens only as root")
def test_as_root_only_the_planned_drop_is_allowed():
    result = _probe((4243, 4243))
    assert result["setresuid_other"] == "EPERM" and result["setuid"] == "EPERM", result


# -- through a real host: the allow-list, refused calls named, no new executable memory --

from csro_tui.sandbox.failures import FailureCategory, PolicyFailure  # noqa: E402
from csro_tui.sandbox.sandbox import PolicyHost, SandboxLimits  # noqa: E402
from tests.takeover import policy  # noqa: E402

GAME = {"name": "test", "num_players": 2, "num_actions": 3, "action_names": ["a", "b", "c"], "params": {}}
LIMITS = SandboxLimits(init_timeout=60.0, move_timeout=10.0, batch_timeout=10.0, memory_mb=512)


@pytest.fixture
def mode(sandbox_mode):
    """Each sandbox mode in turn (tests/conftest.py)."""
    return sandbox_mode


def _play(source: str, moves: int = 1):
    with PolicyHost(source, GAME, name="probe", limits=LIMITS) as host:
        host.new_episodes([(1, 0, 1), (2, 1, 2)])
        return [host.act([(1, {"legal_actions": [0, 1, 2]}), (2, {"legal_actions": [0, 1, 2]})])
                for _ in range(moves)]


def _refused(source: str) -> PolicyFailure:
    with pytest.raises(PolicyFailure) as caught:
        _play(source)
    return caught.value


def test_an_honest_policy_using_every_allowed_module_is_refused_nothing(mode):
    source = (Path(__file__).parents[1] / "sandbox_policies" / "numpy_everything.py").read_text()
    answers = _play(source, moves=4)
    assert all(answer in (0, 1, 2) for batch in answers for answer in batch)


@pytest.mark.parametrize("call, name", [
    ("libc.syscall(319, b'x', 0)", "memfd_create"),
    ("libc.syscall(294, 0)", "inotify_init1"),
    ("libc.syscall(293, (ctypes.c_int * 2)(), 0)", "pipe2"),
    ("libc.syscall(80, b'/')", "chdir"),
    ("libc.syscall(14, 0, (ctypes.c_ulong * 16)(*([~0 & 0xFFFFFFFFFFFFFFFF] * 16)), None, 8)", "rt_sigprocmask"),
    ("libc.syscall(62, os.getppid(), 0)" .replace("os.getppid()", "libc.getppid()"), "kill"),
])
def test_a_refused_call_fails_with_eperm_and_the_host_names_it(mode, call, name):
    """The policy catches nothing and returns normally; the refusal still
    fails it, as forbidden, naming the call (x86-64: SIGSYS's handler)."""
    source = policy(act=f"""
self.ctypes.set_errno(0)
libc, ctypes = self.libc, self.ctypes
result = {call}
assert result == -1 and ctypes.get_errno() == 1, (result, ctypes.get_errno())
return obs['legal_actions'][0]
""")
    failure = _refused(source)
    assert failure.category is FailureCategory.FORBIDDEN, failure.summary()
    if host_kernel_reports_refusals():
        assert f"refused system call {name} " in failure.message, failure.summary()


def host_kernel_reports_refusals() -> bool:
    import platform

    return platform.machine() == "x86_64"


@pytest.mark.parametrize("how", ["mmap", "mprotect"])
def test_no_new_executable_memory_once_started(mode, how):
    attempt = {
        # an anonymous read+write+execute page
        "mmap": "libc.syscall(9, None, 4096, 7, 0x22, -1, 0)",
        # a buffer of its own made executable
        "mprotect": "libc.syscall(10, (ctypes.addressof(buffer) + 4095) & ~4095, 4096, 5)",
    }[how]
    source = policy(act=f"""
libc, ctypes = self.libc, self.ctypes
buffer = ctypes.create_string_buffer(3 * 4096)
result = {attempt}
return obs['legal_actions'][0] if result in (-1, 0xFFFFFFFFFFFFFFFF) else obs['legal_actions'][1]
""")
    failure = _refused(source)
    assert failure.category is FailureCategory.FORBIDDEN, failure.summary()
    if host_kernel_reports_refusals():
        assert f"refused system call {how} " in failure.message, failure.summary()


def test_an_extension_module_first_reached_after_start_up_cannot_load(mode):
    """numpy's submodules the source names are loaded at start-up; one reached
    only by a computed name would need new executable memory: refused, named."""
    named = "import numpy as np\nclass Policy:\n    def __init__(self, p, g):\n        pass\n" \
            "    def act(self, obs):\n        return int(np.fft.rfft([1.0, 2.0]).real[0] > 0)\n"
    assert _play(named) == [[1, 1]]
    hidden = named.replace("np.fft.rfft", "getattr(np, 'f' + 'ft').rfft")
    failure = _refused(hidden)
    assert failure.category is FailureCategory.FORBIDDEN, failure.summary()
    if host_kernel_reports_refusals():
        assert "refused system call mmap " in failure.message, failure.summary()
