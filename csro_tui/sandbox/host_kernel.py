"""Policy host, isolation layer: the kernel-enforced boundary (Landlock + seccomp).

STDLIB ONLY (imported by `host_main.py` inside the sandbox, and by the
parent to probe what the kernel offers).  Applied by the host in the first
part of its set-up (its own imports done, no-new-privs set; root is dropped
in the second part, which seccomp and Landlock both allow), before any
policy code exists, so everything below holds even if the Python-level
guard is defeated (a CPython bug, a gadget we missed):

- Landlock (`restrict_filesystem_and_network`): the process may read only
  the directories it names (the Python installation, the directories of
  the shared libraries already mapped) and write nothing at all; TCP bind
  and connect are denied (ABI >= 4); signals to processes outside the
  domain and abstract unix sockets are scoped (ABI >= 6).
- seccomp (`install_syscall_filter`): an allow-list of the calls a host
  makes (ALLOWED_SYSCALLS and `_argument_rules`, each with its reason);
  everything else fails with EPERM and, on x86-64, is recorded by SIGSYS's
  handler so the host names it (`install_refusal_reporting`).  Once the
  modules a policy may use are loaded, `forbid_executable_memory` stacks a
  second filter: no new executable mappings.  So: no exec, no processes or
  threads, no sockets, no reaching into other processes (signals, limits,
  scheduling, memory), no handler changes, and the parent-death signal
  stays SIGKILL.

Why ctypes: host_main.py is stdlib-only by contract (it runs with -S, before
and outside the application's virtualenv packages), so a PyPI binding is not
importable there.  For seccomp we call libseccomp (Debian's libseccomp2,
present wherever apt is), the maintained library that resolves syscall
numbers per architecture and compiles the BPF program, rather than writing
BPF by hand.  Landlock has no libc wrapper and its Python bindings are young
single-maintainer projects; its interface is three syscalls with two plain
structs, called directly here.
"""

import ctypes
import errno
import os
import resource
import signal

# Syscall numbers of Landlock: the same on every architecture (>= 424 are unified).
_SYS_LANDLOCK_CREATE_RULESET = 444
_SYS_LANDLOCK_ADD_RULE = 445
_SYS_LANDLOCK_RESTRICT_SELF = 446
_LANDLOCK_CREATE_RULESET_VERSION = 1
_LANDLOCK_RULE_PATH_BENEATH = 1

_FS_EXECUTE = 1 << 0
_FS_WRITE_FILE = 1 << 1
_FS_READ_FILE = 1 << 2
_FS_READ_DIR = 1 << 3
# Every filesystem right of each ABI version (index = ABI).
_FS_RIGHTS_BY_ABI = {1: (1 << 13) - 1, 2: (1 << 14) - 1, 3: (1 << 15) - 1, 4: (1 << 15) - 1}
_FS_RIGHTS_LATEST = (1 << 16) - 1  # ABI >= 5 adds IOCTL_DEV
_FILE_ONLY_RIGHTS = _FS_EXECUTE | _FS_WRITE_FILE | _FS_READ_FILE | (1 << 14) | (1 << 15)
_NET_BIND_TCP = 1 << 0
_NET_CONNECT_TCP = 1 << 1
_SCOPE_ABSTRACT_UNIX_SOCKET = 1 << 0
_SCOPE_SIGNAL = 1 << 1


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64), ("handled_access_net", ctypes.c_uint64),
                ("scoped", ctypes.c_uint64)]


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


_libc = None


def _c_library():
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(None, use_errno=True)
        _libc.syscall.restype = ctypes.c_long
    return _libc


def landlock_abi() -> int:
    """The Landlock ABI version the kernel offers, 0 if none (not built, disabled, not Linux)."""
    try:
        libc = _c_library()
        version = libc.syscall(ctypes.c_long(_SYS_LANDLOCK_CREATE_RULESET), None, ctypes.c_size_t(0),
                               ctypes.c_uint32(_LANDLOCK_CREATE_RULESET_VERSION))
    except (OSError, AttributeError):
        return 0
    return int(version) if version > 0 else 0


_libseccomp = []


def _load_libseccomp():
    """libseccomp, loaded once (by soname: ctypes.util.find_library would run
    gcc/ldconfig); the host loads it before Landlock hides /usr/lib."""
    if _libseccomp:
        return _libseccomp[0]
    try:
        library = ctypes.CDLL("libseccomp.so.2", use_errno=True)
    except OSError:
        return None
    library.seccomp_init.restype = ctypes.c_void_p
    library.seccomp_init.argtypes = [ctypes.c_uint32]
    library.seccomp_syscall_resolve_name.restype = ctypes.c_int
    library.seccomp_syscall_resolve_name.argtypes = [ctypes.c_char_p]
    library.seccomp_rule_add_array.restype = ctypes.c_int
    library.seccomp_rule_add_array.argtypes = [ctypes.c_void_p, ctypes.c_uint32, ctypes.c_int, ctypes.c_uint,
                                               ctypes.c_void_p]
    library.seccomp_load.restype = ctypes.c_int
    library.seccomp_load.argtypes = [ctypes.c_void_p]
    library.seccomp_release.argtypes = [ctypes.c_void_p]
    library.seccomp_syscall_priority.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint8]
    _libseccomp.append(library)
    return library


def seccomp_available() -> bool:
    """libseccomp loads and the kernel has seccomp filtering."""
    if _load_libseccomp() is None:
        return False
    try:
        libc = _c_library()
        return libc.prctl(21, 0, 0, 0, 0) >= 0  # PR_GET_SECCOMP: fails with EINVAL without seccomp
    except (OSError, AttributeError):
        return False


def kernel_layers() -> dict:
    """What the kernel offers here: {"landlock": ABI or 0, "seccomp": bool}."""
    return {"landlock": landlock_abi(), "seccomp": seccomp_available()}


# -- Landlock -------------------------------------------------------------------


def _mapped_library_dirs() -> set:
    """Directories of the shared objects this process has mapped: what a lazy
    import (numpy's submodules) may still need to open."""
    dirs = set()
    try:
        with open("/proc/self/maps") as maps:
            for line in maps:
                fields = line.split(None, 5)
                if len(fields) == 6 and fields[5].startswith("/"):
                    path = fields[5].strip()
                    if ".so" in os.path.basename(path):
                        dirs.add(os.path.dirname(path))
    except OSError:
        pass
    return dirs


def restrict_filesystem_and_network(read_dirs, read_files=()) -> int:
    """Apply Landlock to this process for good; returns the ABI used.

    Reading is allowed beneath `read_dirs` (plus the mapped libraries'
    directories) and of `read_files`; nothing may be written, created,
    removed or renamed anywhere; TCP bind/connect and (ABI >= 6) signals
    out of the domain and abstract unix sockets are denied.  Raises OSError
    if the kernel refuses (the caller decides whether that is fatal).
    """
    abi = landlock_abi()
    if abi < 1:
        raise OSError(errno.ENOSYS, "Landlock is not available in this kernel")
    libc = _c_library()
    attr = _RulesetAttr(_FS_RIGHTS_BY_ABI.get(abi, _FS_RIGHTS_LATEST), 0, 0)
    size = 8
    if abi >= 4:
        attr.handled_access_net = _NET_BIND_TCP | _NET_CONNECT_TCP
        size = 16
    if abi >= 6:
        attr.scoped = _SCOPE_ABSTRACT_UNIX_SOCKET | _SCOPE_SIGNAL
        size = 24
    ruleset = libc.syscall(ctypes.c_long(_SYS_LANDLOCK_CREATE_RULESET), ctypes.byref(attr), ctypes.c_size_t(size),
                           ctypes.c_uint32(0))
    if ruleset < 0:
        code = ctypes.get_errno()
        raise OSError(code, f"landlock_create_ruleset: {os.strerror(code)}")
    try:
        targets = [(path, _FS_READ_FILE | _FS_READ_DIR) for path in sorted(set(read_dirs) | _mapped_library_dirs())]
        targets += [(path, _FS_READ_FILE) for path in read_files]
        for path, rights in targets:
            try:
                fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
            except OSError:
                continue  # a path that does not exist needs no rule
            try:
                if not os.path.isdir(path):
                    rights &= _FILE_ONLY_RIGHTS
                rule = _PathBeneathAttr(rights, fd)
                if libc.syscall(ctypes.c_long(_SYS_LANDLOCK_ADD_RULE), ctypes.c_int(ruleset),
                                ctypes.c_int(_LANDLOCK_RULE_PATH_BENEATH), ctypes.byref(rule),
                                ctypes.c_uint32(0)) < 0:
                    code = ctypes.get_errno()
                    raise OSError(code, f"landlock_add_rule({path}): {os.strerror(code)}")
            finally:
                os.close(fd)
        if libc.syscall(ctypes.c_long(_SYS_LANDLOCK_RESTRICT_SELF), ctypes.c_int(ruleset), ctypes.c_uint32(0)) < 0:
            code = ctypes.get_errno()
            raise OSError(code, f"landlock_restrict_self: {os.strerror(code)}")
    finally:
        os.close(ruleset)
    return abi


# -- seccomp --------------------------------------------------------------------
#
# An allow-list: every other system call fails with EPERM.  Measured with
# scripts/host_syscalls.py (strace on hosts playing policies that use every
# allowed module, numpy's submodules included, and fail in every way: time
# out, run out of memory, crash, recurse) on CPython 3.11.7 and numpy 2.4.6,
# Debian glibc, in both modes; calls not seen there but made by the same code
# in other set-ups or by a policy's own harmless use are marked "not
# measured here".  The reason for
# each is its value.  Calls that are only safe in one form are in
# _argument_rules instead.

_SCMP_ACT_ALLOW = 0x7FFF0000
_SCMP_ACT_TRAP = 0x00030000
_SCMP_CMP_NE = 1
_SCMP_CMP_EQ = 4
_SCMP_CMP_MASKED_EQ = 7


class _ArgCmp(ctypes.Structure):
    _fields_ = [("arg", ctypes.c_uint), ("op", ctypes.c_int), ("datum_a", ctypes.c_uint64),
                ("datum_b", ctypes.c_uint64)]


_PR_SET_PDEATHSIG = 1

ALLOWED_SYSCALLS = {
    # the channel, the log, and the files the import system reads (Landlock decides which)
    "read": "the request channel; files being imported",
    "write": "the reply channel; the log on fd 2",
    "close": "files the import system opened",
    "lseek": "the import system and dlopen reading files",
    "pread64": "dlopen reading an extension module's headers",
    "newfstatat": "the import system's stat of paths and open files",
    "fstat": "glibc's fstat of an open file",
    "getdents64": "the import system listing a directory on sys.path",
    "getcwd": "the guard resolving a relative path a policy names (not measured here)",
    # memory (its own only; executable mappings: see forbid_executable_memory)
    "brk": "malloc",
    "mmap": "malloc of large blocks, numpy arrays, dlopen of extension modules",
    "mprotect": "dlopen (relocations), glibc's malloc arenas",
    "munmap": "free of large blocks",
    "mremap": "realloc of large blocks (not measured here)",
    "madvise": "glibc's malloc trimming, numpy's huge pages",
    "mbind": "OpenBLAS placing its buffers",
    # time, signals, exit
    "futex": "locks (the GIL's, OpenBLAS's); there is no other thread",
    "setitimer": "the per-call timers",
    "rt_sigreturn": "return from a signal handler (the timers', SIGSYS's)",
    "restart_syscall": "a call interrupted by a timer signal resumes (not measured here)",
    "clock_gettime": "time.monotonic when the vDSO is unavailable (not measured here)",
    "clock_getres": "the same (not measured here)",
    "gettimeofday": "the same (not measured here)",
    "getrandom": "seeding random and numpy's generators",
    "clock_nanosleep": "time.sleep: a policy's sleep costs only its own time limit (not measured here)",
    "nanosleep": "the same, older glibc (not measured here)",
    "exit_group": "the host ends",
    "exit": "the same, from a thread library's path (not measured here)",
    # read-only facts about itself
    "getpid": "os.getpid, glibc's raise (not measured here)",
    "getppid": "the parent check after (re)arming the parent-death signal",
    "gettid": "glibc, numpy",
    "getuid": "the drop to the host uid, os.path.expanduser",
    "geteuid": "the same",
    "getgid": "the same",
    "getegid": "the same (not measured here)",
    "uname": "numpy and platform at import",
    "getpgid": "os.getpgid: a read-only query (signals to a group are refused)",
    "getpgrp": "the same, of its own group",
    "getrusage": "its own peak memory (RUSAGE_SELF: the memory failure says what each live episode held)",
    # a filter can only add restrictions: the executable-memory one comes after the imports
    "seccomp": "forbid_executable_memory stacks a second filter",
}
# Made at every request, most frequent first: tested first by the filter.
_HOT_SYSCALLS = ("read", "write", "setitimer", "rt_sigreturn", "futex")
# Allowed only in the form given: (syscall, [(argument index, op, value[, mask])], reason).
# Refused: every way to write (O_TMPFILE is 0o20000000), and O_PATH, which
# Landlock does not check (it needs no access right): a descriptor of any
# file, whose fstat gives its metadata.
_REFUSED_OPEN_FLAGS = (os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND | 0o20000000
                       | os.O_PATH)
_TCGETS = 0x5401
_PR_SET_NO_NEW_PRIVS = 38


def _comparison(index: int, op: int, value: int, mask: int = 0) -> "_ArgCmp":
    """libseccomp's comparison of argument `index`; MASKED_EQ compares value
    with the argument & mask (libseccomp takes the mask first)."""
    if op == _SCMP_CMP_MASKED_EQ:
        return _ArgCmp(index, op, mask, value)
    return _ArgCmp(index, op, value, 0)


def _argument_rules(me: int, drop_to) -> list:
    rules = [
        ("openat", [(2, _SCMP_CMP_MASKED_EQ, 0, _REFUSED_OPEN_FLAGS)],
         "reading only, not O_PATH (Landlock says where)"),
        ("ioctl", [(1, _SCMP_CMP_EQ, _TCGETS)], "isatty() of every file open() opens"),
        ("prlimit64", [(0, _SCMP_CMP_EQ, 0)], "its own limits (glibc's getrlimit/setrlimit), never another's"),
        ("sched_getaffinity", [(0, _SCMP_CMP_EQ, 0)], "OpenBLAS and os.cpu_count, of itself"),
        ("prctl", [(0, _SCMP_CMP_EQ, _PR_SET_PDEATHSIG), (1, _SCMP_CMP_EQ, int(signal.SIGKILL))],
         "re-arming the parent-death signal after the drop; never another value"),
        ("prctl", [(0, _SCMP_CMP_EQ, _PR_SET_NO_NEW_PRIVS), (1, _SCMP_CMP_EQ, 1)], "set again with it"),
        ("kill", [(0, _SCMP_CMP_EQ, me)], "signals to itself only: abort, raise (not measured here)"),
        ("tgkill", [(0, _SCMP_CMP_EQ, me)], "the same"),
        ("tkill", [(0, _SCMP_CMP_EQ, me)], "the same (its only thread has its pid)"),
    ]
    if drop_to is not None:
        uid, gid = int(drop_to[0]), int(drop_to[1])
        rules += [
            ("setresuid", [(0, _SCMP_CMP_EQ, uid), (1, _SCMP_CMP_EQ, uid), (2, _SCMP_CMP_EQ, uid)],
             "the one drop from root to the host's uid"),
            ("setresgid", [(0, _SCMP_CMP_EQ, gid), (1, _SCMP_CMP_EQ, gid), (2, _SCMP_CMP_EQ, gid)], "the same"),
            ("setgroups", [(0, _SCMP_CMP_EQ, 0)], "the same: no supplementary groups"),
        ]
    return rules


# How a refused call is answered (x86-64): SIGSYS's handler records the
# call's number and makes it return -EPERM.  Machine code, because the
# handler must set the interrupted call's return register, which no Python
# handler can; written once into a page that is then made read+execute.
#   mov eax, [rsi+24]           siginfo->si_syscall
#   movabs rcx, <slot>
#   mov [rcx], eax              slot[0]: the last refused call
#   lock inc dword [rcx+4]      slot[1]: how many
#   mov qword [rdx+144], -1     ucontext->uc_mcontext.gregs[REG_RAX] = -EPERM
#   ret
_SIGSYS_HANDLER_X86_64 = (bytes.fromhex("8b4618" "48b9"), bytes.fromhex("8901" "f0ff4104" "48c78290000000ffffffff" "c3"))


class _Refusals:
    """What the SIGSYS handler recorded: read by the host after each request."""

    def __init__(self, slot) -> None:
        self._slot = slot  # made before the guard is armed: reading it raises no audit event
        self.reported = 0

    def new(self):
        """The number of the last call refused since the last look, or None
        (the parent names it: syscall_name)."""
        count = self._slot[1]
        if count == self.reported:
            return None
        self.reported = count
        return int(self._slot[0])


refusals = None  # a _Refusals once install_refusal_reporting has run


class _SigAction(ctypes.Structure):
    _fields_ = [("handler", ctypes.c_void_p), ("mask", ctypes.c_uint64 * 16), ("flags", ctypes.c_int),
                ("restorer", ctypes.c_void_p)]


def install_refusal_reporting() -> bool:
    """Install the SIGSYS handler (x86-64 Linux only; elsewhere refused calls
    still fail with EPERM, unreported).  Before the filter and the guard."""
    global refusals
    library = _load_libseccomp()
    if library is None or os.uname().machine != "x86_64" or ctypes.sizeof(ctypes.c_void_p) != 8:
        return False
    libc = _c_library()
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
    libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    slot = (ctypes.c_uint32 * 2)()
    head, tail = _SIGSYS_HANDLER_X86_64
    code = head + ctypes.addressof(slot).to_bytes(8, "little") + tail
    page = libc.mmap(None, 4096, 3, 0x22, -1, 0)  # PROT_READ|PROT_WRITE, MAP_PRIVATE|MAP_ANONYMOUS
    if page in (None, ctypes.c_void_p(-1).value):
        return False
    ctypes.memmove(page, code, len(code))
    # PROT_READ|PROT_EXEC.  A policy that owns the process may make it
    # writable again, which drops the execute right (the filter refuses
    # PROT_EXEC from then on): its next refused call then ends the host.
    if libc.mprotect(page, 4096, 5) != 0:
        return False
    action = _SigAction(page, (ctypes.c_uint64 * 16)(), 4, None)  # SA_SIGINFO
    if libc.sigaction(int(signal.SIGSYS), ctypes.byref(action), None) != 0:
        return False
    refusals = _Refusals(slot)
    return True


def syscall_name(number: int) -> str:
    """The name of system call `number` on this architecture (the parent's
    side: the host reports numbers, since it may make no ctypes call once
    the guard is armed)."""
    library = _load_libseccomp()
    if library is not None:
        library.seccomp_syscall_resolve_num_arch.restype = ctypes.c_void_p  # malloc'd
        library.seccomp_syscall_resolve_num_arch.argtypes = [ctypes.c_uint32, ctypes.c_int]
        pointer = library.seccomp_syscall_resolve_num_arch(0, int(number))
        if pointer:
            try:
                return ctypes.string_at(pointer).decode("ascii", "replace")
            finally:
                _c_library().free(ctypes.c_void_p(pointer))
    return f"#{number}"


def install_syscall_filter(frozen_signals=(), drop_to=None) -> int:
    """Load the allow-list for good; returns how many rules it has.

    Every call not in ALLOWED_SYSCALLS or allowed by _argument_rules fails
    with EPERM: through SIGSYS's handler, which records it, where
    install_refusal_reporting has run; as a plain errno otherwise.
    `drop_to`: (uid, gid) the host will drop to (as root), the only
    credentials setresuid/setresgid may set; None: no credential changes.
    `frozen_signals` is kept for callers: no signal handler can be changed
    any more (rt_sigaction is not allowed at all).
    Raises OSError if libseccomp is missing or refuses.
    """
    library = _load_libseccomp()
    if library is None:
        raise OSError(errno.ENOSYS, "libseccomp is not installed")
    refused = _SCMP_ACT_TRAP if refusals is not None else _scmp_act_errno(errno.EPERM)
    context = library.seccomp_init(refused)
    if not context:
        raise OSError(errno.EINVAL, "seccomp_init failed")
    rules = 0
    try:
        def allow(name: str, comparisons=()) -> None:
            nonlocal rules
            number = library.seccomp_syscall_resolve_name(name.encode())
            if number < 0:
                return  # not on this architecture
            array = (_ArgCmp * max(len(comparisons), 1))(*[_comparison(*entry) for entry in comparisons])
            result = library.seccomp_rule_add_array(context, _SCMP_ACT_ALLOW, number, len(comparisons), array)
            if result < 0:
                raise OSError(-result, f"seccomp_rule_add({name}): {os.strerror(-result)}")
            rules += 1

        for name in ALLOWED_SYSCALLS:
            allow(name)
        for name, comparisons, _reason in _argument_rules(os.getpid(), drop_to):
            allow(name, comparisons)
        # The calls of every request (the channel, the timers) are checked first.
        if hasattr(library, "seccomp_syscall_priority"):
            for priority, name in enumerate(reversed(_HOT_SYSCALLS), 250):
                number = library.seccomp_syscall_resolve_name(name.encode())
                if number >= 0:
                    library.seccomp_syscall_priority(context, number, priority)
        result = library.seccomp_load(context)
        if result < 0:
            raise OSError(-result, f"seccomp_load: {os.strerror(-result)}")
    finally:
        library.seccomp_release(context)
    return rules


_PROT_EXEC = 4


def forbid_executable_memory() -> None:
    """Stack a second filter: no new executable mapping (mmap, mprotect,
    pkey_mprotect with PROT_EXEC).  Called once start-up has loaded every
    extension module a policy may use; from then on native code can only
    run from what is already mapped.  Refused like the allow-list's calls."""
    library = _load_libseccomp()
    if library is None:
        raise OSError(errno.ENOSYS, "libseccomp is not installed")
    context = library.seccomp_init(_SCMP_ACT_ALLOW)
    if not context:
        raise OSError(errno.EINVAL, "seccomp_init failed")
    refused = _SCMP_ACT_TRAP if refusals is not None else _scmp_act_errno(errno.EPERM)
    try:
        for name in ("mmap", "mprotect", "pkey_mprotect"):
            number = library.seccomp_syscall_resolve_name(name.encode())
            if number < 0:
                continue
            rule = (_ArgCmp * 1)(_comparison(2, _SCMP_CMP_MASKED_EQ, _PROT_EXEC, _PROT_EXEC))
            result = library.seccomp_rule_add_array(context, refused, number, 1, rule)
            if result < 0:
                raise OSError(-result, f"seccomp_rule_add({name}): {os.strerror(-result)}")
        result = library.seccomp_load(context)
        if result < 0:
            raise OSError(-result, f"seccomp_load: {os.strerror(-result)}")
    finally:
        library.seccomp_release(context)


def _scmp_act_errno(code: int) -> int:
    return 0x00050000 | (code & 0xFFFF)


# -- resource limits and privileges (applied first) ------------------------------


def set_limit(which: int, value) -> None:
    """Set soft and hard limit to `value` (never above an existing hard limit)."""
    if value is None:
        return
    _soft, hard = resource.getrlimit(which)
    if hard != resource.RLIM_INFINITY:
        value = min(value, hard)
    resource.setrlimit(which, (value, value))


def apply_limits(limits: dict) -> None:
    set_limit(resource.RLIMIT_CORE, 0)
    if limits.get("memory_bytes"):
        set_limit(resource.RLIMIT_AS, int(limits["memory_bytes"]))
    if limits.get("cpu_seconds"):
        cpu = int(limits["cpu_seconds"])
        _soft, hard = resource.getrlimit(resource.RLIMIT_CPU)
        # SIGXCPU at the soft limit ends the process; the hard limit (SIGKILL)
        # one second later is only a backstop.
        new_hard = cpu + 1 if hard == resource.RLIM_INFINITY else min(cpu + 1, hard)
        resource.setrlimit(resource.RLIMIT_CPU, (min(cpu, new_hard), new_hard))
    if limits.get("max_file_bytes") is not None:
        set_limit(resource.RLIMIT_FSIZE, int(limits["max_file_bytes"]))
    if limits.get("max_open_files"):
        set_limit(resource.RLIMIT_NOFILE, int(limits["max_open_files"]))


def drop_privileges(uid: int, gid: int) -> None:
    """As root, become uid/gid for good, so RLIMIT_NPROC and file permissions apply."""
    os.setgroups([])
    os.setresgid(gid, gid, gid)
    os.setresuid(uid, uid, uid)
    if os.getuid() != uid or os.geteuid() != uid or os.getgid() != gid:
        raise OSError("could not drop privileges")


def load_ctypes():
    """Import ctypes while the installation is still readable (before the drop)."""
    try:
        import ctypes

        return ctypes
    except ImportError:
        return None


def set_parent_death_signal(ctypes, parent: int) -> None:
    """Die with the parent even while the policy spins (Linux prctl).

    Set again after dropping privileges: changing credentials clears it.
    seccomp then refuses any other value, so it holds whatever the policy
    does.  `parent`: the parent's pid when the host started; if the parent
    died before the signal was (re)armed, the host was re-parented and ends
    itself now, as the signal would have.
    """
    if ctypes is None:
        return
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
        libc.prctl(38, 1, 0, 0, 0)  # PR_SET_NO_NEW_PRIVS: exec can never gain privileges
    except Exception:
        pass  # not Linux: the parent's kill on close still applies
    if os.getppid() != parent:
        os._exit(EXIT_ORPHANED)


EXIT_ORPHANED = 4  # the parent died before the parent-death signal was armed
