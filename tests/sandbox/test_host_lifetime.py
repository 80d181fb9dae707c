"""No policy host outlives the process that started it, whatever the policy
does to its own settings (sandbox v3, issue 27).

The csro process is SIGKILLed in the middle of an evaluation in which one
policy has taken over its host (raw memory through numpy's array interface,
then the host's own ctypes: see tests/takeover.py) and
tried to stay alive: PR_SET_PDEATHSIG 0, every signal blocked, then a spin.
The run happens in a PID namespace of the test's own (`unshare --pid
--fork`, root only), whose first process stays alive, so the namespace's
end kills nothing: what is left a second later is what the sandbox left.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from csro_tui.sandbox.sandbox import bubblewrap_problem, kernel_layers
from tests.takeover import policy

ROOT = Path(__file__).resolve().parents[2]

# Takes over its host, then tries to outlive it.
CLINGING_POLICY = policy(init="""
libc.prctl(1, 0, 0, 0, 0)  # PR_SET_PDEATHSIG 0
everything = (ctypes.c_ulong * 16)(*([0xFFFFFFFFFFFFFFFF] * 16))
libc.syscall(14, 0, everything, None, 8)  # rt_sigprocmask(SIG_BLOCK, every signal)
while True:
    pass
""")

EVALUATOR = textwrap.dedent(
    """
    import os, sys
    sys.path.insert(0, sys.argv[1])
    os.environ["CSRO_SANDBOX"] = sys.argv[2]
    os.environ["CSRO_ZYGOTE"] = sys.argv[4]
    from csro_tui.evaluation.participants import CodePolicy
    from csro_tui.evaluation.referee import MatchJob, play_matches
    from csro_tui.games.registry import get_game
    from csro_tui.sandbox.sandbox import SandboxLimits
    spec = get_game("rrps(num_repetitions=20)")
    seeds = spec.seed_policies()
    hostile = CodePolicy("clinging", open(sys.argv[3]).read())
    jobs = [MatchJob(hostile, CodePolicy("opponent", seeds["frequency_counter"]), 2, 1),
            MatchJob(CodePolicy("bystander", seeds["markov_predictor"]), CodePolicy("cycle", seeds["cycle"]), 2, 2)]
    limits = SandboxLimits(init_timeout=600, move_timeout=600, batch_timeout=600, call_grace=600)
    play_matches(spec, jobs, limits=limits, match_seconds=600)
    """
)

# The namespace's first process: starts the evaluator, then only reaps.
LAUNCHER = textwrap.dedent(
    """
    import os, subprocess, sys, time
    subprocess.Popen([sys.executable, "-c", sys.argv[1], *sys.argv[2:]])
    while True:
        try:
            os.wait()
        except ChildProcessError:
            time.sleep(0.02)
    """
)


def _descendants(root: int) -> dict[int, str]:
    """{pid: command line} of the live (not zombie) descendants of `root`.

    In the test's PID namespace every process is one: an orphan is adopted
    by the namespace's first process (`root`), and a host under bubblewrap
    lives in a nested namespace below it."""
    parents, commands = {}, {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
            command = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if fields[0] != "Z":
            parents[int(entry)] = int(fields[1])
            commands[int(entry)] = command
    found, frontier = {}, [root]
    while frontier:
        parent = frontier.pop()
        for pid, its_parent in parents.items():
            if its_parent == parent and pid not in found:
                found[pid] = commands[pid]
                frontier.append(pid)
    return found


def _parent(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


def _command(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def _runs_zygote(command: str) -> bool:
    """`python ... host_start.py --zygote N`: the zygote or a host it forked
    (not bwrap, whose own command line holds the zygote's)."""
    words = command.split()
    return bool(words) and "--zygote" in words and "bwrap" not in words[0]


def _is_zygote(pid: int, command: str) -> bool:
    """The zygote itself (issue 26), whose parent is not one: the hosts it
    forked share its command line."""
    try:
        return _runs_zygote(command) and not _runs_zygote(_command(_parent(pid)))
    except OSError:
        return False


def _wait_for(condition, seconds: float, what: str):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.02)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.mark.parametrize("zygote", ["1", "0"], ids=["zygote", "spawned"])
@pytest.mark.parametrize("mode", ["rlimits", "bubblewrap"])
def test_no_host_outlives_a_killed_parent_even_one_that_cleared_its_death_signal(mode, zygote, tmp_path):
    """With the zygote (issue 26) the chain is csro -> zygote -> host: the
    zygote dies with csro, each host with the zygote."""
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        pytest.skip("needs root and unshare(1) for a PID namespace of the test's own")
    if mode == "bubblewrap" and bubblewrap_problem():
        pytest.skip(f"bubblewrap unavailable: {bubblewrap_problem()}")
    if not kernel_layers()["seccomp"]:
        pytest.skip("no seccomp here: nothing stops a host from clearing its parent-death signal")
    policy = tmp_path / "clinging.py"
    policy.write_text(CLINGING_POLICY)
    unshare = subprocess.Popen(
        ["unshare", "--pid", "--fork", "--mount-proc", sys.executable, "-c", LAUNCHER, EVALUATOR, str(ROOT), mode,
         str(policy), zygote],
        start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )
    try:
        launcher = _wait_for(
            lambda: int(Path(f"/proc/{unshare.pid}/task/{unshare.pid}/children").read_text().split()[0] or 0)
            if Path(f"/proc/{unshare.pid}/task/{unshare.pid}/children").read_text().split() else None,
            30, "unshare to start the namespace",
        )
        # Four hosts (two matches), the clinging one spinning in __init__ after its moves.
        hosts = _wait_for(
            lambda: (lambda found: found if len(found) >= 4 else None)(
                [pid for pid, command in _descendants(launcher).items()
                 if "host_start.py" in command and "bwrap" not in command.split()[0]
                 and not _is_zygote(pid, command)]),
            120, "four policy hosts",
        )
        zygotes = [pid for pid, command in _descendants(launcher).items()
                   if "bwrap" not in command.split()[0] and _is_zygote(pid, command)]
        # One zygote per flavour in use: the clinging policy imports numpy (its takeover does).
        assert (1 <= len(zygotes) <= 2) if zygote == "1" else not zygotes, _descendants(launcher)
        assert all(_is_zygote(_parent(pid), _command(_parent(pid))) == (zygote == "1") for pid in hosts)
        time.sleep(3.0)  # the clinging policy has cleared what it could and spins
        evaluator = [pid for pid, command in _descendants(launcher).items()
                     if pid != launcher and "csro_tui.evaluation" in command]
        assert len(evaluator) == 1, _descendants(launcher)
        assert all(Path(f"/proc/{pid}").exists() for pid in hosts)

        os.kill(evaluator[0], signal.SIGKILL)
        killed = time.monotonic()
        _wait_for(lambda: not _descendants(launcher), 1.0,
                  "every host to die within a second of its parent")
        print(f"all gone {time.monotonic() - killed:.3f} s after the parent's SIGKILL")
    finally:
        try:
            os.killpg(unshare.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        unshare.wait()
