"""Policy host: the child process that runs one untrusted policy module.

Started by `csro_tui.policies.sandbox.PolicyHost` as
`python -s -S -P host_main.py`, possibly inside bubblewrap.  STDLIB ONLY, and
it never imports csro_tui: it starts fast and the policy cannot reach the
application's code.  Everything it needs (allowed imports, limits, forbidden
names) arrives as data in the first message.

Protocol: one JSON object per line, both ways, over the stdin/stdout pipes,
which are moved to private descriptors at once so the policy's prints can
neither flood nor corrupt the channel.  The first request is `init`; then
`new` (construct episodes), `act` (one batch of observations) and `end`.
Every reply echoes the request's `seq`.  A failure reply has `ok: false`,
a category (crash, memory, forbidden, timeout), a one-line message, the
policy's traceback and the tail of what it printed; the parent then kills us.

Before the policy loads, in this order: resource limits, imports of the
modules the policy names, dropping root to nobody, the parent-death signal,
captured output, restricted builtins and an audit hook that blocks processes,
network, file writes, reads outside the Python installation, ctypes, frame
introspection and imports outside the allowlist.
"""

import sys

sys.dont_write_bytecode = True  # never write .pyc files into the installation

import builtins  # noqa: E402

# The host's own names for every builtin, bound now: a policy that reaches
# the builtins module and replaces `type` or `repr` there must not make the
# host's code (failure reports, answer checks) run its functions.
globals().update({name: value for name, value in vars(builtins).items() if not name.startswith("__")})

import gc  # noqa: E402
import linecache  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import resource  # noqa: E402
import signal  # noqa: E402
import traceback  # noqa: E402
import types  # noqa: E402

import time  # noqa: E402

# The isolation layer lives next to this script (also inside bubblewrap);
# -P keeps the script's directory off sys.path, so add it for this one import.
_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, _HERE)
try:
    import host_kernel  # noqa: E402
finally:
    sys.path.remove(_HERE)

# Mutable host state lives in closures and locals, not here, so a policy that
# somehow reached this module's globals would find little to tamper with.
_MAX_DIST_ENTRIES = 100_000
_MAX_ACTION_BITS = 63  # larger ints cannot be action ids (and may not fit the JSON channel)
_EXIT_AFTER_FAILURE = 3


class ForbiddenOperation(BaseException):
    """Raised into policy code for a blocked operation.

    A BaseException, so `except Exception:` in the policy does not swallow
    it; the violation is also recorded, so it is reported even if it is.
    """


class _ProtocolError(Exception):
    """The parent sent something this host cannot act on."""


class _OutputTail:
    """A stand-in for sys.stdout/sys.stderr that keeps only a bounded tail."""

    encoding = "utf-8"
    errors = "replace"

    def __init__(self, limit: int) -> None:
        self._limit = max(limit, 0)
        self._parts: list[str] = []
        self._size = 0

    def write(self, text):
        if not isinstance(text, str):
            raise TypeError(f"write() argument must be str, not {type(text).__name__}")
        if self._limit:
            piece = text[-self._limit :]
            self._parts.append(piece)
            self._size += len(piece)
            if self._size > 2 * self._limit:
                joined = "".join(self._parts)[-self._limit :]
                self._parts = [joined]
                self._size = len(joined)
        return len(text)

    def writelines(self, lines):
        for line in lines:
            self.write(line)

    def flush(self):
        pass

    def isatty(self):
        return False

    def writable(self):
        return True

    def tail(self) -> str:
        return "".join(self._parts)[-self._limit :] if self._limit else ""


class CallTimeout(BaseException):
    """Raised into policy code when one call overruns its wall-clock limit."""


class _CallTimer:
    """Each policy call's own wall-clock limit, whatever the batch size.

    SIGALRM (ITIMER_REAL) raises CallTimeout into the call when its limit
    passes, and again every quarter second after (sleeping, a Python loop
    or a policy that catches it: the handler runs in all of them); once the
    grace period has passed too, the handler reports the timeout itself and
    exits.  Code stuck in C never runs the handler: ITIMER_PROF sends SIGPROF,
    whose default action ends the process, when the call has used its limit
    plus the grace in CPU time.  Handlers cannot be changed afterwards (the
    guard stubs signal.signal; seccomp refuses rt_sigaction for both).
    """

    def __init__(self, channel: "_Channel", limit: float, grace: float) -> None:
        self.channel = channel
        self.limit = max(limit, 0.001)
        self.grace = max(grace, 0.0)
        self.what = ""
        self.expired = False
        self.hard_deadline = 0.0
        self.seq = None
        self._setitimer = signal.setitimer
        self._monotonic = time.monotonic

    def install(self) -> None:
        signal.signal(signal.SIGALRM, self._on_alarm)
        signal.signal(signal.SIGPROF, signal.SIG_DFL)

    def start(self, seq, what: str, limit: float | None = None) -> None:
        self.seq, self.what, self.expired = seq, what, False
        limit = self.limit if limit is None else limit
        self.current_limit = limit
        self._setitimer(signal.ITIMER_REAL, limit, 0.25)
        self._setitimer(signal.ITIMER_PROF, limit + self.grace + 0.5, 0)

    def stop(self) -> None:
        self._setitimer(signal.ITIMER_REAL, 0, 0)
        self._setitimer(signal.ITIMER_PROF, 0, 0)

    def message(self) -> str:
        return f"{self.what} ran past its limit of {self.current_limit:g} s"

    def _on_alarm(self, _signum, _frame):
        if not self.expired:
            self.expired = True
            self.hard_deadline = self._monotonic() + self.grace
        elif self._monotonic() >= self.hard_deadline:
            self.stop()
            try:
                self.channel.send({"seq": self.seq, "ok": False, "category": "timeout",
                                   "message": self.message() + " (and kept running)", "traceback": "", "output": ""})
            finally:
                os._exit(_EXIT_AFTER_FAILURE)
        raise CallTimeout(self.message())


class _Channel:
    """Line-delimited JSON over two private file descriptors."""

    def __init__(self, in_fd: int, out_fd: int) -> None:
        self._reader = os.fdopen(in_fd, "rb", buffering=1 << 16)
        self._out_fd = out_fd

    def receive(self):
        line = self._reader.readline()
        if not line:
            return None
        return json.loads(line)

    def send(self, message) -> None:
        data = json.dumps(message, separators=(",", ":")).encode("utf-8") + b"\n"
        view = memoryview(data)
        while view:
            written = os.write(self._out_fd, view)
            view = view[written:]


def _set_limit(which: int, value) -> None:
    """Set soft and hard limit to `value` (never above an existing hard limit)."""
    if value is None:
        return
    _soft, hard = resource.getrlimit(which)
    if hard != resource.RLIM_INFINITY:
        value = min(value, hard)
    resource.setrlimit(which, (value, value))


def _apply_limits(limits: dict) -> None:
    _set_limit(resource.RLIMIT_CORE, 0)
    if limits.get("memory_bytes"):
        _set_limit(resource.RLIMIT_AS, int(limits["memory_bytes"]))
    if limits.get("cpu_seconds"):
        cpu = int(limits["cpu_seconds"])
        _soft, hard = resource.getrlimit(resource.RLIMIT_CPU)
        # SIGXCPU at the soft limit ends the process; the hard limit (SIGKILL)
        # one second later is only a backstop.
        new_hard = cpu + 1 if hard == resource.RLIM_INFINITY else min(cpu + 1, hard)
        resource.setrlimit(resource.RLIMIT_CPU, (min(cpu, new_hard), new_hard))
    if limits.get("max_file_bytes") is not None:
        _set_limit(resource.RLIMIT_FSIZE, int(limits["max_file_bytes"]))
    if limits.get("max_open_files"):
        _set_limit(resource.RLIMIT_NOFILE, int(limits["max_open_files"]))


def _drop_privileges(uid: int, gid: int) -> None:
    """As root, become uid/gid for good, so RLIMIT_NPROC and file permissions apply."""
    os.setgroups([])
    os.setresgid(gid, gid, gid)
    os.setresuid(uid, uid, uid)
    if os.getuid() != uid or os.geteuid() != uid or os.getgid() != gid:
        raise OSError("could not drop privileges")


def _load_ctypes():
    """Import ctypes while the installation is still readable (before the drop)."""
    try:
        import ctypes

        return ctypes
    except ImportError:
        return None


def _set_parent_death_signal(ctypes) -> None:
    """Die with the parent even while the policy spins (Linux prctl).

    Must run after dropping privileges: changing credentials clears it.
    """
    if ctypes is None:
        return
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, int(signal.SIGKILL), 0, 0, 0)  # PR_SET_PDEATHSIG
        libc.prctl(38, 1, 0, 0, 0)  # PR_SET_NO_NEW_PRIVS: exec can never gain privileges
    except Exception:
        pass  # not Linux: the parent's kill on close still applies


def _is_dunder(name) -> bool:
    return isinstance(name, str) and len(name) > 4 and name.startswith("__") and name.endswith("__")


def _make_describe():
    """Build _describe with every builtin it uses bound now, so a policy that
    replaces builtins or module attributes cannot run code inside the hook."""
    type_of, repr_of, length, tuple_type = type, repr, len, tuple
    str_type, bytes_type, int_type, float_type, bool_type, none_type = str, bytes, int, float, bool, type(None)

    def describe(value, limit: int = 120) -> str:
        """repr() of plain data only: never calls methods of policy objects."""
        kind = type_of(value)
        if kind is tuple_type:
            text = "(" + ", ".join([describe(item, limit) for item in value[:4]]) + ")"
        elif (kind is str_type or kind is bytes_type or kind is int_type or kind is float_type
              or kind is bool_type or kind is none_type):
            text = repr_of(value)
        else:
            text = "<object>"
        return text if length(text) <= limit else text[: limit - 3] + "..."

    return describe


_describe = _make_describe()


class _Guard:
    """Runtime rules for policy code: restricted builtins plus an audit hook.

    The audit hook cannot be removed once installed.  Rules that depend on
    who is calling look for frames whose globals are the policy module's, so
    the interpreter, numpy and the host itself keep working normally.

    The hook keeps its state in closures and calls only C functions captured
    when it is installed: a policy that monkeypatches modules (`os.path`,
    `builtins`, this module) cannot make the hook run its code unguarded.
    """

    # Blocked whoever asks, once armed: the host needs none of these.
    ALWAYS_BLOCKED = frozenset(
        {
            "os.system", "os.exec", "os.posix_spawn", "os.spawn", "os.fork", "os.forkpty", "os.kill",
            "os.killpg", "os.putenv", "os.unsetenv", "os.remove", "os.rename", "os.rmdir", "os.mkdir",
            "os.chmod", "os.chown", "os.link", "os.symlink", "os.truncate", "os.utime", "os.chdir",
            "os.chflags", "os.lchflags", "os.setxattr", "os.removexattr", "os.listxattr", "os.getxattr",
            "os.startfile", "subprocess.Popen", "pty.spawn", "signal.pthread_kill", "sys.addaudithook",
            "sys.settrace", "sys.setprofile", "sys._current_frames", "sys._current_exceptions",
            "gc.get_objects", "gc.get_referrers", "gc.get_referents", "code.__new__", "function.__new__",
            "builtins.input", "builtins.breakpoint", "resource.setrlimit", "resource.prlimit", "mmap.__new__",
            "tempfile.mkstemp", "tempfile.mkdtemp", "webbrowser.open", "_thread.start_new_thread",
        }
    )
    ALWAYS_BLOCKED_PREFIXES = (
        "socket.", "ctypes.", "shutil.", "fcntl.", "syslog.", "urllib.", "http.", "ftplib.", "smtplib.",
        "poplib.", "imaplib.", "nntplib.", "telnetlib.", "sqlite3.", "winreg.", "_winapi.", "msvcrt.", "cpython.",
    )
    # Modules whose (first) import is blocked whoever asks, once armed.
    DENIED_MODULES = frozenset(
        {"ctypes", "_ctypes", "subprocess", "_posixsubprocess", "socket", "_socket", "multiprocessing",
         "_multiprocessing", "_posixshmem", "pty", "mmap", "fcntl", "select", "selectors", "asyncio", "_asyncio"}
    )
    # os/posix functions replaced by stubs (see patch_modules).
    UNAUDITED_OS_FUNCTIONS = ("mkfifo", "mknod", "pidfd_open", "setpriority", "sched_setaffinity",
                              "sched_setscheduler", "sched_setparam")
    # Blocked when called directly by policy code (libraries may use them).
    POLICY_CALLER_BLOCKED = frozenset({"marshal.loads", "marshal.load", "marshal.dumps",
                                       "pickle.find_class"})
    # Attributes that hand out frames (whose f_back/f_locals are not audited):
    # blocked whenever policy code is on the stack, whoever reads them.
    FRAME_ATTRIBUTES = frozenset({"gi_frame", "cr_frame", "ag_frame", "tb_frame"})
    # Code objects: blocked when read directly by policy code.
    CODE_ATTRIBUTES = frozenset({"f_code", "__code__", "gi_code", "cr_code", "ag_code"})
    # Library modules that call sys._getframe only to read the caller's
    # module name, never handing the frame out.
    FRAME_SAFE_MODULES = frozenset({"collections", "typing", "enum"})
    WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND

    def __init__(self, config: dict) -> None:
        self.allowed_imports = frozenset(config["allowed_imports"])
        self.forbidden_builtins = frozenset(config["forbidden_builtins"])
        self.forbidden_attributes = frozenset(config["forbidden_attributes"])
        self.allowed_dunder_attributes = frozenset(config["allowed_dunder_attributes"])
        self.recursion_cap = int(config.get("recursion_limit", 10_000))
        # Appended to by the hook and the stubs; read by the host after each call.
        self.violations: list[str] = []
        # ids of the globals of every live policy module (one per episode).
        self.policy_ids: set = set()
        # [True] only while the host formats a policy traceback (gc disabled).
        self.host_reading = [False]
        roots = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix, *config.get("site_dirs", [])}
        self.read_roots = tuple(
            sorted(
                {
                    _normalize(variant, "/") + "/"
                    for root in roots
                    if root
                    for variant in (os.path.abspath(root), os.path.realpath(root))
                }
            )
        )
        violations = self.violations

        def forbid(what: str):
            message = "blocked " + what
            violations.append(message)
            raise ForbiddenOperation(message)

        self.forbid = forbid

    # -- restricted builtins ---------------------------------------------------

    def make_builtins(self) -> dict:
        """The builtins the policy module sees: stubs for forbidden names,
        guarded __import__ and get/set/delattr."""
        safe = dict(builtins.__dict__)
        for key in ("__loader__", "__spec__", "__package__", "__doc__"):
            safe.pop(key, None)
        for name in self.forbidden_builtins:
            safe[name] = self._stub(name)
        forbid = self.forbid
        allowed_imports = self.allowed_imports
        forbidden_attributes = self.forbidden_attributes
        allowed_dunders = self.allowed_dunder_attributes
        real_import = builtins.__import__
        allowed_text = ", ".join(sorted(allowed_imports))

        def guarded_import(name, globals=None, locals=None, fromlist=(), level=0):
            if level:
                forbid(f"relative import of {_describe(name)}")
            if type(name) is not str or (name.split(".")[0] not in allowed_imports and name != "__future__"):
                forbid(f"import of {_describe(name)} (allowed: {allowed_text})")
            for item in fromlist or ():
                if type(item) is not str or _is_dunder(item) or item in forbidden_attributes:
                    forbid(f"import of {_describe(item)} from {_describe(name)}")
            return real_import(name, globals, locals, fromlist, level)

        def check_attribute(function: str, name) -> None:
            if type(name) is not str:
                if isinstance(name, str):
                    forbid(f"{function}() with a str subclass as attribute name")
                return  # the real builtin raises TypeError
            if (_is_dunder(name) and name not in allowed_dunders) or name in forbidden_attributes:
                forbid(f"{function}() of the attribute {name!r}")

        real_getattr, real_setattr, real_delattr = builtins.getattr, builtins.setattr, builtins.delattr

        def guarded_getattr(obj, name, *default):
            check_attribute("getattr", name)
            return real_getattr(obj, name, *default)

        def guarded_setattr(obj, name, value):
            check_attribute("setattr", name)
            return real_setattr(obj, name, value)

        def guarded_delattr(obj, name):
            check_attribute("delattr", name)
            return real_delattr(obj, name)

        safe["__import__"] = guarded_import
        safe["getattr"] = guarded_getattr
        safe["setattr"] = guarded_setattr
        safe["delattr"] = guarded_delattr
        return safe

    def _stub(self, name: str):
        forbid = self.forbid

        def forbidden(*_args, **_kwargs):
            forbid(f"use of {name}()")

        forbidden.__name__ = name
        return forbidden

    # -- process-wide patches --------------------------------------------------

    def patch_modules(self) -> None:
        """Cap the recursion limit and freeze signal handling."""
        cap = self.recursion_cap
        real_setrecursionlimit = sys.setrecursionlimit

        def capped_setrecursionlimit(limit):
            real_setrecursionlimit(min(int(limit), cap))

        sys.setrecursionlimit = capped_setrecursionlimit
        import _signal

        for module in (signal, _signal):
            for name in ("signal", "setitimer", "alarm", "pthread_sigmask", "siginterrupt", "set_wakeup_fd",
                         "sigwait", "sigwaitinfo", "sigtimedwait", "pause", "raise_signal", "pidfd_send_signal"):
                if hasattr(module, name):
                    setattr(module, name, self._stub(f"signal.{name}"))
        # os functions with no audit event of their own: they create files
        # (fifos, device nodes) or reach other processes of the same user (in
        # rlimits mode every host runs as nobody), e.g. the opponent's host.
        import posix

        for module in (os, posix):
            for name in self.UNAUDITED_OS_FUNCTIONS:
                if hasattr(module, name):
                    setattr(module, name, self._stub(f"os.{name}"))

    # -- audit hook ------------------------------------------------------------

    def install_hook(self) -> None:
        """Arm the audit hook.  From then on every rule applies to all code,
        the host's included, except where noted: the host needs nothing the
        rules forbid once the policy is loaded, and code the host runs by
        accident (a `__del__` when it drops an object, a function the policy
        made with a library's globals) must not find a gap.  Rules about *who*
        calls (exec/compile, imports, code attributes) count as policy code
        every frame whose globals are a policy module's (`policy_ids`) or not
        any loaded module's at all (code a library exec'd for the policy)."""
        # Everything the hook touches is bound here, once.
        forbid = self.forbid
        getframe = sys._getframe
        getcwd = os.getcwd
        str_type, bytes_type, int_type = str, bytes, int
        type_of = type
        describe = _describe
        normalize = _normalize
        always_blocked = self.ALWAYS_BLOCKED
        always_prefixes = self.ALWAYS_BLOCKED_PREFIXES
        policy_caller_blocked = self.POLICY_CALLER_BLOCKED
        frame_attributes = self.FRAME_ATTRIBUTES
        code_attributes = self.CODE_ATTRIBUTES
        frame_safe_modules = self.FRAME_SAFE_MODULES
        denied_modules = self.DENIED_MODULES
        allowed_imports = self.allowed_imports
        write_flags = self.WRITE_FLAGS
        read_roots = self.read_roots
        # True only while the hook itself calls sys._getframe (which raises
        # an audit event of its own); no other code can run in that window.
        in_getframe = [False]

        def frame_at(depth: int):
            in_getframe[0] = True
            try:
                return getframe(depth + 1)
            except ValueError:
                return None
            finally:
                in_getframe[0] = False

        policy_ids = self.policy_ids
        library_ids = set()
        id_of, module_type, modules = id, types.ModuleType, sys.modules
        module_dict = types.ModuleType.__dict__["__dict__"].__get__
        host_reading = self.host_reading

        def is_library(globals_id) -> bool:
            if globals_id in library_ids:
                return True
            library_ids.clear()
            for module in list(modules.values()):
                if type_of(module) is module_type:
                    library_ids.add(id_of(module_dict(module)))
            for known in policy_ids:
                library_ids.discard(known)
            return globals_id in library_ids

        def is_policy(frame) -> bool:
            if frame is None:
                return False
            globals_id = id_of(frame.f_globals)
            return globals_id in policy_ids or not is_library(globals_id)

        def policy_on_stack(frame) -> bool:
            # Unconditional once a policy module exists (see the docstring);
            # only the host's own traceback reading is let through.
            return bool(policy_ids) and not host_reading[0]

        # Modules told apart by the identity of their globals, never by a
        # lookup in a dict the policy may have filled (vars(module) is allowed).
        def module_ids(prefixes) -> frozenset:
            return frozenset(
                id_of(module_dict(module))
                for name, module in list(modules.items())
                if type_of(name) is str_type and name.split(".")[0] in prefixes and type_of(module) is module_type
            )

        importlib_ids = module_ids(("importlib", "_frozen_importlib", "_frozen_importlib_external"))
        frame_safe_ids = module_ids(frame_safe_modules)

        dataclasses_ids = module_ids(("dataclasses",))
        collections_ids = module_ids(("collections",))
        typing_ids = module_ids(("typing",))
        host_globals_id = id_of(globals())

        def library_name(frame) -> str:
            """The module a (library) frame belongs to, found by identity."""
            globals_id = -1 if frame is None else id_of(frame.f_globals)
            for name, module in list(modules.items()):
                if type_of(module) is module_type and id_of(module_dict(module)) == globals_id:
                    return describe(name)
            return "unknown code"

        def exec_site_allowed(event: str, frame) -> bool:
            """exec/compile once a policy is loaded: only the host loading a
            module, dataclasses building methods for its own callers
            (`_create_fn` called from dataclasses, not by the policy), the
            eval in collections.namedtuple (validated identifiers), the
            import system executing a module it loads, and
            typing compiling a string annotation (never evaluating one)."""
            if frame is None:
                return False
            globals_id = id_of(frame.f_globals)
            if globals_id == host_globals_id or globals_id in collections_ids:
                return True
            # A library's own call, not one the policy made: the frame that
            # called the exec'ing function belongs to the same library.
            for library in (dataclasses_ids, importlib_ids):
                if globals_id in library:
                    back = frame.f_back
                    return back is not None and id_of(back.f_globals) in library
            return event == "compile" and globals_id in typing_ids

        def import_initiator(frame):
            """The frame that asked for an import, past importlib's own frames."""
            while frame is not None:
                if id_of(frame.f_globals) not in importlib_ids:
                    return frame
                frame = frame.f_back
            return None

        def outside_roots(path) -> bool:
            kind = type_of(path)
            if kind is bytes_type:
                try:
                    path = path.decode("utf-8", "surrogateescape")
                except Exception:
                    return True
            elif kind is not str_type:
                return True
            return not (normalize(path, getcwd()) + "/").startswith(read_roots)

        # check() runs two frames below the code that raised the event
        # (check <- hook <- trigger), hence the depth 2 below.
        def check(event: str, args) -> None:
            if event == "object.__getattr__":
                name = args[1]
                if type_of(name) is not str_type:
                    if is_policy(frame_at(2)):
                        forbid("attribute access with a non-str name")
                elif name in frame_attributes:
                    if policy_on_stack(frame_at(2)):
                        forbid(f"access to the attribute {name!r}")
                elif name in code_attributes:
                    if is_policy(frame_at(2)):
                        forbid(f"access to the attribute {name!r}")
                return
            if event in always_blocked or event.startswith(always_prefixes):
                forbid(event + describe(args, 100))
            if event == "exec" or event == "compile":
                caller = frame_at(2)
                if is_policy(caller):
                    forbid(f"{event}() called by policy code")
                if policy_ids and not exec_site_allowed(event, caller):
                    forbid(f"{event}() reached through {library_name(caller)} while a policy is loaded")
                return
            if event in policy_caller_blocked:
                if is_policy(frame_at(2)):
                    forbid(f"{event}() called by policy code")
                return
            if event == "sys._getframe":
                caller = frame_at(2)
                if is_policy(caller) or (
                    (caller is None or id_of(caller.f_globals) not in frame_safe_ids) and policy_on_stack(caller)
                ):
                    forbid("sys._getframe() while policy code runs")
                return
            if event == "open":
                path, mode, flags = args
                writing = (type_of(mode) is str_type and ("w" in mode or "a" in mode or "x" in mode or "+" in mode)) or (
                    type_of(flags) is int_type and flags & write_flags
                )
                if writing:
                    forbid(f"open({describe(path)}) for writing")
                if type_of(path) is not str_type and type_of(path) is not bytes_type:
                    forbid(f"open({describe(path)}): only plain paths may be opened")
                if outside_roots(path) and policy_on_stack(frame_at(2)):
                    forbid(f"open({describe(path)}) outside the Python installation")
                return
            if event == "os.listdir" or event == "os.scandir":
                path = args[0] if args else "."
                if outside_roots("." if path is None else path) and policy_on_stack(frame_at(2)):
                    forbid(f"{event}({describe(path)})")
                return
            if event == "import":
                name = args[0]
                top = name.split(".")[0] if type_of(name) is str_type else ""
                if top in denied_modules:
                    forbid(f"import of {describe(name)}")
                if top not in allowed_imports:
                    if is_policy(import_initiator(frame_at(2))):
                        forbid(f"import of {describe(name)}")
                return

        def hook(event, args):
            if in_getframe[0] and event == "sys._getframe":
                return
            check(event, args)

        sys.addaudithook(hook)
        self._guard_import_machinery(forbid, frame_at, is_policy, import_initiator)
        self._guard_path_queries(frame_at, policy_on_stack, outside_roots)

    # os functions that tell about a path without opening it (no audit event).
    PATH_QUERIES = ("stat", "lstat", "access", "readlink", "statvfs", "pathconf")

    def _guard_path_queries(self, frame_at, policy_on_stack, outside_roots) -> None:
        """While policy code runs, paths outside the Python installation look
        missing to stat, lstat, access, readlink... (and so to os.path.exists
        and friends), as they are in bubblewrap: otherwise a policy could
        learn which files exist outside, their sizes and times, and find
        other processes in /proc.  (Opening such a path is forbidden.)
        """
        import errno
        import posix

        int_type, str_type, bytes_type, type_of, fspath = int, str, bytes, type, os.fspath
        missing = os.strerror(errno.ENOENT)
        for name in self.PATH_QUERIES:
            real = getattr(posix, name, None)
            if real is None:
                continue

            def query(path, *args, _real=real, _name=name, **kwargs):
                kind = type_of(path)
                if kind is not int_type:
                    if kind is not str_type and kind is not bytes_type:
                        path = fspath(path)  # once: the checked path is the one used
                    if (kwargs.get("dir_fd") is not None or outside_roots(path)) and policy_on_stack(frame_at(1)):
                        if _name == "access":
                            return False
                        raise FileNotFoundError(errno.ENOENT, missing, path)
                return _real(path, *args, **kwargs)

            query.__name__ = name
            for module in (os, posix):
                setattr(module, name, query)

    def _guard_import_machinery(self, forbid, frame_at, is_policy, import_initiator) -> None:
        """Apply the import rules where importlib can be entered without an
        `import` audit event.

        `_imp.create_builtin` / `_imp.create_dynamic` make module objects.
        Called directly, they would hand the policy a fresh copy of a module
        the sandbox patched (posix, _signal: the functions stubbed above
        come back) or a denied extension module.  Modules loaded before the
        policy may not be created again; denied modules never; other
        modules outside the allowlist not at the policy's request.  The
        spec goes on as a copy, so a spec whose `name` changes between two
        reads cannot swap the module after the check.
        """
        import _imp

        real_create_builtin = _imp.create_builtin
        real_create_dynamic = _imp.create_dynamic
        loaded = frozenset(sys.modules)
        denied = self.DENIED_MODULES
        allowed_imports = self.allowed_imports
        namespace = types.SimpleNamespace  # a built-in type: its attributes cannot be patched
        # Builtins bound now: the policy may replace those in the builtins module.
        str_type, type_of, describe, get, put = str, type, _describe, getattr, setattr

        def checked_name(spec) -> str:
            name = get(spec, "name", None)
            if type_of(name) is not str_type:
                forbid("creating a module from a spec whose name is not a str")
            if name in loaded:
                forbid(f"re-creating the module {describe(name)}")
            parts = name.split(".")
            for part in parts:
                if part in denied:
                    forbid(f"import of {describe(name)}")
            if parts[0] not in allowed_imports and is_policy(import_initiator(frame_at(2))):
                forbid(f"import of {describe(name)}")
            return name

        def create_builtin(spec):
            return real_create_builtin(namespace(name=checked_name(spec)))

        def create_dynamic(spec, *file):
            copy = namespace(name=checked_name(spec))
            # What extension modules read from their spec (Cython copies these).
            for attribute in ("origin", "loader", "parent", "submodule_search_locations"):
                value = get(spec, attribute, namespace)
                if value is not namespace:
                    put(copy, attribute, value)
            if type_of(get(copy, "origin", None)) is not str_type:
                forbid("creating an extension module from a spec without a str origin")
            return real_create_dynamic(copy, *file)

        _imp.create_builtin = create_builtin
        _imp.create_dynamic = create_dynamic

        # Every import, by statement or by importlib's Python entry points
        # (`_gcd_import`, `import_module`, which raise no `import` event),
        # goes through `_find_and_load`: the import rules apply there too.
        bootstrap = sys.modules["_frozen_importlib"]
        real_find_and_load = bootstrap._find_and_load
        modules = sys.modules

        def find_and_load(name, import_):
            if type_of(name) is not str_type:
                forbid("import of a module whose name is not a str")
            top = name.split(".")[0]
            if top in denied and name not in modules:
                forbid(f"import of {describe(name)}")
            if top not in allowed_imports and is_policy(import_initiator(frame_at(1))):
                forbid(f"import of {describe(name)}")
            return real_find_and_load(name, import_)

        bootstrap._find_and_load = find_and_load


def _normalize(path: str, cwd: str) -> str:
    """Absolute, normalised form of path using str methods only (no symlinks
    resolved, no module attributes a policy could have replaced)."""
    if not path.startswith("/"):
        path = cwd + "/" + path
    parts = []
    for part in path.split("/"):
        if part == "" or part == ".":
            continue
        if part == "..":
            if parts:
                parts.pop()
        else:
            parts.append(part)
    return "/" + "/".join(parts)


# -- answers: exact built-in types only ------------------------------------------
#
# Nothing a policy returns is asked anything: no __index__, __eq__, __hash__,
# __float__ or __str__ of a policy-defined class ever runs in the host.  Only
# exact int/float (and numpy's own integer/float scalar types, converted by
# numpy's C code) are read; every other type is reported by name.

_TYPE_NAME = type.__dict__["__name__"].__get__  # the real name, whatever a metaclass defines
_EXCEPTION_ARGS = BaseException.__dict__["args"].__get__
_EXCEPTION_TRACEBACK = BaseException.__dict__["__traceback__"].__get__


def _plain_str(text) -> str:
    """An exact str copy of a str (or str subclass), with no method of it called."""
    return str.__add__("", text) if issubclass(type(text), str) else "?"


def _type_name(value) -> str:
    return _plain_str(_TYPE_NAME(type(value)))


class _AnswerTypes:
    """Exact types accepted as action ids and probabilities (numpy's when loaded)."""

    def __init__(self) -> None:
        self.integers = frozenset()
        self.floats = frozenset({float})
        numpy = sys.modules.get("numpy")
        if numpy is not None:
            self.integers = frozenset(
                getattr(numpy, name) for name in
                ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "intc", "uintc",
                 "int_", "uint", "longlong", "ulonglong", "intp", "uintp")
                if type(getattr(numpy, name, None)) is type
            )
            self.floats = frozenset({float} | {getattr(numpy, name) for name in ("float16", "float32", "float64")
                                               if type(getattr(numpy, name, None)) is type})

    def action_id(self, value):
        kind = type(value)
        if kind is int:
            number = value
        elif kind in self.integers:
            number = int(value)  # numpy's own C conversion
        else:
            return {"type": _type_name(value)}
        bits = int.bit_length(number)
        if bits > _MAX_ACTION_BITS:
            return {"type": f"{bits}-bit int"}
        return number

    def probability(self, value):
        kind = type(value)
        if kind is float or kind is int:
            return float(value) if kind is float or int.bit_length(value) <= 1023 else {"type": "huge int"}
        if kind in self.floats or kind in self.integers:
            return float(value)
        return {"type": _type_name(value)}

    def encode(self, answer):
        """What act() returned as JSON that keeps its type visible: an int, or
        {"dist": [[key, probability], ...]}, or {"type": name} (malformed)."""
        kind = type(answer)
        if kind is dict:
            size = dict.__len__(answer)
            if size > _MAX_DIST_ENTRIES:
                return {"type": f"dict with {size} entries"}
            return {"dist": [[self.action_id(k), self.probability(v)] for k, v in dict.items(answer)]}
        return self.action_id(answer)


def _ignore_unraisable(_unraisable) -> None:
    """sys.unraisablehook: an error the policy's __del__ raised goes unreported."""


def _exception_text(error: BaseException) -> tuple[str, str]:
    """(type name, message) of an exception without calling its methods: the
    message is its first argument when that is an exact str (or int)."""
    name = _type_name(error)
    try:
        args = _EXCEPTION_ARGS(error)
    except BaseException:  # noqa: BLE001
        return name, ""
    if type(args) is not tuple or not args:
        return name, ""
    first = args[0]
    if type(first) is str:
        return name, first
    if type(first) is int and len(args) > 1 and type(args[1]) is str:  # OSError(errno, text)
        return name, args[1]
    if type(first) is int or type(first) is float:
        return name, repr(first)
    return name, ""


def _fingerprint(items: list) -> tuple:
    """Length and five sampled elements: O(1), catches appends, pops,
    clears and most sorts or reversals of a history list."""
    n = len(items)
    if not n:
        return (0,)
    return (n, items[0], items[n >> 2], items[n >> 1], items[(3 * n) >> 2], items[-1])


def _same_fingerprint(before: tuple, after: tuple) -> bool:
    if len(before) != len(after) or before[0] != after[0]:
        return False
    return all([b is a for b, a in zip(before[1:], after[1:])])


def _unchanged(items: list, before: tuple) -> bool:
    """`_same_fingerprint(before, _fingerprint(items))` without building the
    second tuple: runs after every act, for every history list."""
    n = len(items)
    if n != before[0]:
        return False
    return not n or (
        items[0] is before[1]
        and items[n >> 2] is before[2]
        and items[n >> 1] is before[3]
        and items[(3 * n) >> 2] is before[4]
        and items[-1] is before[5]
    )


class _Host:
    """Episode runner: a fresh module per episode, every policy call under its timer."""

    def __init__(self, channel: _Channel, config: dict, guard: _Guard, output: _OutputTail,
                 timer: _CallTimer, layers: dict) -> None:
        self.channel = channel
        self.guard = guard
        self.output = output
        self.timer = timer
        self.layers = layers
        self.filename = config["policy_filename"]
        self.game_json = json.dumps(config["game_info"])
        self.load_seconds = float(config["limits"].get("load_seconds", 10.0))
        self.instances: dict = {}
        self.modules: dict = {}  # episode id -> that episode's module globals
        self.ended_modules: list = []
        self.lists: dict = {}  # episode id -> {observation key -> reconstructed list}
        self.code = None
        self.source_lines: list = []
        self.answers = None
        self.current_seq = None
        # Freed on MemoryError so the failure can still be reported.
        self.reserve = bytearray(1 << 20)

    # -- failures --------------------------------------------------------------

    def _policy_traceback(self, error: BaseException) -> tuple[str, str]:
        """(traceback of the policy's own frames, 'line N, in f').

        Lines come from the source the host holds, never from a file: a
        policy that compiled code under another file name cannot make the
        host read that file.  Frames are read with the guard's leave (and the
        cyclic GC off, so no __del__ runs meanwhile)."""
        lines, where = [], ""
        reading = self.guard.host_reading
        enabled = gc.isenabled()
        gc.disable()
        reading[0] = True
        try:
            tb = _EXCEPTION_TRACEBACK(error)
            count = 0
            while tb is not None and count < 200:
                count += 1
                code = tb.tb_frame.f_code
                if type(code.co_filename) is str and code.co_filename == self.filename:
                    number = tb.tb_lineno
                    name = _plain_str(code.co_name)
                    lines.append(f'  File "{self.filename}", line {number}, in {name}\n')
                    if type(number) is int and 0 < number <= len(self.source_lines):
                        lines.append("    " + self.source_lines[number - 1].strip() + "\n")
                    where = f"{self.filename} line {number}, in {name}"
                tb = tb.tb_next
        except BaseException:  # noqa: BLE001 - formatting must never hide the real failure
            pass
        finally:
            reading[0] = False
            if enabled:
                gc.enable()
        name, message = _exception_text(error)
        text = ("Traceback (most recent call last):\n" + "".join(lines)) if lines else ""
        text += f"{name}: {message}\n" if message else f"{name}\n"
        return text, where

    def failure(self, seq, error: BaseException, phase: str) -> dict:
        kind = type(error)
        if issubclass(kind, MemoryError):
            self.reserve = None
        text, where = self._policy_traceback(error)
        detail = f" ({where})" if where else ""
        name, message = _exception_text(error)
        if self.guard.violations:
            category, message = "forbidden", f"{self.guard.violations[0]} in {phase}{detail}"
        elif self.timer.expired or issubclass(kind, CallTimeout):
            category, message = "timeout", f"{self.timer.message()}{detail}"
        elif issubclass(kind, ForbiddenOperation):
            category, message = "forbidden", f"{message} in {phase}{detail}"
        elif issubclass(kind, MemoryError):
            category, message = "memory", f"ran out of memory in {phase}{detail}"
        else:
            first = message.strip().splitlines()[0] if message.strip() else ""
            category, message = "crash", f"{name}{': ' + first if first else ''} in {phase}{detail}"
        return {
            "seq": seq,
            "ok": False,
            "category": category,
            "message": message,
            "traceback": text,
            "output": self.output.tail(),
        }

    def violation(self, seq, phase: str) -> dict:
        return {
            "seq": seq,
            "ok": False,
            "category": "forbidden",
            "message": f"{self.guard.violations[0]} in {phase} (the policy caught the error, but it still counts)",
            "traceback": "",
            "output": self.output.tail(),
        }

    def timed_out(self, seq, phase: str) -> dict:
        return {"seq": seq, "ok": False, "category": "timeout",
                "message": f"{self.timer.message()} (the policy caught the timeout, but it still counts)",
                "traceback": "", "output": self.output.tail()}

    def _after_call(self, seq, phase: str):
        """The failure a call left behind even though it returned, or None."""
        if self.guard.violations:
            return self.violation(seq, phase)
        if self.timer.expired:
            return self.timed_out(seq, phase)
        return None

    # -- modules ---------------------------------------------------------------

    def _new_module(self, seq, limit: float) -> dict:
        """Run the policy's module code in a fresh module (its own globals and
        builtins), under the call timer; returns its globals."""
        module = types.ModuleType("policy")
        namespace = module.__dict__
        namespace["__builtins__"] = self.guard.make_builtins()
        self.guard.policy_ids.add(id(namespace))
        # Modules such as dataclasses look the policy's module up by name.
        sys.modules["policy"] = module
        self.timer.start(seq, "module load", limit)
        try:
            exec(self.code, namespace)
        finally:
            self.timer.stop()
        return namespace

    # -- operations ------------------------------------------------------------

    def load(self, seq, source: str) -> dict:
        self.source_lines = source.splitlines()
        # The policy's own traceback formatting (traceback, warnings) finds
        # its lines here instead of opening a file.
        linecache.cache[self.filename] = (len(source), None, source.splitlines(True), self.filename)
        # An exception in __del__ (or a finaliser) would be printed with its
        # traceback by Python itself, reading files and calling the policy's
        # __str__: the host reports nothing for it instead.
        sys.unraisablehook = _ignore_unraisable
        self.guard.install_hook()
        try:
            self.code = compile(source, self.filename, "exec", dont_inherit=True)
            namespace = self._new_module(seq, self.load_seconds)
        except BaseException as error:  # noqa: BLE001 - policy code may raise anything
            return self.failure(seq, error, "module load")
        self.answers = _AnswerTypes()  # after the policy's own imports (numpy)
        failed = self._after_call(seq, "module load")
        if failed:
            return failed
        self.ended_modules.append(namespace)  # the load's module plays no episode
        if not issubclass(type(namespace.get("Policy")), type):
            return {
                "seq": seq,
                "ok": False,
                "category": "crash",
                "message": "the module does not define `class Policy`",
                "traceback": "",
                "output": self.output.tail(),
            }
        return {"seq": seq, "ok": True, "layers": self.layers}

    def new_episodes(self, seq, episodes) -> dict:
        episode = None
        timer = self.timer
        try:
            for episode, player, seed in episodes:
                game = json.loads(self.game_json)
                game["player"] = player
                game["seed"] = seed
                # One module per episode: nothing a policy keeps in its
                # globals or class attributes reaches its next episode.
                namespace = self._new_module(seq, self.load_seconds)
                timer.start(seq, f"Policy.__init__ (episode {episode})")
                try:
                    self.instances[episode] = namespace.get("Policy")(player, game)
                finally:
                    timer.stop()
                self.modules[episode] = namespace
                self.lists[episode] = {}
        except BaseException as error:  # noqa: BLE001
            return self.failure(seq, error, f"Policy.__init__ (episode {episode})")
        return self._after_call(seq, f"Policy.__init__ (episode {episode})") or {"seq": seq, "ok": True}

    def _reconstruct(self, episode, obs: dict, deltas: dict) -> list:
        """Put the full lists into obs from the appended suffixes.

        The policy gets the reconstructed list itself (copying would make
        each move cost grow with the history).  Returns fingerprints to
        check afterwards whether the policy changed it in place.
        """
        old = self.lists.get(episode, {})
        kept = {}
        fingerprints = []
        for key, (start, suffix) in deltas.items():
            if start:
                full = old.get(key)
                if full is None or len(full) != start:
                    raise _ProtocolError(f"list {key!r} of episode {episode} is out of step")
                full.extend(suffix)
            else:
                full = suffix
            kept[key] = full
            obs[key] = full
            # _fingerprint(full), inlined: this runs for every list of every request.
            n = len(full)
            fingerprint = (n, full[0], full[n >> 2], full[n >> 1], full[(3 * n) >> 2], full[-1]) if n else (0,)
            fingerprints.append((key, full, fingerprint))
        self.lists[episode] = kept
        return fingerprints

    def act(self, seq, requests) -> dict:
        answers = []
        resync = []
        instances = self.instances
        encode = self.answers.encode
        timer = self.timer
        episode = None
        for episode, obs, deltas in requests:
            instance = instances.get(episode)
            if instance is None:
                raise _ProtocolError(f"act for unknown episode {episode}")
            fingerprints = None
            if deltas:
                fingerprints = self._reconstruct(episode, obs, deltas)
            elif self.lists.get(episode):
                self.lists[episode] = {}
            try:
                timer.start(seq, f"act (episode {episode})")
                try:
                    answer = instance.act(obs)
                finally:
                    timer.stop()
                # The common answer, a plain int that fits 63 bits (literal
                # bounds: nothing a policy could rebind), skips encode.
                if type(answer) is not int or not -0x8000000000000000 < answer < 0x8000000000000000:
                    answer = encode(answer)
                answers.append(answer)
            except BaseException as error:  # noqa: BLE001 - policy code may raise anything
                return self.failure(seq, error, f"act (episode {episode})")
            if timer.expired:
                return self.timed_out(seq, f"act (episode {episode})")
            if fingerprints:
                for key, full, fingerprint in fingerprints:
                    if not _unchanged(full, fingerprint):
                        # The policy changed its list: forget it and have the
                        # parent send it whole next time.
                        del self.lists[episode][key]
                        resync.append([episode, key])
        if self.guard.violations:
            return self.violation(seq, f"act (episode {episode})")
        reply = {"seq": seq, "ok": True, "answers": answers}
        if resync:
            reply["resync"] = resync
        return reply

    def end_episodes(self, seq, episode_ids) -> dict:
        timer = self.timer
        try:
            for episode in episode_ids:
                timer.start(seq, f"end of episode {episode}")
                try:
                    # Dropping the instance may run its __del__: under the timer and the guard.
                    self.instances.pop(episode, None)
                    namespace = self.modules.pop(episode, None)
                    if namespace is not None:
                        # Emptied, but kept: its id stays a policy's (never
                        # reused by a library's dict) at ~100 bytes an episode.
                        self.ended_modules.append(namespace)
                        dict.clear(namespace)
                finally:
                    timer.stop()
                self.lists.pop(episode, None)
        except BaseException as error:  # noqa: BLE001 - __del__ in policy code
            return self.failure(seq, error, "end of episode")
        return self._after_call(seq, "end of episode") or {"seq": seq, "ok": True}

    def serve(self) -> None:
        while True:
            message = self.channel.receive()
            if message is None:
                return  # the parent closed the channel
            seq = self.current_seq = message.get("seq")
            op = message.get("op")
            try:
                if op == "act":
                    reply = self.act(seq, message["reqs"])
                elif op == "new":
                    reply = self.new_episodes(seq, message["eps"])
                elif op == "end":
                    reply = self.end_episodes(seq, message["ids"])
                else:
                    raise _ProtocolError(f"unknown operation {op!r}")
            except (_ProtocolError, ValueError, KeyError, TypeError) as error:
                reply = {"seq": seq, "ok": False, "category": "crash",
                         "message": f"sandbox protocol error: {type(error).__name__}: {error}",
                         "traceback": "", "output": ""}
            self.channel.send(reply)
            if not reply["ok"]:
                os._exit(_EXIT_AFTER_FAILURE)


def main() -> None:
    # Move the protocol off fds 0/1 at once; 0 and 1 become /dev/null, 2 stays
    # the crash log the parent reads if the interpreter itself dies.
    in_fd, out_fd = os.dup(0), os.dup(1)
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    os.dup2(devnull, 1)
    os.close(devnull)
    channel = _Channel(in_fd, out_fd)
    config = channel.receive()
    if config is None:
        return
    seq = config.get("seq")
    try:
        sys.path.extend(config.get("site_dirs", []))
        _apply_limits(config["limits"])
        for name in config.get("preimport", []):
            try:
                __import__(name)
            except Exception:
                pass  # the policy's own import reports the problem
        if config["limits"].get("max_processes"):
            _set_limit(resource.RLIMIT_NPROC, int(config["limits"]["max_processes"]))
        ctypes = _load_ctypes()
        drop = config.get("drop_to")
        if drop and os.geteuid() == 0:
            _drop_privileges(int(drop[0]), int(drop[1]))
        _set_parent_death_signal(ctypes)
        del ctypes
        output = _OutputTail(int(config.get("output_tail_chars", 2000)))
        sys.stdout = sys.stderr = output
        guard = _Guard(config)
        timer = _CallTimer(channel, float(config["limits"].get("call_seconds", 1.0)),
                           float(config["limits"].get("call_grace_seconds", 2.0)))
        timer.install()  # before patch_modules stubs signal.signal
        guard.patch_modules()
        layers = _apply_kernel_layers(config.get("kernel", {}), guard)
        host = _Host(channel, config, guard, output, timer, layers)
    except Exception as error:  # the host could not even be set up
        channel.send({"seq": seq, "ok": False, "category": "crash",
                      "message": f"sandbox setup failed: {type(error).__name__}: {error}",
                      "traceback": traceback.format_exc(), "output": ""})
        os._exit(_EXIT_AFTER_FAILURE)
    reply = host.load(seq, config["source"])
    channel.send(reply)
    if not reply["ok"]:
        os._exit(_EXIT_AFTER_FAILURE)
    try:
        host.serve()
    except BaseException as error:  # noqa: BLE001 - e.g. the policy broke builtins the host relies on
        _last_words(channel, host, guard, error)


def _apply_kernel_layers(wanted: dict, guard: "_Guard") -> dict:
    """Landlock and seccomp (host_kernel.py), as the parent asked; a layer the
    parent asked for and the kernel refused is fatal (the parent checked the
    kernel offers it, so refusing means something is wrong)."""
    applied = {"landlock": 0, "seccomp": 0}
    if wanted.get("seccomp"):
        host_kernel._load_libseccomp()  # while /usr/lib is still readable
    if wanted.get("landlock"):
        roots = [root.rstrip("/") or "/" for root in guard.read_roots]
        applied["landlock"] = host_kernel.restrict_filesystem_and_network(roots)
    if wanted.get("seccomp"):
        applied["seccomp"] = host_kernel.install_syscall_filter((signal.SIGALRM, signal.SIGPROF))
    return applied


def _last_words(channel: _Channel, host: "_Host", guard: _Guard, error: BaseException) -> None:
    """Report a failure of the host's own code as plainly as possible, then exit."""
    # No traceback.format_exc(): it would call the policy's exception methods
    # and read whatever files its frames name.
    name, _message = _exception_text(error)
    try:
        os.write(2, ("host failure: " + name + "\n").encode("utf-8", "replace"))
    except BaseException:  # noqa: BLE001
        pass
    if guard.violations:
        category, message = "forbidden", guard.violations[0] + " (the host could not continue)"
    else:
        category, message = "crash", "the host failed while serving the policy: " + name
    try:
        channel.send({"seq": host.current_seq, "ok": False, "category": category, "message": message,
                      "traceback": "", "output": ""})
    finally:
        os._exit(_EXIT_AFTER_FAILURE)


if __name__ == "__main__":
    main()
