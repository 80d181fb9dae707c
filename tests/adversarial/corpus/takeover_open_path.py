"""Takes over its host and opens a directory outside the installation with
O_PATH: Landlock does not check O_PATH (it needs no access right), and the
descriptor's fstat would give the file's metadata.  seccomp refuses the flag."""
EXPECT = {
    "tries": "after a takeover: openat with O_PATH of a path outside (metadata Landlock does not check)",
    "static": "invalid",
    "runtime": "forbidden",
    "message": r"^forbidden: the sandbox refused system call openat",
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
        self.libc.syscall(257, -100, b"@@SENTINEL@@", 0o10000000, 0)  # openat(AT_FDCWD, path, O_PATH)
        return obs["legal_actions"][0]
