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

from csro_tui.policies.sandbox import kernel_layers

POLICIES = Path(__file__).resolve().parent.parent / "csro_tui" / "policies"

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
