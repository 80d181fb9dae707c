"""Oracle names for `csro run --oracle NAME` and the TUI: name -> factory.

A factory takes the oracle's configuration (a mapping: the run's
`oracle_options` plus `model` and `base_url` when set) and returns an
`Oracle`.  Modules are imported only when their oracle is made, so an
oracle with heavy or optional dependencies costs nothing until used.
To add an oracle, add one entry to `ORACLES`: its factory, what a run must
give it (`needs`: "model" an LLM, "file" a policy file, "nothing") and whether
it reads the reviewer's rejection reasons; the CLI and the TUI ask these
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


ORACLES: dict[str, OracleEntry] = {
    "best-response": OracleEntry("csro_tui.oracles.best_response:make_best_response_oracle"),
    "seed": OracleEntry("csro_tui.oracles.seed:make_seed_oracle"),
    "human": OracleEntry("csro_tui.oracles.human:make_human_oracle", needs="file"),
    "llm": OracleEntry("csro_tui.oracles.llm.zero_shot:make_zero_shot_oracle", needs="model", reads_reasons=True),
    "llm-refine": OracleEntry("csro_tui.oracles.llm.refine:make_refine_oracle", needs="model", reads_reasons=True),
    "llm-evolve": OracleEntry("csro_tui.oracles.llm.mutation:make_llm_evolve_oracle", needs="model", reads_reasons=True),
    # The same evolutionary search with offline AST mutations (no LLM).
    "evolve": OracleEntry("csro_tui.oracles.evolve.search:make_ast_evolve_oracle"),
}

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
OFFLINE_ORACLE_OPTIONS = {"best-response": (), "seed": ("episodes",), "human": ("path",)}


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
