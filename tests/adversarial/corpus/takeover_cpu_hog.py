"""Takes over its host and makes the host burn 150 ms of CPU after every
reply it sends, outside any policy call, while the parent waits for the
opponent (whose decisions it slows): the host's own CPU time is charged
to its budget whenever it is, so the hog runs out of it (issue 34)."""
EXPECT = {
    "tries": "after a takeover: the host's reply function patched to burn CPU after each reply",
    "static": "invalid",
    "runtime": "timeout",
    "message": r"^timeout: act \(episode \d+\) ran out of the policy's time budget",
    "seconds": 25,
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


def _burn(seconds):
    clock = typing.sys.modules["time"]  # <- rejected
    end = clock.process_time() + seconds
    while clock.process_time() < end:
        pass


class Policy:
    def __init__(self, player, game):
        ctypes, libc = take_over()
        channel = host_object(ctypes, "channel").channel
        send = type(channel).send

        def send_then_burn(self, message):
            send(self, message)
            _burn(0.15)

        type(channel).send = send_then_burn

    def act(self, obs):
        return obs["legal_actions"][0]
