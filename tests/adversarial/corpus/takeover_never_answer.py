"""Takes over its host, stops the host's own call timers and then never
answers: it sleeps in `act` with its progress page left as an honest host's
would be.  Only the parent's clock can end it; in sandbox v3 a host that
never answered kept `csro eval` running until it was killed from outside
(issue 34)."""
EXPECT = {
    "tries": "after a takeover: host timers stopped, then no answer ever (asleep in act)",
    "static": "invalid",
    "runtime": "timeout",
    "message": r"^timeout: act \(episode \d+\) ran past its limit of 0.5 s \(stopped from outside the host",
    "seconds": 12,
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


def host_object(ctypes, wanted):
    """The host's own object that has attribute `wanted` (its _Host, its
    channel, ...), found up the stack from the current frame."""
    get_frame = ctypes.pythonapi.PyEval_GetFrame
    get_frame.restype = ctypes.py_object
    frame = get_frame()
    while frame is not None:
        for value in frame.f_locals.values():  # <- rejected
            if hasattr(value, wanted):
                return value
        frame = frame.f_back  # <- rejected
    raise LookupError(wanted)


def stop_own_timers(ctypes, libc):
    """setitimer(ITIMER_REAL and ITIMER_PROF, 0): the host's own call timer
    never fires (setitimer is a call the host itself makes, so it is allowed)."""
    zero = (ctypes.c_long * 4)()
    for which in (0, 2):
        libc.setitimer(which, ctypes.byref(zero), None)


class Policy:
    def __init__(self, player, game):
        self.ctypes, self.libc = take_over()  # <- rejected

    def act(self, obs):
        stop_own_timers(self.ctypes, self.libc)  # <- rejected
        typing.sys.modules["time"].sleep(3600)  # <- rejected
