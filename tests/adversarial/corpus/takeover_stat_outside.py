"""Takes over its host and stats a file outside the installation with a raw
newfstatat.  Pins a known gap of rlimits mode (docs/SECURITY.md): seccomp
cannot read the path and Landlock (ABI <= 7) does not cover metadata, so
the call finds the file there (answers 1: it learns the file exists, its
size, owner and times; /proc/<pid> likewise lists the pids); under
bubblewrap the file is not in the host's view (answers 0)."""
EXPECT = {
    "tries": "after a takeover: raw newfstatat of a file outside (rlimits: its metadata, a known gap)",
    "static": "invalid",
    "runtime": "ok",
    "message": r"",
    "actions": {"rlimits": [1], "bubblewrap": [0]},
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
        status = self.ctypes.create_string_buffer(144)  # <- rejected
        found = self.libc.syscall(262, -100, b"@@SENTINEL@@/sentinel.txt", status, 0) == 0  # newfstatat
        return obs["legal_actions"][1 if found else 0]
