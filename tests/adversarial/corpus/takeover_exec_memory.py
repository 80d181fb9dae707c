"""Takes over its host and asks for memory it could write machine code into and
run: an anonymous read-write-execute mapping, then one of its own buffers made
executable."""
EXPECT = {
    "tries": "after a takeover: mmap and mprotect with PROT_EXEC (shellcode)",
    "static": "invalid",
    "runtime": "forbidden",
    "message": r"^forbidden: the sandbox refused system call (mmap|mprotect)",
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
        libc.syscall(9, None, 4096, 7, 0x22, -1, 0)  # mmap(PROT_READ|WRITE|EXEC, MAP_PRIVATE|ANONYMOUS)
        buffer = ctypes.create_string_buffer(3 * 4096)
        libc.syscall(10, (ctypes.addressof(buffer) + 4095) & ~4095, 4096, 7)  # mprotect(RWX)
        return obs["legal_actions"][0]
