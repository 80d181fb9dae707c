"""Takes over its host while the module loads and, on the first load only
(before any episode: the clock's counter reads 1), stops the host's own
timers and burns 0.8 s of CPU, within that call's limit; each episode's
load burns 0.2 s.  Only the first load's time being charged makes that
more than the set-up budget: in sandbox v3 the first load was charged to
no budget (issue 34)."""
EXPECT = {
    "tries": "after a takeover at module load: CPU burnt on the first load, the one before any episode",
    "static": "invalid",
    "runtime": "timeout",
    "message": r"^timeout: (module load|Policy\.__init__) \(episode \d+\) ran out of the time budget for loading the module",
    "limits": {"init_timeout": 1.0, "init_budget": 0.05, "call_grace": 8.0},
    "seconds": 30,
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


def _load():
    ctypes, libc = take_over()
    counts = host_object(ctypes, "progress").progress.counts
    stop_own_timers(ctypes, libc)
    _burn(0.8 if counts[0] == 1 else 0.2)


_load()


class Policy:
    def __init__(self, player, game):
        self.player = player

    def act(self, obs):
        return obs["legal_actions"][0]
