"""Building an engine from a run configuration: a new session, or a resumed one.

Shared by `csro run` and the TUI so both start and resume sessions the
same way.  Parts can be passed in (a reviewer, an oracle, an evaluator, a
meta-solver); whatever is not given is made from the configuration.
"""

from __future__ import annotations

import dataclasses
import functools
import platform
from importlib import metadata
from typing import Any, Mapping

from csro_tui import __version__
from csro_tui.config import REDACTED, SANDBOX_LIMIT_FIELDS, RunConfig
from csro_tui.engine.evaluator import Evaluator, GameEvaluator
from csro_tui.engine.loop import Engine, MetaSolve
from csro_tui.errors import ConfigError, UnknownName
from csro_tui.evaluation.sampling import new_master_seed
from csro_tui.names import did_you_mean
from csro_tui.oracles.base import Oracle
from csro_tui.oracles.llm.keys import KeyTrust
from csro_tui.oracles.options import KEY_TRUST, LLM_FILE_SETTINGS
from csro_tui.oracles.registry import ORACLES, OFFLINE_ORACLE_OPTIONS, game_refusal, make_oracle
from csro_tui.reviewers import Reviewer, ScriptReviewer, make_reviewer
from csro_tui.sessions.state import SessionState, fold
from csro_tui.sessions.store import LogWarning, SessionStore

# Settings a resumed session may change; the others define the session.
# Where evaluation runs (workers, backend, ray_address) never changes a result,
# nor where the model is served (base_url: the server may have moved since).
RESUMABLE_OVERRIDES = frozenset(
    {"iterations", "review", "max_attempts", "workers", "backend", "ray_address", "sessions_dir", "base_url"}
)


def software_versions() -> dict[str, str]:
    """Versions recorded in session_started (never any credential)."""
    return dict(_software_versions())


@functools.lru_cache(maxsize=1)
def _software_versions() -> dict[str, str]:

    def version(distribution: str) -> str:
        try:
            return metadata.version(distribution)
        except metadata.PackageNotFoundError:
            return "not installed"

    return {
        "csro_tui": __version__,
        "python": platform.python_version(),
        "open_spiel": version("open_spiel"),
        "numpy": version("numpy"),
        "scipy": version("scipy"),
    }


def oracle_options(config: RunConfig, key_trust: KeyTrust | None = None) -> dict[str, Any]:
    """What the oracle factory receives: the oracle options plus model, base URL and the [llm] table,
    and where the user lets an API key go (`key_trust`: only ever the caller's, never the file's)."""
    options = dict(config.oracle_options)
    if config.model:
        options.setdefault("model", config.model)
    if config.base_url:
        options.setdefault("base_url", config.base_url)
    if config.llm:
        options[LLM_FILE_SETTINGS] = dict(config.llm)
    options.pop(KEY_TRUST, None)
    if key_trust is not None:
        options[KEY_TRUST] = key_trust
    return options


def _parts(config: RunConfig, spec: Any, oracle: Oracle | None, evaluator: Evaluator | None,
           key_trust: KeyTrust | None = None):
    if spec is None:
        from csro_tui.games.registry import get_game  # start-up time: importing it loads open_spiel, pyspiel

        spec = get_game(config.game)
    if oracle is None:  # made by name: its declared needs are checked against the game first
        check_oracle_serves(config.oracle, spec)
        oracle = make_oracle(config.oracle, oracle_options(config, key_trust))
    if evaluator is None:
        from csro_tui.sandbox.sandbox import limits_from  # start-up time: importing it loads orjson, rich

        evaluator = GameEvaluator(
            spec, workers=config.workers, backend=config.backend, ray_address=config.ray_address,
            limits=limits_from({name: getattr(config, name) for name in SANDBOX_LIMIT_FIELDS}),
        )
    return spec, oracle, evaluator


def _check_solver(name: str) -> None:
    try:
        from csro_tui.meta.solvers import SOLVERS  # start-up time: importing it loads scipy
    except ImportError:
        return
    if name not in SOLVERS:
        raise UnknownName(f"unknown meta-solver {name!r}{did_you_mean(name, SOLVERS)}; known solvers: {', '.join(SOLVERS)}")


def check_seed_policies(config: RunConfig, spec: Any) -> None:
    """Unknown `--seeds` names fail here, before a session is recorded (no empty error session)."""
    if not config.seed_policies:
        return

    known = list(spec.seed_policies())
    for name in config.seed_policies:
        if name not in known:
            raise UnknownName(f"{config.game} has no seed policy {name!r}{did_you_mean(name, known)}; "
                              f"seeds: {', '.join(known) or 'none'}, listed by `csro games {spec.name}`")


def populations_refusal(populations: int, oracle: str, solver: str) -> str | None:
    """Why `--populations 2` cannot run with this oracle and meta-solver (one line), or None.

    An oracle whose registry entry says it cannot propose for one seat
    (`OracleEntry.two_populations`), or a meta-solver that cannot solve the
    rectangular seat-0 x seat-1 meta-game, is refused before a session is recorded.
    """
    if populations != 2:
        return None
    entry = ORACLES.get(oracle)
    if entry is not None and not entry.two_populations:
        able = ", ".join(name for name, other in ORACLES.items() if other.two_populations)
        return (f"--populations 2: oracle {oracle} cannot propose for one seat against the other's mixture; "
                f"use --populations 1, or one of: {able}")
    try:
        from csro_tui.meta.solvers import SOLVERS, solve  # start-up time: importing it loads scipy
    except ImportError:
        return None

    def solves_rectangular(name: str) -> str | None:
        try:
            solve(name, [[1.0, -1.0, 0.5], [-1.0, 1.0, -0.5]], populations=2)  # a small rectangular meta-game: 2 seat-0 members, 3 seat-1
        except ValueError as error:
            return str(error)
        return None

    if solver not in SOLVERS:
        return None  # an unknown solver name: its own check says so
    why = solves_rectangular(solver)
    if why is None:
        return None
    able = ", ".join(name for name in SOLVERS if solves_rectangular(name) is None)
    return f"--populations 2: meta-solver {solver} cannot solve the seat-0 x seat-1 meta-game ({why}); use one of: {able}"


def check_populations(config: RunConfig) -> None:
    """`populations_refusal` as a ConfigError, before a session is recorded."""
    refusal = populations_refusal(config.populations, config.oracle, config.solver)
    if refusal:
        raise ConfigError(refusal)


def check_oracle_serves(oracle: str, spec: Any) -> None:
    """An oracle that cannot serve the game (its declared needs) fails here, before a session is recorded."""
    refusal = game_refusal(oracle, spec)
    if refusal:
        raise ConfigError(refusal)


def new_engine(
    config: RunConfig,
    *,
    store: SessionStore | None = None,
    reviewer: Reviewer | None = None,
    spec: Any = None,
    oracle: Oracle | None = None,
    evaluator: Evaluator | None = None,
    meta_solve: MetaSolve | None = None,
    session_id: str | None = None,
    key_trust: KeyTrust | None = None,
) -> Engine:
    """An engine for a new session, recorded under `store` (None: not recorded).

    `key_trust`: where the user lets an LLM oracle's API key go (the command line's
    `--base-url`, `--api-key-env`, `--trust-base-url`); None: the environment and the
    user's own config only."""
    if meta_solve is None:
        _check_solver(config.solver)
    check_populations(config)
    if config.seed is None:
        # Chosen here, recorded in session_started: policies only ever see
        # seeds derived from it by a keyed hash, so they cannot predict them.
        config = dataclasses.replace(config, seed=new_master_seed())
    reviewer = reviewer or make_reviewer(config.review)
    spec, oracle, evaluator = _parts(config, spec, oracle, evaluator, key_trust)
    check_seed_policies(config, spec)
    writer = None
    if store is not None:
        writer = store.create(session_id or store.new_session_id(config.game, config.oracle))
    return Engine(
        config=config,
        spec=spec,
        oracle=oracle,
        reviewer=reviewer,
        evaluator=evaluator,
        writer=writer,
        meta_solve=meta_solve,
        versions=software_versions(),
        session_id=writer.session_id if writer else session_id,
    )


def recorded_config(state: SessionState) -> RunConfig:
    """The configuration a session was started with (and resumed with since)."""
    if state.started is None:
        raise ConfigError("the session has no session_started event")
    known = {k: v for k, v in state.config.items() if k in RunConfig.__dataclass_fields__}
    # Secrets were never recorded; the oracle reads them from its environment again.
    known["oracle_options"] = {k: v for k, v in known.get("oracle_options", {}).items() if v != REDACTED}
    return RunConfig.from_dict(known, source=f"session {state.started.session_id}")


def resume_config(state: SessionState, overrides: Mapping[str, Any]) -> RunConfig:
    """The recorded configuration with the allowed overrides applied.

    Changing what defines the session (game, oracle, solver, seed,
    episodes...) is refused: its matrix and seeds would no longer agree.
    """
    config = recorded_config(state)
    merged = config.to_dict()
    for key, value in overrides.items():
        if value is None or merged.get(key) == value:
            continue
        if key not in RESUMABLE_OVERRIDES:
            raise ConfigError(
                f"--{key.replace('_', '-')} {value!r} differs from the session's {merged.get(key)!r}; "
                f"a resumed session may only change {', '.join(sorted(RESUMABLE_OVERRIDES))}"
            )
        merged[key] = value
    return RunConfig.from_dict(merged, source="resumed configuration")


def resume_engine(
    session: str,
    *,
    store: SessionStore,
    overrides: Mapping[str, Any] | None = None,
    reviewer: Reviewer | None = None,
    spec: Any = None,
    oracle: Oracle | None = None,
    evaluator: Evaluator | None = None,
    meta_solve: MetaSolve | None = None,
    key_trust: KeyTrust | None = None,
) -> tuple[Engine, list[LogWarning]]:
    """An engine that continues a recorded session from its last complete event.

    The session's model settings are reused, but its base URL and api_key_env are the
    file's, not the user's: a key goes there only if `key_trust` allows it (see `new_engine`)."""
    writer, log = store.open_for_append(session)
    try:
        state = fold(log.events)
        config = resume_config(state, overrides or {})
        if reviewer is None:
            reviewer = make_reviewer(config.review)
            if isinstance(reviewer, ScriptReviewer):
                # The script's first decisions were given before the stop.
                # One line per decision, except the verdict on the script's own edit (the edit line decided it).
                reviewer.skip(sum(1 for p in state.proposals.values()
                                  if p.decision and p.decision.decided_by == reviewer.name
                                  and p.edited_by != reviewer.name))
        spec, oracle, evaluator = _parts(config, spec, oracle, evaluator, key_trust)
    except BaseException:
        writer.close()
        raise
    engine = Engine(
        config=config,
        spec=spec,
        oracle=oracle,
        reviewer=reviewer,
        evaluator=evaluator,
        writer=writer,
        state=state,
        meta_solve=meta_solve,
        versions=software_versions(),
    )
    if log.torn_offset is not None:
        engine.mark_resumed_after_torn_line()
    return engine, log.warnings


# Shared by `csro run` and `csro sweep` (which checks every cell before anything runs).
def check_offline_oracle_options(oracle: str, given: dict[str, Any]) -> None:
    """A mistyped --oracle-option for an offline oracle is an error, not silently ignored."""
    if oracle not in OFFLINE_ORACLE_OPTIONS:
        return  # the LLM and evolve oracles check their own options
    known = OFFLINE_ORACLE_OPTIONS[oracle]
    unknown = sorted(set(given) - set(known))
    if unknown:
        hint = did_you_mean(unknown[0], known) if len(unknown) == 1 else ""
        takes = f"it takes {', '.join(known)}" if known else "it takes none"
        raise ConfigError(f"--oracle-option: the {oracle} oracle has no option {', '.join(unknown)}{hint} ({takes})")


def resolve_recorded_llm(options: dict[str, Any], store: Any) -> None:
    """`--llm recorded:SESSION` may name a session id under the sessions directory: make it a path."""
    backend = options.get("llm")
    if isinstance(backend, str) and backend.startswith("recorded:"):
        reference = backend[len("recorded:"):].strip()
        if reference:
            options["llm"] = f"recorded:{store.resolve(reference).resolve()}"
