"""Game names -> GameSpecs.

`get_game` accepts a built-in name with optional OpenSpiel-style parameters
(`rrps`, `rrps(num_repetitions=100)`, `kuhn_poker`, `leduc_poker`,
`repeated_leduc`, `repeated_leduc(num_hands=10)`, `liars_dice`,
`liars_dice(dice_sides=4)`) or any two-player
zero-sum OpenSpiel game string (`tic_tac_toe`, `goofspiel(num_cards=4)`),
which goes through the generic adapter.  Anything else raises
`UnknownGameError` with a one-line reason.  `spec.name` round-trips:
`get_game(spec.name).name == spec.name`.
"""

from __future__ import annotations

import inspect
import os
import re
from contextlib import contextmanager
from functools import lru_cache
from typing import Any, Callable

import pyspiel

from csro_tui.errors import UnknownGameError, UnknownGameName
from csro_tui.games.base import GameSpec
from csro_tui.games.generic import GenericSpec
from csro_tui.games.kuhn import KuhnSpec
from csro_tui.games.leduc import LeducSpec
from csro_tui.games.liars_dice import LiarsDiceSpec
from csro_tui.games.repeated_leduc import RepeatedLeducSpec
from csro_tui.games.rrps import RRPSSpec
from csro_tui.names import close_names

# Built-in games: name -> factory taking the parsed parameters as keywords.
BUILTIN: dict[str, Callable[..., GameSpec]] = {
    "rrps": RRPSSpec,
    "kuhn_poker": KuhnSpec,
    "leduc_poker": LeducSpec,
    "repeated_leduc": RepeatedLeducSpec,
    "liars_dice": LiarsDiceSpec,
}
ALIASES = {"repeated_leduc_poker": "repeated_leduc"}

_GAME_STRING = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)(?:\((.*)\))?$", re.S)
_RRPS_OPENSPIEL = re.compile(r"^repeated_game\(stage_game=matrix_rps\(\),num_repetitions=(\d+)\)$")


def list_games() -> list[GameSpec]:
    """The built-in games with default parameters."""
    return [get_game(name) for name in BUILTIN]


def get_game(name: str) -> GameSpec:
    """The GameSpec for `name`; raises UnknownGameError with a one-line reason."""
    if not isinstance(name, str) or not name.strip():
        raise UnknownGameError(f"no game given; choose one of: {', '.join(BUILTIN)}")
    # OpenSpiel game strings never need spaces; tolerate them around "=" etc.
    return _get_game("".join(name.split()))


@lru_cache(maxsize=64)
def _get_game(text: str) -> GameSpec:
    match = _GAME_STRING.match(text)
    if match is None:
        raise UnknownGameError(
            f"cannot read game string {text!r}: expected name or name(key=value,...)"
        )
    short_name, param_text = match.group(1), match.group(2)
    rrps_match = _RRPS_OPENSPIEL.match(text)
    if rrps_match:  # the OpenSpiel spelling of rrps
        return RRPSSpec(int(rrps_match.group(1)))
    short_name = ALIASES.get(short_name, short_name)
    if short_name in BUILTIN:
        return _builtin(short_name, _parse_flat_params(short_name, param_text or ""))
    return _generic(text, short_name)


def _builtin(short_name: str, params: dict[str, Any]) -> GameSpec:
    factory = BUILTIN[short_name]
    accepted = list(inspect.signature(factory).parameters)
    unknown = sorted(set(params) - set(accepted))
    if unknown:
        takes = f"it takes {', '.join(accepted)}" if accepted else "it takes no parameters"
        raise UnknownGameError(f"{short_name}: unknown parameter(s) {', '.join(unknown)}; {takes}")
    return factory(**params)


def _parse_flat_params(short_name: str, text: str) -> dict[str, Any]:
    """'a=1,b=true' -> {'a': 1, 'b': True}; built-in games take scalars only."""
    params: dict[str, Any] = {}
    for item in filter(None, text.split(",")):
        key, sep, value = item.partition("=")
        if not sep or not key or not value:
            raise UnknownGameError(f"{short_name}: cannot read parameter {item!r}; expected key=value")
        params[key] = _scalar(value)
    return params


def _scalar(value: str) -> Any:
    if value in ("true", "True"):
        return True
    if value in ("false", "False"):
        return False
    for convert in (int, float):
        try:
            return convert(value)
        except ValueError:
            pass
    return value


def _generic(text: str, short_name: str) -> GameSpec:
    registered = pyspiel.registered_names()
    if short_name not in registered:
        raise UnknownGameName(f"unknown game {short_name!r}{_suggestions(short_name, registered)}")
    game_type = next(t for t in pyspiel.registered_games() if t.short_name == short_name)
    low, high = game_type.min_num_players, game_type.max_num_players
    if not low <= 2 <= high:
        players = f"{low}" if low == high else f"{low}-{high}"
        raise UnknownGameError(f"{short_name} is a {players}-player game; csro-tui plays two-player games")
    try:
        with _quiet_stderr():
            game = pyspiel.load_game(text)
    except pyspiel.SpielError as error:
        first_line = str(error).strip().splitlines()[0] if str(error).strip() else "load failed"
        raise UnknownGameError(f"cannot load {text!r}: {first_line}") from None
    if game.num_players() != 2:
        hint = f"; try {short_name}(players=2)" if "players" in game_type.parameter_specification else ""
        raise UnknownGameError(
            f"{text} has {game.num_players()} players; csro-tui plays two-player games{hint}"
        )
    utility = game.get_type().utility
    if utility != pyspiel.GameType.Utility.ZERO_SUM:
        kind = _UTILITY_WORDS.get(utility, str(utility))
        raise UnknownGameError(
            f"{text} is {kind}; csro-tui's meta-game needs a two-player zero-sum game"
        )
    return GenericSpec(text, game)


_UTILITY_WORDS = {
    pyspiel.GameType.Utility.GENERAL_SUM: "general-sum",
    pyspiel.GameType.Utility.CONSTANT_SUM: "constant-sum",
    pyspiel.GameType.Utility.IDENTICAL: "cooperative (identical payoffs)",
}


def _suggestions(short_name: str, registered: list[str]) -> str:
    # similar spellings first; names containing it only from 3 characters on ("x" named dark_hex)
    close = close_names(short_name, [*BUILTIN, *ALIASES, *registered])
    hint = f" (did you mean {', '.join(close)}?)" if close else ""
    return (
        f"{hint}; built-in games: {', '.join(BUILTIN)}, "
        "or any two-player zero-sum OpenSpiel game string"
    )


@contextmanager
def _quiet_stderr():
    """Silence file descriptor 2 while OpenSpiel may fail.

    pyspiel prints "OpenSpiel exception: ..." to stderr before raising; the
    user should see only our one-line error (and a TUI screen stays clean).
    """
    try:
        saved = os.dup(2)
    except OSError:  # no stderr at all: nothing to silence
        yield
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(devnull)
