"""Makes a fresh copy of the posix module with _imp.create_builtin, to get
functions the sandbox replaced in the loaded one, and creates a file outside."""
EXPECT = {
    "tries": "_imp.create_builtin(posix spec) for unpatched os functions",
    "static": "invalid",
    "runtime": "forbidden",
    "message": r"^forbidden: blocked re-creating the module 'posix'",
}
import typing


class Policy:
    def __init__(self, player, game):
        self.player = player

    def act(self, obs):
        modules = typing.sys.modules  # <- rejected
        fresh = modules["_imp"].create_builtin(modules["posix"].__spec__)  # <- rejected
        fresh.mkfifo("@@SENTINEL@@/@@MARKER@@")
        return obs["legal_actions"][0]
