"""The sandbox, isolation set-up (parent side): which protections hosts get here.

`isolation_mode()` chooses bubblewrap namespaces or none ("rlimits");
`kernel_layers()` probes what every host applies to itself in either mode
(Landlock and seccomp, see host_kernel.py); `kernel_boundary_problem()`
refuses untrusted code where the kernel offers neither, unless the person
opts in; `describe_isolation()` is the one line the CLI and the TUI show.
`_bubblewrap_command` builds the bwrap command line.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import threading
from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache
from pathlib import Path

from csro_tui.errors import ConfigError
from csro_tui.sandbox import host_kernel

# The script a host runs: a few lines that import host_main (a module's
# bytecode is cached, a script is compiled at every start).
HOST_SCRIPT = Path(__file__).with_name("host_start.py")
# The host's modules, imported from the script's directory: the episode
# runner and its layers.
HOST_MODULES = tuple(
    Path(__file__).with_name(name) for name in ("host_main.py", "host_kernel.py", "host_channel.py", "host_guard.py", "zygote_main.py")
)
# Set to 1 to run untrusted policies where the kernel offers neither
# Landlock nor seccomp (the Python guard is then the only boundary).
WEAK_SANDBOX_ENV_VAR = "CSRO_ALLOW_WEAK_SANDBOX"
SANDBOX_ENV_VAR = "CSRO_SANDBOX"
# Where the host script is mounted inside bubblewrap: the directory holding
# our own code is never visible to the policy.
_SANDBOX_SCRIPT = "/csro-host/host_start.py"
# As root, every host drops to a uid and gid of its own: HOST_UID_BASE plus
# the pid of the process spawned for it (unique among live processes), so
# no host shares a uid with the user, with `nobody`'s other processes or
# with another host, and the kernel's own uid checks (signals, prlimit,
# ptrace, /proc) keep hosts apart beneath seccomp and Landlock.  The range
# [HOST_UID_BASE, HOST_UID_BASE + 2**22) (2**22: the largest pid_max) lies
# far above the uids of users and of /etc/subuid's default ranges.
HOST_UID_BASE = 0x5F000000
_PID_RANGE = 1 << 22


def host_uid(pid: int) -> int:
    """The uid (and gid) a host spawned as `pid` drops to when started as root."""
    return HOST_UID_BASE + pid % _PID_RANGE
# Environment variables passed through when set: some CPUs need them for
# OpenBLAS (inside numpy) not to crash.
_PASSTHROUGH_ENV = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")


# -- isolation mode -------------------------------------------------------------


def isolation_mode() -> str:
    """"bubblewrap" or "rlimits": how policy hosts are isolated here.

    CSRO_SANDBOX=rlimits forces the fallback; CSRO_SANDBOX=bubblewrap
    requires bubblewrap (ConfigError if it does not work); unset or "auto"
    uses bubblewrap when a probe run succeeds (probed once per process).
    """
    wanted = os.environ.get(SANDBOX_ENV_VAR, "auto").strip().lower()
    if wanted == "rlimits":
        return "rlimits"
    if wanted in ("bubblewrap", "bwrap"):
        problem = bubblewrap_problem()
        if problem:
            raise ConfigError(f"{SANDBOX_ENV_VAR}={wanted} but bubblewrap does not work here: {problem}")
        return "bubblewrap"
    if wanted in ("", "auto"):
        return "rlimits" if bubblewrap_problem() else "bubblewrap"
    raise ConfigError(f"{SANDBOX_ENV_VAR} must be auto, bubblewrap or rlimits, not {wanted!r}")


@lru_cache(maxsize=1)
def bubblewrap_problem() -> str | None:
    """Why bubblewrap cannot run our hosts here, or None if it can (cached)."""
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return "bwrap is not installed"
    work = tempfile.mkdtemp(prefix="csro-probe-")
    try:
        command = _bubblewrap_command(bwrap, work) + ["-s", "-S", "-c", "import sys"]
        try:
            result = subprocess.run(
                command, env=_child_env(), capture_output=True, timeout=20, stdin=subprocess.DEVNULL
            )
        except (OSError, subprocess.TimeoutExpired) as error:
            return f"probe failed: {error}"
        if result.returncode != 0:
            lines = result.stderr.decode("utf-8", "replace").strip().splitlines()
            return f"probe exited with {result.returncode}: {lines[-1] if lines else 'no message'}"
        return None
    finally:
        shutil.rmtree(work, ignore_errors=True)


@lru_cache(maxsize=1)
def kernel_layers() -> dict:
    """{"landlock": ABI or 0, "seccomp": bool}: what every host applies to
    itself here (probed once per process; see host_kernel.py)."""
    return host_kernel.kernel_layers()


def kernel_boundary_problem() -> str | None:
    """Why untrusted code may not run here, or None.

    Landlock or seccomp must be available (the kernel then enforces the
    boundary in every mode); without either, only an explicit
    CSRO_ALLOW_WEAK_SANDBOX=1 lets policies run behind the Python guard.
    """
    layers = kernel_layers()
    if layers["landlock"] or layers["seccomp"]:
        return None
    if os.environ.get(WEAK_SANDBOX_ENV_VAR, "").strip() == "1":
        return None
    return (
        "this kernel offers neither Landlock nor seccomp, so nothing but the Python guard would stand "
        f"between policy code and this machine; set {WEAK_SANDBOX_ENV_VAR}=1 to run policies anyway"
    )


def describe_isolation() -> str:
    """One line for the CLI and the TUI: which protections are active."""
    try:
        mode = isolation_mode()
    except ConfigError as error:
        return f"policy sandbox misconfigured: {error}"
    layers = kernel_layers()
    kernel = []
    if layers["landlock"]:
        kernel.append(f"Landlock ABI {layers['landlock']} (read-only Python install, no writes, no TCP"
                      + (", signals scoped" if layers["landlock"] >= 6 else "") + ")")
    if layers["seccomp"]:
        kernel.append("seccomp allow-list (no exec, fork, sockets, ptrace, new executable memory; "
                      "signals and limits of itself only)")
    if kernel:
        kernel_text = "kernel: " + " + ".join(kernel)
    elif os.environ.get(WEAK_SANDBOX_ENV_VAR, "").strip() == "1":
        kernel_text = f"WARNING: no Landlock or seccomp here, running anyway ({WEAK_SANDBOX_ENV_VAR}=1)"
    else:
        kernel_text = f"no Landlock or seccomp here: policies refused (set {WEAK_SANDBOX_ENV_VAR}=1 to allow)"
    user = "runs as a uid of its own" if os.geteuid() == 0 else "runs as the current user"
    common = f"{user}; memory/CPU/process limits; time limits per call and per episode kept by the parent; Python guard"
    if mode == "bubblewrap":
        return (
            "policy sandbox: bubblewrap (no network, own PID/IPC namespaces, private /tmp, "
            f"read-only Python install only); {kernel_text}; {common}"
        )
    reason = bubblewrap_problem() or f"{SANDBOX_ENV_VAR}=rlimits"
    return f"policy sandbox: no namespaces ({reason}); {kernel_text}; {common}"


def _child_env() -> dict[str, str]:
    env = {"PYTHONHASHSEED": "0", "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
    for name in _PASSTHROUGH_ENV:
        if name in os.environ:
            env[name] = os.environ[name]
    return env


@lru_cache(maxsize=1)
def _site_dirs() -> tuple[str, ...]:
    """Directories the child adds to sys.path (it starts with -S)."""
    paths = sysconfig.get_paths()
    dirs = [paths["purelib"], paths["platlib"]]
    try:
        import importlib.util

        spec = importlib.util.find_spec("numpy")
        if spec is not None and spec.origin:
            dirs.append(str(Path(spec.origin).parent.parent))
    except (ImportError, ValueError):
        pass
    unique: list[str] = []
    for directory in dirs:
        if directory and os.path.isdir(directory) and directory not in unique:
            unique.append(directory)
    return tuple(unique)


def _python_roots() -> list[str]:
    """Everything the interpreter reads: installation prefixes and site dirs."""
    roots = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix, *_site_dirs()}
    expanded = set()
    for root in roots:
        if root and os.path.exists(root):
            expanded.add(os.path.abspath(root))
            expanded.add(os.path.realpath(root))
    # A nested root is covered by its parent's bind.
    ordered = sorted(expanded)
    return [r for r in ordered if not any(r != o and r.startswith(o.rstrip("/") + "/") for o in ordered)]


def _bubblewrap_command(bwrap: str, work_dir: str) -> list[str]:
    """bwrap arguments up to and including the interpreter path."""
    args = [bwrap, "--die-with-parent", "--new-session"]
    if os.geteuid() == 0:
        # Without a user namespace, so the host really is root inside and can
        # drop to its own uid (a user namespace would map only uid 0).
        args += ["--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts", "--unshare-cgroup-try"]
    else:
        args += ["--unshare-all"]
    made_dirs: set[str] = set()

    def ensure_parents(target: str) -> None:
        # bwrap would create missing parents with restrictive modes (an
        # unreadable /root), so create them world-traversable first.
        parent = os.path.dirname(target.rstrip("/"))
        chain = []
        while parent not in ("", "/") and parent not in made_dirs:
            chain.append(parent)
            parent = os.path.dirname(parent)
        for directory in reversed(chain):
            args.extend(["--perms", "0755", "--dir", directory])
            made_dirs.add(directory)

    for system_dir in ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"):
        if os.path.islink(system_dir):
            args += ["--symlink", os.readlink(system_dir), system_dir]
        elif os.path.isdir(system_dir):
            args += ["--ro-bind", system_dir, system_dir]
        made_dirs.add(system_dir)
    for etc_file in ("/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/localtime"):
        if os.path.exists(etc_file):
            args += ["--ro-bind", etc_file, etc_file]
    # The fresh /tmp comes before the Python binds: a later mount hides an
    # earlier one, and the installation may live under /tmp (a CI checkout).
    args += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"]
    made_dirs.add("/tmp")
    for root in _python_roots():
        if root == "/usr" or root.startswith("/usr/"):
            continue
        ensure_parents(root)
        args += ["--ro-bind", root, root]
        made_dirs.add(root)
    ensure_parents(_SANDBOX_SCRIPT)
    args += ["--ro-bind", str(HOST_SCRIPT), _SANDBOX_SCRIPT]
    inside = os.path.dirname(_SANDBOX_SCRIPT)
    for module in HOST_MODULES:
        args += ["--ro-bind", str(module), os.path.join(inside, module.name)]
    # Their bytecode, where the import system looks for it (only files that
    # match their source: a stale one would be compiled again anyway).
    # "-try": bytecode is only a speed-up, and the list is made once per
    # process; a __pycache__ removed since (a reinstall, a clean) must not
    # make bwrap refuse to start every later host.
    for module, bytecode in host_bytecode().items():
        target = os.path.join(inside, "__pycache__", os.path.basename(bytecode))
        ensure_parents(target)
        args += ["--ro-bind-try", bytecode, target]
    ensure_parents(work_dir)
    args += ["--bind", work_dir, work_dir, "--chdir", work_dir, sys.executable]
    return args


@lru_cache(maxsize=1)
def host_bytecode() -> dict[str, str]:
    """{host module path: its current bytecode file}, compiled here if missing
    or stale (once per process), where the import system looks for it
    (`__pycache__` beside the module).  Where that directory cannot be
    written, a module is left out and the host compiles it at start, as it
    would without this."""
    import importlib.util
    import py_compile

    found = {}
    for module in HOST_MODULES:
        try:
            bytecode = importlib.util.cache_from_source(str(module))
        except (NotImplementedError, ValueError):  # no bytecode caching here (sys.implementation.cache_tag None)
            return {}
        if not _bytecode_current(module, bytecode):
            try:
                py_compile.compile(str(module), cfile=bytecode, doraise=True,
                                   invalidation_mode=py_compile.PycInvalidationMode.TIMESTAMP)
            except (OSError, py_compile.PyCompileError):
                continue
            if not _bytecode_current(module, bytecode):
                continue
        found[str(module)] = bytecode
    return found


def _bytecode_current(source: Path, bytecode: str) -> bool:
    """The file is timestamp-checked bytecode of this interpreter for the
    source as it is now (what importlib checks before using it)."""
    import importlib.util

    try:
        with open(bytecode, "rb") as stream:
            header = stream.read(16)
        info = os.stat(source)
    except OSError:
        return False
    return (
        len(header) == 16
        and header[:4] == importlib.util.MAGIC_NUMBER
        and int.from_bytes(header[4:8], "little") == 0  # timestamp-based, not hash-based
        and int.from_bytes(header[8:12], "little") == int(info.st_mtime) & 0xFFFFFFFF
        and int.from_bytes(header[12:16], "little") == info.st_size & 0xFFFFFFFF
    )


# -- spawning ---------------------------------------------------------------------

_spawner: ThreadPoolExecutor | None = None
_spawner_pid = 0
_spawner_lock = threading.Lock()


def _spawn(*args, **kwargs) -> subprocess.Popen:
    """`subprocess.Popen` on one thread that lives as long as the process.

    A host asks the kernel to kill it when its parent dies
    (PR_SET_PDEATHSIG, and bwrap's --die-with-parent), and to the kernel
    the parent is the *thread* that started it: a host started on a
    short-lived worker thread (the TUI's play screen starts a game on one
    and makes each move on another) was killed as soon as that thread ended.
    """
    global _spawner, _spawner_pid
    with _spawner_lock:
        if _spawner is None or _spawner_pid != os.getpid():  # none yet, or a forked child
            _spawner = ThreadPoolExecutor(max_workers=1, thread_name_prefix="csro-host-spawner")
            _spawner_pid = os.getpid()
        spawner = _spawner
    try:
        future = spawner.submit(subprocess.Popen, *args, **kwargs)
    except RuntimeError:  # the interpreter is shutting down: this thread will do
        return subprocess.Popen(*args, **kwargs)
    return future.result()
