"""Policy host zygote: the process that forks a fresh host per policy.

Started by `csro_tui.sandbox.zygote` as `python -s -S -P host_start.py
--zygote` (the same launcher and interpreter flags as a host).  STDLIB
ONLY, never imports csro_tui.  It does, once, the work no policy can
influence: the interpreter's start, the host's modules (host_main and its
layers), the modules allowed modules import lazily and the compiler's
one-time set-up.  Then it forks a child per host.  Each child runs
`host_main.main()` exactly as a spawned host does: every layer (rlimits,
no-new-privs and the parent-death signal, Landlock, the seccomp
allow-list, its own uid, the guard) is applied by the child to itself,
after the fork and before any policy byte arrives.  The zygote itself
applies none of them, receives no policy code, seed or secret, and never
runs anything a parent did not write.

Protocol over the SOCK_SEQPACKET socket whose descriptor follows `--zygote`:
- the zygote sends `{"ready": pid}` once its imports are done;
- `{"op": "spawn", "cwd": dir}` with five descriptors (SCM_RIGHTS): the
  host's stdin and stdout pipe ends, its log (stderr), its clock page (a
  memfd the parent made: the page stays the parent's) and a status pipe;
  the zygote forks, replies `{"pid": pid}` and keeps only the status pipe,
  where it writes the child's exit code (Popen's convention: -N for a
  signal) when the child ends;
- `{"op": "preload", "site_dirs": [...], "modules": [...]}` (before any
  child): modules every host may import anyway (numpy) are imported here
  once; the reply is `{"preloaded": [...]}`;
- `{"op": "release", "pid": pid}`: the parent has read the exit code; the
  zygote reaps the child and replies `{"released": pid}`.  Until then the dead child stays a zombie, so its
  pid (and process group) cannot be reused while the parent may still
  signal it, as with a child of the parent's own.
EOF on the socket (the parent is gone) ends the zygote.  The zygote dies
with its parent (the parent-death signal), and each child with the zygote
(its own parent-death signal, set by host_main), so no host outlives the
process that asked for it.
"""

import sys

sys.dont_write_bytecode = True

import gc  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import signal  # noqa: E402

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, _HERE)
try:
    import host_kernel  # noqa: E402
    import host_main  # noqa: E402
finally:
    sys.path.remove(_HERE)

# What a spawned host has loaded at this point; the zygote's own modules
# (sockets, select) are dropped from a child's sys.modules before its host
# starts, so a policy finds nothing there a spawned host would not have
# (the guard refuses the first import of socket, select, ...).
_HOST_MODULES = frozenset(sys.modules)
import select  # noqa: E402
import socket  # noqa: E402

_ZYGOTE_ONLY_MODULES = frozenset(sys.modules) - _HOST_MODULES

# In a child: where its clock page's descriptor lands.  Not 3: a spawned
# host's channel takes the lowest free descriptors (host_main.main dups
# stdin and stdout), and a child must look the same from inside.
CLOCK_FD = 10
_FDS_PER_SPAWN = 5
_HIGH_FD = 64  # received descriptors are moved above the child's 0-3 before being placed there


def main() -> None:
    parent = os.getppid()
    ctypes = host_kernel.load_ctypes()
    host_kernel.set_parent_death_signal(ctypes, parent)  # the zygote dies with the csro process
    host_kernel._load_libseccomp()  # the library only: each child builds and loads its own filter
    prctl = ctypes.CDLL(None, use_errno=True).prctl  # resolved once: a child's first call after the fork
    # The work a spawned host repeats each time (host_main._prepare's
    # policy-independent part): lazily imported stdlib and the compiler.
    for name in ("__future__", "heapq", "weakref", "copy", "types", "encodings.latin_1", "encodings.ascii",
                 "encodings.utf_16"):
        try:
            __import__(name)
        except ImportError:
            pass
    compile("class C:\n    def f(self, x):\n        return {'a': [x, 1.0, f'{x}']}\n", "<zygote warm-up>", "exec",
            dont_inherit=True)
    # Everything loaded so far out of the collector's sight: a child's
    # collections then never touch (and copy) the zygote's pages.
    gc.collect()
    gc.freeze()
    control = socket.socket(fileno=int(sys.argv[2]))  # host_start.py --zygote FD
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)  # wakes the select below
    control.send(json.dumps({"ready": os.getpid()}).encode())
    running: dict[int, int] = {}  # child pid -> status pipe (write end)
    while True:
        try:
            readable, _, _ = select.select([control, wake_r], [], [])
        except InterruptedError:
            continue
        if wake_r in readable:
            try:
                os.read(wake_r, 4096)
            except BlockingIOError:
                pass
            _report_exits(running)
        if control in readable:
            try:
                data, fds, _flags, _addr = socket.recv_fds(control, 1 << 16, _FDS_PER_SPAWN)
            except OSError:
                data, fds = b"", []
            if not data:
                os._exit(0)  # the parent is gone; the children die with us
            try:
                request = json.loads(data)
            except ValueError:
                request = {}
            op = request.get("op") if type(request) is dict else None
            if op == "spawn" and len(fds) == _FDS_PER_SPAWN:
                pid = _fork_host(request, fds, control, prctl)
                for fd in fds[:4]:
                    os.close(fd)
                running[pid] = fds[4]
                control.send(json.dumps({"pid": pid}).encode())
                _report_exits(running)
            elif op == "preload" and not running and type(request.get("modules")) is list:
                _preload(request)
                control.send(json.dumps({"preloaded": sorted(set(request["modules"]) & set(sys.modules))}).encode())
            elif op == "release" and type(request.get("pid")) is int:
                try:
                    os.waitpid(request["pid"], 0)
                except ChildProcessError:
                    pass
                try:  # its working directory in the sandbox's /tmp (bubblewrap), empty: Landlock forbids writes
                    os.rmdir(_child_directory(request["pid"]))
                except OSError:
                    pass
                control.send(json.dumps({"released": request["pid"]}).encode())
            else:
                for fd in fds:
                    os.close(fd)
                control.send(json.dumps({"error": "bad request"}).encode())


def _preload(request: dict) -> None:
    """Import modules every host may import anyway (numpy), from the
    installation's site directories, before any child exists: a child then
    finds them loaded instead of importing them at its policy's load.
    Sent by the parent once, right after `ready`; never policy data."""
    for directory in request.get("site_dirs", []):
        if type(directory) is str and directory not in sys.path:
            sys.path.append(directory)
    for name in request["modules"]:
        if type(name) is str:
            try:
                __import__(name)
            except Exception:  # noqa: BLE001 - a child imports it (and reports) as a spawned host would
                pass
    gc.collect()
    gc.freeze()


def _child_directory(pid: int) -> str:
    return f"/tmp/host-{pid}"


def _report_exits(running: dict) -> None:
    """Write each ended child's exit code to its status pipe; leave it a zombie
    (reaped on `release`)."""
    for pid in list(running):
        try:
            info = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:
            info = None
            code = -signal.SIGKILL
        else:
            if info is None:
                continue
            code = info.si_status if info.si_code == os.CLD_EXITED else -info.si_status
        status = running.pop(pid)
        try:
            os.write(status, f"{code}\n".encode())
        except OSError:
            pass
        os.close(status)


def _fork_host(request: dict, fds: list, control, prctl) -> int:
    zygote = os.getpid()
    # The reply waits until the child has its own session, as Popen returns
    # after its child's setsid: the parent may signal the group at once.
    session_r, session_w = os.pipe()
    pid = os.fork()
    if pid:
        os.close(session_w)
        os.read(session_r, 1)  # one byte, or EOF if the child died first
        os.close(session_r)
        return pid
    # The child: nothing of the zygote's but its code and imports.
    code = 1
    try:
        # Dies with the zygote (which dies with the csro process); ends now if
        # the zygote is already gone.  host_main sets it again, as in a spawned host.
        prctl(1, int(signal.SIGKILL), 0, 0, 0)  # PR_SET_PDEATHSIG (host_kernel.set_parent_death_signal)
        if os.getppid() != zygote:
            os._exit(host_kernel.EXIT_ORPHANED)
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        os.setsid()  # a process group of its own, as a spawned host (start_new_session)
        os.close(session_r)
        os.write(session_w, b"1")
        os.close(session_w)
        high = [os.dup2(fd, _HIGH_FD + index) for index, fd in enumerate(fds[:4])]
        for target, fd in zip((0, 1, 2, CLOCK_FD), high):  # stdin, stdout, the log as stderr, the clock page
            os.dup2(fd, target)
        os.closerange(3, CLOCK_FD)
        os.closerange(CLOCK_FD + 1, os.sysconf("SC_OPEN_MAX") if os.sysconf("SC_OPEN_MAX") > 0 else 1 << 16)
        control.detach()  # closed above (or replaced by the clock page's)
        for name in _ZYGOTE_ONLY_MODULES | {__name__}:
            sys.modules.pop(name, None)
        cwd = request.get("cwd")
        if type(cwd) is not str:  # under bubblewrap: a directory of its own in the sandbox's private /tmp
            cwd = _child_directory(os.getpid())
            os.mkdir(cwd, 0o700)
        os.chdir(cwd)
        host_main.main()
        code = 0
    except BaseException:  # noqa: BLE001 - the child must never return into the zygote's loop
        try:
            import traceback

            traceback.print_exc()
        finally:
            os._exit(1)
    os._exit(code)
