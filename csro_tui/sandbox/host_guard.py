"""Policy host, guard layer: the runtime rules for policy code (restricted
builtins, an audit hook that cannot be removed, stubs and patches).

STDLIB ONLY; imported by host_main.py from its own directory (also inside
bubblewrap).  Defence in depth: the kernel layers (host_kernel.py) hold
even if this layer is defeated.
"""

import builtins
import sys

# Every builtin bound here, now: a policy that replaces `type` or `repr` in
# the builtins module must not make this module's code run its functions.
globals().update({name: value for name, value in vars(builtins).items() if not name.startswith("__")})

import os  # noqa: E402
import signal  # noqa: E402
import types  # noqa: E402


class ForbiddenOperation(BaseException):
    """Raised into policy code for a blocked operation.

    A BaseException, so `except Exception:` in the policy does not swallow
    it; the violation is also recorded, so it is reported even if it is.
    """


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

    def install_hook(self, host_globals: dict) -> None:
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
        host_globals_id = id_of(host_globals)  # the episode runner's: it execs each episode's module

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
