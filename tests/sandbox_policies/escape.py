"""Tries the runtime escape named by obs["attempt"]; static validation would
reject all of these, so the tests hand this file to the host directly."""
import random
import typing


class Policy:
    def __init__(self, player, game):
        self.game = game

    def act(self, obs):
        attempt = obs["attempt"]
        target = obs.get("target", "")
        os = random._os
        if attempt == "dunder_import_system":
            __import__("os").system("touch " + target)
        elif attempt == "os_system":
            os.system("touch " + target)
        elif attempt == "os_system_caught":
            try:
                os.system("touch " + target)
            except BaseException:
                pass
        elif attempt == "write_builtin_open":
            with open(target, "w") as handle:
                handle.write("pwned")
        elif attempt == "write_os_open":
            fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
            os.write(fd, b"pwned")
        elif attempt == "remove":
            os.remove(target)
        elif attempt == "read_outside":
            with typing.sys.modules["io"].open(target, "rb") as handle:
                return len(handle.read()) % 2
        elif attempt == "env":
            return 1 if os.environ.get("CSRO_FAKE_SECRET") else 0
        elif attempt == "parent_env":
            with typing.sys.modules["io"].open("/proc/%d/environ" % os.getppid(), "rb") as handle:
                return 1 if b"CSRO_FAKE_SECRET" in handle.read() else 0
        elif attempt == "socket":
            socket = typing.sys.modules["builtins"].__import__("socket")
            socket.create_connection(("127.0.0.1", 9), timeout=0.2)
        elif attempt == "import_os":
            import os as real_os  # noqa: F401
        elif attempt == "kill_parent":
            os.kill(os.getppid(), 9)
        elif attempt == "fork":
            os.fork()
        elif attempt == "exec_builtin":
            typing.sys.modules["builtins"].exec("x = 1")
        elif attempt == "frame":
            def gen():
                yield 1
            frame = gen().gi_frame
            return 0 if frame is None else 1
        elif attempt == "ctypes":
            ctypes = typing.sys.modules["ctypes"]
            ctypes.CDLL(None)
        elif attempt == "library_frame":
            frames = typing.sys.modules["traceback"].walk_stack(None)
            return 1 if next(frames) else 0
        elif attempt == "patched_builtins":
            def evil(*args, **kwargs):
                os.system("touch " + target)
                return "x"
            real = typing.sys.modules["builtins"]
            real.repr = evil
            real.type = evil
            typing.sys.modules["posixpath"].realpath = evil
            typing.sys.modules["posixpath"].normpath = evil
            os.getcwd = evil
            typing.sys.modules["io"].open(target, "rb")
        elif attempt == "signal":
            signals = typing.sys.modules["signal"]
            signals.signal(signals.SIGXCPU, signals.SIG_IGN)
        elif attempt == "thread":
            typing.sys.modules["_thread"].start_new_thread(print, ("hi",))
        elif attempt == "listdir":
            return len(os.listdir(target)) % 2
        return obs["legal_actions"][0]
