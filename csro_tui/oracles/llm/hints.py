"""Specific advice for the mistakes small models make, added to the feedback they get.

A 1.5B model told "act returned a NoneType" does not work out that one
path through `act` has no `return`; told "KeyError: 'obs' in
Policy.__init__" it does not work out that observations are not in the
`game` dict.  `failure_hint(text, spec)` turns such a failure line (a
sandbox failure, or a static validation issue) into one or two sentences
that name the fix, with this game's real keys and action ids where they
help.  "" when there is nothing specific to add.
"""

from __future__ import annotations

import re
from typing import Any

from csro_tui.sandbox.contract import ALLOWED_IMPORTS

_FALLBACK = 'end `act` with a fallback such as `return obs["legal_actions"][0]`'


def failure_hint(text: str, spec: Any = None) -> str:
    """One or two sentences on how to fix the failure described by `text` ("" if none applies)."""
    if not text:
        return ""
    hints = [hint for pattern, make in _RULES if (match := re.search(pattern, text)) and (hint := make(match, spec))]
    return " ".join(dict.fromkeys(hints))  # each once, in rule order


def _action_ids(spec: Any) -> str:
    names = _action_names(spec)
    if not names:
        return ""
    shown = ", ".join(f"{name!r} is {index}" for index, name in enumerate(names[:8]))
    return f" ({shown}{', ...' if len(names) > 8 else ''})"


def _action_names(spec: Any) -> list[str]:
    try:
        return list(spec.game_info().get("action_names") or [])
    except Exception:  # noqa: BLE001 - hints work without the spec
        return []


def _obs_keys(spec: Any) -> list[str]:
    try:
        return list(spec.example_observation(0))
    except Exception:  # noqa: BLE001
        return []


def _game_keys(spec: Any) -> list[str]:
    try:
        return list(spec.example_game(0))
    except Exception:  # noqa: BLE001
        return ["name", "num_players", "num_actions", "action_names", "rules", "params", "player", "seed"]


def _returned_text(match: re.Match, spec: Any) -> str:
    return ("`act` returned text. Return the action's id, an int from obs[\"legal_actions\"], not its name"
            f"{_action_ids(spec)}.")


def _returned_none(match: re.Match, spec: Any) -> str:
    return ("`act` returned None: some path through `act` has no `return` (or returns a variable that is None). "
            f"Make every path return an action id, and {_FALLBACK}.")


def _returned_other(match: re.Match, spec: Any) -> str:
    kind = match.group(1)
    if kind == "float":
        return "Return an int action id (not a float such as 1.0), or a dict {action id: probability}."
    if kind in ("list", "tuple"):
        return ("Return one int action id, or a dict {action id: probability}; not a list of probabilities "
                "(write {0: 0.5, 1: 0.5} instead of [0.5, 0.5]).")
    return "Return one int action id from obs[\"legal_actions\"], or a dict {action id: probability}."


def _name_keys(match: re.Match, spec: Any) -> str:
    return ("A distribution's keys must be action ids (ints), not names: write {0: 0.5, 1: 0.5}"
            f"{_action_ids(spec)}.")


def _key_error(match: re.Match, spec: Any) -> str:
    key, where = match.group(1), match.group(2)
    if "__init__" in where:
        keys = ", ".join(_game_keys(spec))
        extra = " Observations are not in `game`: they arrive as the `obs` argument of `act`." \
            if key in ("obs", "observation", "legal_actions", "state", "card", "history") else ""
        return f"The `game` dict has no key {key!r}; its keys are: {keys}.{extra}"
    keys = _obs_keys(spec)
    if keys:
        return (f"`obs` has no key {key!r}; its keys are: {', '.join(keys)} "
                "(see the example observations in the game description).")
    return f"`obs` has no key {key!r}; use only the keys the game description lists."


def _illegal(match: re.Match, spec: Any) -> str:
    return ("Return only ids listed in obs[\"legal_actions\"] at that moment (the legal actions change during "
            "the game); check `if action in obs[\"legal_actions\"]` before returning it.")


def _signature(match: re.Match, spec: Any) -> str:
    return ("Use exactly `def __init__(self, player, game):` and `def act(self, obs):` - no other "
            "parameters; read everything else from `game` (in __init__) and `obs` (in act).")


def _no_class(match: re.Match, spec: Any) -> str:
    return ("Define `class Policy:` at the top level of the module, with `def __init__(self, player, game):` "
            "and `def act(self, obs):` - not functions on their own.")


def _import(match: re.Match, spec: Any) -> str:
    return "Import only the allowed modules listed in the contract, or none at all."


def _timeout(match: re.Match, spec: Any) -> str:
    return ("`act` was too slow: do constant work per call - keep counts on `self` and read only the newest "
            "entries of growing lists (e.g. obs[\"opp_moves\"][-1]) instead of rescanning them.")


def _cut_off(match: re.Match, spec: Any) -> str:
    return "Write a shorter module (under about 60 lines, few comments) so the whole reply fits."


def _syntax(match: re.Match, spec: Any) -> str:
    return "Reply with the complete module, every line of it, in one ```python block."


def _name_error(match: re.Match, spec: Any) -> str:
    name = match.group(1)
    if name in ALLOWED_IMPORTS:
        # Measured: told to "define" `random`, the 1.5B model left the import out three times running.
        return f"{name!r} is a module that was never imported: make `import {name}` the first line of the module."
    return (f"The name {name!r} is not defined: define it (as a constant at the top of the module, "
            "or as an attribute on `self` in __init__) before using it.")


def _attribute_self(match: re.Match, spec: Any) -> str:
    return (f"`self.{match.group(1)}` is read before it is set: set every attribute you use in `__init__`.")


def _module_load(match: re.Match, spec: Any) -> str:
    return ("Code outside the class runs when the module is loaded, with no real game: remove example "
            "usage, tests and prints from the top level - define only constants, imports and `class Policy`.")


_RULES: tuple[tuple[str, Any], ...] = (
    (r"in module load", _module_load),
    (r"act returned a str\b", _returned_text),
    (r"act returned a NoneType", _returned_none),
    (r"act returned a (?!str\b|NoneType\b)(\w+)", _returned_other),
    (r"distribution key of type str", _name_keys),
    # The sandbox has written the key quoted ('obs') and bare (obs).
    (r"KeyError: '?([^'\s]*)'? in ([\w.]+)", _key_error),
    (r"not legal|illegal action", _illegal),
    (r"must accept \(", _signature),
    (r"no top-level `class Policy`|defines? class Policy|no class Policy", _no_class),
    (r"import of '[^']+' is not allowed", _import),
    (r"^timeout|took [0-9.]+ ?s|time limit", _timeout),
    (r"cut off at max_tokens", _cut_off),
    (r"syntax error|invalid syntax|unexpected EOF|was never closed|unterminated", _syntax),
    (r"NameError: name '(\w+)' is not defined", _name_error),
    (r"AttributeError: 'Policy' object has no attribute '(\w+)'", _attribute_self),
)
