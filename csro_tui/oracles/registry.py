"""Oracle names for `csro run --oracle NAME` and the TUI: name -> factory.

A factory takes the oracle's configuration (a mapping: the run's
`oracle_options` plus `model` and `base_url` when set) and returns an
`Oracle`.  Modules are imported only when their oracle is made, so an
oracle with heavy or optional dependencies costs nothing until used.
To add an oracle, add one entry to `ORACLES`: its factory, what a run must
give it (`needs`: "model" an LLM, "file" a policy file, "nothing"), whether
it reads the reviewer's rejection reasons and what the game must offer
(`game_needs`, GameSpec capabilities such as `exact`); the CLI and the TUI ask these
instead of guessing from the name.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any, Callable, Literal, Mapping

from csro_tui.errors import ConfigError, CsroError, UnknownName
from csro_tui.names import did_you_mean
from csro_tui.oracles.base import Oracle

Needs = Literal["model", "file", "nothing"]


@dataclass(frozen=True)
class OracleEntry:
    """One registered oracle: how it is made and what it asks of a run."""

    factory: str  # "module:function", imported when the oracle is made
    # What a run must give it: "model" an LLM (model, base URL, key), "file" a policy
    # file (its `path` option), "nothing" for the rest.
    needs: Needs = "nothing"
    # It puts the reviewer's rejection reasons into its next attempt (the LLM prompts).
    reads_reasons: bool = False
    # What the game must offer, as GameSpec capabilities (attributes that must be true):
    # checked before a session is recorded (`game_refusal`).
    game_needs: tuple[str, ...] = ()
    # It can propose for one seat against the other seat's mixture (OracleContext.seat):
    # `--populations 2` is refused, before a session is recorded, for one that cannot.
    two_populations: bool = True


ORACLES: dict[str, OracleEntry] = {
    "best-response": OracleEntry("csro_tui.oracles.best_response:make_best_response_oracle", game_needs=("exact",)),
    "seed": OracleEntry("csro_tui.oracles.seed:make_seed_oracle"),
    "human": OracleEntry("csro_tui.oracles.human:make_human_oracle", needs="file"),
    "llm": OracleEntry("csro_tui.oracles.llm.zero_shot:make_zero_shot_oracle", needs="model", reads_reasons=True),
    "llm-refine": OracleEntry("csro_tui.oracles.llm.refine:make_refine_oracle", needs="model", reads_reasons=True),
    "llm-evolve": OracleEntry("csro_tui.oracles.llm.mutation:make_llm_evolve_oracle", needs="model", reads_reasons=True),
    # The same evolutionary search with offline AST mutations (no LLM).
    "evolve": OracleEntry("csro_tui.oracles.evolve.search:make_ast_evolve_oracle"),
}

# GameSpec capabilities in words, for `game_refusal`.
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


def oracles_needing(what: Needs) -> list[str]:
    """The registered oracles that need `what` from a run ("model", "file" or "nothing")."""
    return [name for name, entry in ORACLES.items() if entry.needs == what]


def reads_rejection_reasons(name: str) -> bool:
    """Whether oracle `name` reads the reviewer's rejection reasons (False for one not registered)."""
    entry = ORACLES.get(name)
    return entry is not None and entry.reads_reasons


def oracle_factory(name: str) -> Callable[[Mapping[str, Any] | None], Oracle]:
    if name not in ORACLES:
        raise UnknownName(f"unknown oracle {name!r}{did_you_mean(name, ORACLES)}; known oracles: {', '.join(ORACLES)}")
    try:
        return _load(ORACLES[name].factory)
    except (ImportError, AttributeError) as error:
        raise ConfigError(f"oracle {name!r} is not available in this installation ({error})") from None


# The options the offline oracles read (the LLM and evolve oracles check
# their own); `csro run` refuses any other --oracle-option for them.
OFFLINE_ORACLE_OPTIONS = {"best-response": (), "seed": ("episodes",), "human": ("path", "path_seat0", "path_seat1")}


def game_refusal(name: str, spec: Any) -> str | None:
    """Why oracle `name` cannot serve the game `spec`, in one line with what to
    use instead; None when it can.  Checked before a session is recorded."""
    entry = ORACLES.get(name)
    missing = [need for need in (entry.game_needs if entry else ()) if not getattr(spec, need, False)]
    if not missing:
        return None
    from csro_tui.games.registry import list_games  # start-up time: importing it loads open_spiel, pyspiel

    wanted = " and ".join(_CAPABILITY_WORDS.get(need, need) for need in missing)
    games = [game.name for game in list_games() if all(getattr(game, need, False) for need in missing)]
    others = [other for other, each in ORACLES.items() if other != name and not set(each.game_needs) & set(missing)]
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
