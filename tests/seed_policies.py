"""Hand-written seed policies loaded in this process, for tests only.

Seeds are our own trusted code (never LLM output), so tests that check their
logic run them in-process; everything else runs policies in the sandbox.
"""

from __future__ import annotations

import json

from csro_tui.sandbox.contract import POLICY_CLASS_NAME


def load_policy(source: str, spec, player: int, seed: int):
    namespace: dict = {}
    exec(compile(source, "<seed>", "exec"), namespace)  # trusted seed code only
    game = dict(spec.game_info(), player=player, seed=seed)
    json.dumps(game)
    return namespace[POLICY_CLASS_NAME](player, game)
