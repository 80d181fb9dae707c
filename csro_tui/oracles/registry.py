"""Oracle names for `csro run --oracle NAME` and the TUI: name -> factory.

A factory takes the oracle's configuration (a mapping: the run's
`oracle_options` plus `model` and `base_url` when set) and returns an
`Oracle`.  Modules are imported only when their oracle is made, so an
oracle with heavy or optional dependencies costs nothing until used.
To add an oracle, add one line to `ORACLES`.
"""

from __future__ import annotations

import importlib
from typing import Any, Callable, Mapping

from csro_tui.errors import ConfigError, CsroError, UnknownName
from csro_tui.oracles.base import Oracle

# name -> "module:factory"
ORACLES: dict[str, str] = {
    "best-response": "csro_tui.oracles.best_response:make_best_response_oracle",
    "seed": "csro_tui.oracles.seed:make_seed_oracle",
    "human": "csro_tui.oracles.human:make_human_oracle",
    "llm": "csro_tui.oracles.llm.zero_shot:make_zero_shot_oracle",
    "llm-refine": "csro_tui.oracles.llm.refine:make_refine_oracle",
    "llm-evolve": "csro_tui.oracles.llm.evolve:make_evolve_oracle",
    # The same evolutionary search with offline AST mutations (no LLM).
    "evolve": "csro_tui.oracles.llm.evolve:make_offline_evolve_oracle",
}

# What an oracle needs of the game, as GameSpec capabilities (attribute names
# that must be true); an oracle not listed serves any game.
ORACLE_NEEDS: dict[str, tuple[str, ...]] = {"best-response": ("exact",)}
# The capabilities in words, for the refusal.
_CAPABILITY_WORDS = {"exact": "exact evaluation"}

# Errors by which an oracle says it has nothing more to propose; the engine
# ends the run normally instead of counting a failed attempt.
FINISHED_ERRORS: tuple[str, ...] = ("csro_tui.oracles.seed:SeedsExhausted",)


class OracleExhausted(CsroError):
    """An oracle has nothing more to propose (the run ends normally)."""


def _load(target: str) -> Any:
    module_name, attribute = target.split(":")
    return getattr(importlib.import_module(module_name), attribute)


def oracle_names() -> list[str]:
    return list(ORACLES)


def oracle_factory(name: str) -> Callable[[Mapping[str, Any] | None], Oracle]:
    if name not in ORACLES:
        from csro_tui.names import did_you_mean

        raise UnknownName(f"unknown oracle {name!r}{did_you_mean(name, ORACLES)}; known oracles: {', '.join(ORACLES)}")
    try:
        return _load(ORACLES[name])
    except (ImportError, AttributeError) as error:
        raise ConfigError(f"oracle {name!r} is not available in this installation ({error})") from None


# The options the offline oracles read (the LLM and evolve oracles check
# their own); `csro run` refuses any other --oracle-option for them.
OFFLINE_ORACLE_OPTIONS = {"best-response": (), "seed": ("episodes",), "human": ("path",)}


def game_refusal(name: str, spec: Any) -> str | None:
    """Why oracle `name` cannot serve the game `spec`, in one line with what to
    use instead; None when it can.  Checked before a session is recorded."""
    missing = [need for need in ORACLE_NEEDS.get(name, ()) if not getattr(spec, need, False)]
    if not missing:
        return None
    from csro_tui.games.registry import list_games

    wanted = " and ".join(_CAPABILITY_WORDS.get(need, need) for need in missing)
    games = [game.name for game in list_games() if all(getattr(game, need, False) for need in missing)]
    others = [other for other in ORACLES if other != name and not set(ORACLE_NEEDS.get(other, ())) & set(missing)]
    return (f"the {name} oracle needs a game with {wanted} ({', '.join(games) or 'none installed'}); "
            f"{spec.name} has none: use another oracle ({', '.join(others)})")


def make_oracle(name: str, config: Mapping[str, Any] | None = None) -> Oracle:
    """The oracle called `name`, made from its configuration."""
    return oracle_factory(name)(dict(config or {}))


def finished_error_types() -> tuple[type[BaseException], ...]:
    """`OracleExhausted` plus the oracles' own "nothing more" errors that are installed."""
    types: list[type[BaseException]] = [OracleExhausted]
    for target in FINISHED_ERRORS:
        try:
            types.append(_load(target))
        except (ImportError, AttributeError):
            continue
    return tuple(types)
