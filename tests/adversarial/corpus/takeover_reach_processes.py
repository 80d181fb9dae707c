"""Takes over its host and reaches for the processes next to it in pid order:
ptrace attach, reading their memory (process_vm_readv), renicing and pinning
them (setpriority, sched_setaffinity), and a pidfd."""
EXPECT = {
    "tries": "after a takeover: ptrace, process_vm_readv, setpriority, sched_setaffinity, pidfd_open on others",
    "static": "invalid",
    "runtime": "forbidden",
    "message": r"^forbidden: the sandbox refused system call (ptrace|process_vm_readv|setpriority|sched_setaffinity|pidfd_open)",
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
        me = libc.getpid()
        mask = ctypes.c_uint64(1)
        for pid in [libc.getppid()] + [p for p in range(max(2, me - 16), me + 16) if p != me]:
            libc.syscall(101, 16, pid, None, None)  # ptrace(PTRACE_ATTACH)
            libc.syscall(310, pid, None, 0, None, 0, 0)  # process_vm_readv
            libc.syscall(141, 0, pid, 19)  # setpriority(PRIO_PROCESS, pid, 19)
            libc.syscall(203, pid, 8, ctypes.byref(mask))  # sched_setaffinity
            libc.syscall(434, pid, 0)  # pidfd_open
        return obs["legal_actions"][0]
