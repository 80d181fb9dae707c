"""Takes over its host, blocks SIGALRM, SIGPROF and SIGXCPU with a raw
rt_sigprocmask, then loops: in sandbox v2 the per-call limit never fired
and only the parent's growing backstop ended it (issue 27)."""
EXPECT = {
    "tries": "after a takeover: rt_sigprocmask blocking the timer signals, then an endless loop",
    "static": "invalid",
    "runtime": "timeout",
    "message": r"^timeout: .*ran past its limit.*refused system call rt_sigprocmask",
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
        timers = (1 << (14 - 1)) | (1 << (27 - 1)) | (1 << (24 - 1))  # SIGALRM, SIGPROF, SIGXCPU
        libc.syscall(14, 0, ctypes.byref(ctypes.c_uint64(timers)), None, 8)  # rt_sigprocmask(SIG_BLOCK)
        while True:
            pass
