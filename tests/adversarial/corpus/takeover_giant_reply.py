"""Takes over its host and writes one 60 MB reply line straight onto its reply
pipe (found by a raw fstat): the parent must read no more of it than the
request allows, refuse it unparsed, name the failure and hold no copy of it.
Without the bound the parent's peak memory went from 68 MB to 1.6 GB."""
EXPECT = {
    "tries": "after a takeover: a 60 MB forged reply on the reply pipe",
    "static": "invalid",
    "runtime": "malformed",
    "message": r"^malformed: host sent a reply of over \d+ bytes where its request allows at most \d+ \(adversary\)$",
    "seconds": 15,
    "parent_mb": 2,
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
        status = ctypes.create_string_buffer(144)
        chunk = b"0," * (1 << 19)  # valid JSON: 30 million small numbers, a list the size of the machine
        for fd in range(3, 64):
            # fstat (5); st_mode is the 32-bit word at offset 24: a pipe is 0o010000
            if libc.syscall(5, fd, status) == 0 and int.from_bytes(status.raw[24:28], "little") & 0o170000 == 0o010000:
                if libc.syscall(1, fd, b'{"seq": 3, "ok": true, "answers": [', 35) > 0:  # the reply pipe
                    for _ in range(60):
                        libc.syscall(1, fd, chunk, len(chunk))
                    libc.syscall(1, fd, b"0]}\n", 4)
        return obs["legal_actions"][0]
