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
- seccomp (`install_syscall_filter`): no execve/execveat, no new processes
  or threads, no socket creation (the channel to the referee is a pair of
  inherited pipes), no ptrace/process_vm_*/pidfd/kcmp, signals only to
  itself, and none of the syscalls that reach beyond the process (mount,
  namespaces, io_uring, bpf, keyrings, modules, ...).  The host may no
  longer change the handlers of its own timer signals.

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

_SCMP_ACT_ALLOW = 0x7FFF0000
_SCMP_CMP_NE = 1
_SCMP_CMP_EQ = 4


def _scmp_act_errno(code: int) -> int:
    return 0x00050000 | (code & 0xFFFF)


class _ArgCmp(ctypes.Structure):
    _fields_ = [("arg", ctypes.c_uint), ("op", ctypes.c_int), ("datum_a", ctypes.c_uint64),
                ("datum_b", ctypes.c_uint64)]


# Denied outright (EPERM).  Names unknown on this architecture are skipped.
DENIED_SYSCALLS = (
    # no new programs, processes or threads
    "execve", "execveat", "fork", "vfork", "clone", "clone3",
    # no sockets: the channel is a pair of inherited pipes
    "socket", "socketpair", "connect", "bind", "listen", "accept", "accept4",
    # no reaching into other processes
    "ptrace", "process_vm_readv", "process_vm_writev", "process_madvise", "kcmp", "pidfd_open",
    "pidfd_send_signal", "pidfd_getfd", "setpriority", "sched_setaffinity", "sched_setscheduler",
    "sched_setparam", "sched_setattr", "ioprio_set", "migrate_pages", "move_pages",
    # nothing beyond the process: filesystems, namespaces, kernel interfaces
    "mount", "umount2", "pivot_root", "chroot", "unshare", "setns", "move_mount", "open_tree", "fsopen",
    "fsmount", "fspick", "mount_setattr", "mknod", "mknodat", "name_to_handle_at", "open_by_handle_at",
    "io_uring_setup", "io_uring_enter", "io_uring_register", "bpf", "perf_event_open", "userfaultfd",
    "keyctl", "add_key", "request_key", "init_module", "finit_module", "delete_module", "kexec_load",
    "kexec_file_load", "reboot", "swapon", "swapoff", "acct", "syslog", "quotactl", "quotactl_fd",
    "personality", "iopl", "ioperm", "modify_ldt", "lookup_dcookie", "uselib", "vhangup",
    "settimeofday", "clock_settime", "clock_adjtime", "adjtimex", "fanotify_init", "memfd_secret",
)
# Signals only to this process: (syscall, index of the target pid argument).
SELF_ONLY_SIGNALS = (("kill", 0), ("tkill", 0), ("tgkill", 0), ("rt_sigqueueinfo", 0), ("rt_tgsigqueueinfo", 0))
# prctl options that are refused (argument 0): the parent-death signal is
# only ever set to SIGKILL (see install_syscall_filter), and a host needs no
# dump, name, tracer, memory-map or subreaper changes.
_PR_SET_PDEATHSIG = 1
_PR_SET_DUMPABLE = 4
_PR_SET_NAME = 15
_PR_SET_MM = 35
_PR_SET_CHILD_SUBREAPER = 36
_PR_SET_PTRACER = 0x59616D61
_REFUSED_PRCTL = (_PR_SET_DUMPABLE, _PR_SET_NAME, _PR_SET_MM, _PR_SET_CHILD_SUBREAPER, _PR_SET_PTRACER)
# Credential changes other than the one drop to `drop_to` (changing them
# would also clear the parent-death signal).
_CREDENTIAL_CALLS = ("setuid", "setgid", "setreuid", "setregid", "setfsuid", "setfsgid", "capset")


def install_syscall_filter(frozen_signals=(), drop_to=None) -> int:
    """Load the seccomp filter for good; returns how many rules it has.

    `frozen_signals`: signals whose handlers the host has installed (its
    per-call timers); setting a new handler for them fails with EPERM.
    `drop_to`: (uid, gid) the host will drop to (as root), the only
    credentials setresuid/setresgid may set; None: no credential changes.
    Raises OSError if libseccomp is missing or refuses.
    """
    library = _load_libseccomp()
    if library is None:
        raise OSError(errno.ENOSYS, "libseccomp is not installed")
    context = library.seccomp_init(_SCMP_ACT_ALLOW)
    if not context:
        raise OSError(errno.EINVAL, "seccomp_init failed")
    deny = _scmp_act_errno(errno.EPERM)
    rules = 0
    try:
        def add(name: str, *comparisons) -> None:
            nonlocal rules
            number = library.seccomp_syscall_resolve_name(name.encode())
            if number < 0:
                return  # not on this architecture
            array = (_ArgCmp * max(len(comparisons), 1))(*comparisons)
            result = library.seccomp_rule_add_array(context, deny, number, len(comparisons), array)
            if result < 0:
                raise OSError(-result, f"seccomp_rule_add({name}): {os.strerror(-result)}")
            rules += 1

        for name in DENIED_SYSCALLS:
            add(name)
        me = os.getpid()
        for name, index in SELF_ONLY_SIGNALS:
            add(name, _ArgCmp(index, _SCMP_CMP_NE, me, 0))
        # Resource limits of this process only (glibc's setrlimit is
        # prlimit64(0, ...)): never another process's, whatever its uid.
        add("prlimit64", _ArgCmp(0, _SCMP_CMP_NE, 0, 0))
        # The parent-death signal stays SIGKILL: no host outlives its parent.
        add("prctl", _ArgCmp(0, _SCMP_CMP_EQ, _PR_SET_PDEATHSIG, 0),
            _ArgCmp(1, _SCMP_CMP_NE, int(signal.SIGKILL), 0))
        for option in _REFUSED_PRCTL:
            add("prctl", _ArgCmp(0, _SCMP_CMP_EQ, option, 0))
        for name in _CREDENTIAL_CALLS:
            add(name)
        if drop_to is None:
            add("setresuid")
            add("setresgid")
            add("setgroups")
        else:
            for index in range(3):
                add("setresuid", _ArgCmp(index, _SCMP_CMP_NE, int(drop_to[0]), 0))
                add("setresgid", _ArgCmp(index, _SCMP_CMP_NE, int(drop_to[1]), 0))
            add("setgroups", _ArgCmp(0, _SCMP_CMP_NE, 0, 0))
        for number in frozen_signals:
            # rt_sigaction(signal, new action != NULL, ...): changing the handler.
            add("rt_sigaction", _ArgCmp(0, _SCMP_CMP_EQ, int(number), 0), _ArgCmp(1, _SCMP_CMP_NE, 0, 0))
        result = library.seccomp_load(context)
        if result < 0:
            raise OSError(-result, f"seccomp_load: {os.strerror(-result)}")
    finally:
        library.seccomp_release(context)
    return rules


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
