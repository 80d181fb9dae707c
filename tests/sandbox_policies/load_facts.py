"""Records what its module's top-level code meets the first time it runs (the
load, before any episode), on a library module that outlives the policy's
own modules; `act` answers whether a fact is as expected.  Validation would
reject `random._os` and the attribute set on `random`."""
import random
import typing

if not hasattr(random, "csro_load_facts"):
    _os = random._os
    _sys = typing.sys
    _resource = _sys.modules["resource"]
    _sys.setrecursionlimit(10**6)
    random.csro_load_facts = {
        "uid": _os.getuid(),
        "euid": _os.geteuid(),
        "gid": _os.getgid(),
        "memory": _resource.getrlimit(_resource.RLIMIT_AS)[0],
        "cpu": _resource.getrlimit(_resource.RLIMIT_CPU)[0],
        "processes": _resource.getrlimit(_resource.RLIMIT_NPROC)[0],
        "file_bytes": _resource.getrlimit(_resource.RLIMIT_FSIZE)[0],
        "open_files": _resource.getrlimit(_resource.RLIMIT_NOFILE)[0],
        "core": _resource.getrlimit(_resource.RLIMIT_CORE)[0],
        "recursion": _sys.getrecursionlimit(),
        "stdout_captured": type(_sys.stdout).__name__ == "_OutputTail",
    }


class Policy:
    def __init__(self, player, game):
        pass

    def act(self, obs):
        return 1 if random.csro_load_facts.get(obs["fact"]) == obs["expected"] else 0
