"""Gets the gc module by creating it directly (no import statement, no import
event) and walks every object in the process for other episodes' cards."""
EXPECT = {
    "tries": "gc.get_objects(), gc made with _imp.create_builtin",
    "static": "invalid",
    "runtime": "forbidden",
    "message": r"^forbidden: blocked (import of 'gc'|gc\.get_objects|re-creating the module 'gc')",
    "game": "kuhn_poker",
}
import typing


class Policy:
    def __init__(self, player, game):
        self.player = player

    def act(self, obs):
        modules = typing.sys.modules  # <- rejected
        spec = modules["_frozen_importlib"].BuiltinImporter.find_spec("gc")
        gc = modules["_imp"].create_builtin(spec)
        cards = [o.get("card") for o in gc.get_objects() if isinstance(o, dict) and "card" in o]
        return obs["legal_actions"][len(cards) % len(obs["legal_actions"])]
