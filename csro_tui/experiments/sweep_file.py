"""The sweep file: a grid of `csro run` configurations, each repeated.

    name = "leduc-oracles"      # names the sweep; its session ids start with it
    iterations = 20
    repeats = 3                 # or seeds = [1, 2, 3]: one session per seed
    [grid]                      # every combination of these csro.toml keys
    game = ["leduc_poker"]
    oracle = ["best-response", "evolve", "seed"]
    solver = ["nash", "prd"]
    [options]                   # csro.toml's own keys, for every session
    review = "auto"
    [oracle_options]            # as in csro.toml
    [llm]                       # as in csro.toml

Every problem is one line (a `ConfigError`) with a "did you mean" where a
name was mistyped, raised before anything runs: each cell's configuration
is built with `load_run_config` (as `csro run` builds its own, so the
config file and environment layers apply beneath the sweep's settings) and
its game, oracle, solver and seed policies are looked up.
"""

from __future__ import annotations

import hashlib
import itertools
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from csro_tui.errors import ConfigError, CsroError

SWEEP_KEYS = ("name", "iterations", "repeats", "seeds", "grid", "options", "oracle_options", "llm")
# Settings a sweep decides itself, not per cell.
SWEEP_OWNED = ("sessions_dir", "seed", "iterations", "backend", "ray_address")
_SLUG = re.compile(r"[^A-Za-z0-9_.-]+")


def slug(text: str) -> str:
    return _SLUG.sub("_", str(text)).strip("_.-") or "x"


@dataclass(frozen=True)
class Cell:
    """One session of the sweep: a configuration of the grid and its repeat."""

    session_id: str
    label: str  # the grid values, e.g. "game=kuhn_poker oracle=seed"
    grid: dict[str, Any]  # the grid values of this configuration
    repeat: int  # 1-based
    config: dict[str, Any]  # the full RunConfig (to_dict), sessions_dir excluded

    def to_dict(self) -> dict[str, Any]:
        return {"session": self.session_id, "label": self.label, "grid": self.grid, "repeat": self.repeat,
                "config": self.config}


@dataclass(frozen=True)
class Sweep:
    name: str
    path: Path
    content_hash: str  # sha256 of the file's bytes
    iterations: int
    repeats: int
    seeds: list[int] | None
    grid: dict[str, list[Any]]
    cells: list[Cell] = field(default_factory=list)

    @property
    def configurations(self) -> int:
        return len(self.cells) // max(1, self.repeats)


def _where(path: Path, key: str) -> str:
    return f"sweep file {path}: {key}"


def read_sweep(path: str | Path, *, config_file: str | Path | None = None, env: Any = None) -> Sweep:
    """Parse and check a sweep file; every cell's configuration resolved."""
    from csro_tui.names import did_you_mean  # start-up time: loaded only when this runs

    path = Path(path)
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise ConfigError(f"sweep file {path}: no such file") from None
    except OSError as error:
        raise ConfigError(f"sweep file {path}: cannot read ({error.strerror})") from None
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as error:
        raise ConfigError(f"sweep file {path}: not valid TOML ({error})") from None
    for key in data:
        if key not in SWEEP_KEYS:
            from csro_tui.config import FIELDS  # start-up time: loaded only when this runs

            if key in FIELDS:
                hint = " (a csro.toml setting: put it under [options], or under [grid] to vary it)"
            else:
                hint = did_you_mean(key, SWEEP_KEYS)
            raise ConfigError(f"sweep file {path}: unknown key {key!r}{hint} (known: {', '.join(SWEEP_KEYS)})")
    name = data.get("name")
    if not isinstance(name, str) or not name.strip():
        raise ConfigError(f"sweep file {path}: name = \"...\" is missing (it names the sweep and its sessions)")
    iterations = data.get("iterations", 10)
    if isinstance(iterations, bool) or not isinstance(iterations, int) or iterations < 0:
        raise ConfigError(f"{_where(path, 'iterations')} must be a whole number >= 0, not {iterations!r}")
    seeds = data.get("seeds")
    if "repeats" in data and seeds is not None:
        raise ConfigError(f"sweep file {path}: give repeats or seeds, not both (seeds = [..] is one session per seed)")
    if seeds is not None:
        if (not isinstance(seeds, list) or not seeds
                or not all(isinstance(s, int) and not isinstance(s, bool) and s >= 0 for s in seeds)):
            raise ConfigError(f"{_where(path, 'seeds')} must be a non-empty list of whole numbers >= 0, not {seeds!r}")
        if len(set(seeds)) != len(seeds):
            raise ConfigError(f"{_where(path, 'seeds')} repeats a seed: {seeds!r}")
        repeats = len(seeds)
    else:
        repeats = data.get("repeats", 1)
        if isinstance(repeats, bool) or not isinstance(repeats, int) or repeats < 1:
            raise ConfigError(f"{_where(path, 'repeats')} must be a whole number >= 1, not {repeats!r}")
    grid = data.get("grid", {})
    options = data.get("options", {})
    for table, value in (("grid", grid), ("options", options), ("oracle_options", data.get("oracle_options", {})),
                         ("llm", data.get("llm", {}))):
        if not isinstance(value, dict):
            raise ConfigError(f"sweep file {path}: {table} must be a table ([{table}])")
    _check_setting_keys(path, "grid", grid)
    _check_setting_keys(path, "options", options)
    for key in set(grid) & set(options):
        raise ConfigError(f"sweep file {path}: {key} is both in [grid] and [options]; keep one")
    axes: dict[str, list[Any]] = {}
    for key, values in grid.items():
        values = values if isinstance(values, list) else [values]
        if not values:
            raise ConfigError(f"sweep file {path}: [grid] {key} is empty, so the grid has no cell")
        if len({repr(v) for v in values}) != len(values):
            raise ConfigError(f"sweep file {path}: [grid] {key} lists a value twice: {values!r}")
        axes[key] = values
    cells = _cells(path, slug(name), axes, options, data, iterations, repeats, seeds, config_file, env)
    return Sweep(name=name, path=path, content_hash=hashlib.sha256(raw).hexdigest(), iterations=iterations,
                 repeats=repeats, seeds=seeds, grid=axes, cells=cells)


def _check_setting_keys(path: Path, table: str, values: dict[str, Any]) -> None:
    from csro_tui.config import FIELDS  # start-up time: loaded only when this runs
    from csro_tui.names import did_you_mean  # start-up time: loaded only when this runs

    settable = [k for k in FIELDS if k not in SWEEP_OWNED]
    for key in values:
        if key in SWEEP_OWNED:
            where = {"sessions_dir": "--sessions-dir on the command line",
                     "seed": "seeds = [...] at the top level", "iterations": "iterations = N at the top level",
                     "backend": "csro sweep --backend", "ray_address": "csro sweep --ray-address"}[key]
            raise ConfigError(f"sweep file {path}: [{table}] {key}: the sweep sets it ({where})")
        if key not in FIELDS:
            raise ConfigError(f"sweep file {path}: [{table}] unknown setting {key!r}{did_you_mean(key, settable)} "
                              f"(csro.toml's keys: {', '.join(settable)})")


def _cells(path: Path, prefix: str, axes: dict[str, list[Any]], options: dict[str, Any], data: dict[str, Any],
           iterations: int, repeats: int, seeds: list[int] | None, config_file: Any, env: Any) -> list[Cell]:
    from csro_tui.config import load_run_config  # start-up time: loaded only when this runs

    keys = list(axes)
    cells: list[Cell] = []
    seen: set[str] = set()
    for values in itertools.product(*(axes[k] for k in keys)) if keys else [()]:
        grid = dict(zip(keys, values))
        settings: dict[str, Any] = {**options, **grid, "iterations": iterations}
        oracle_options = {**data.get("oracle_options", {}), **(grid.get("oracle_options") or {})}
        if oracle_options:
            settings["oracle_options"] = oracle_options
        if data.get("llm"):
            settings["llm"] = data["llm"]
        label = " ".join(f"{k}={_text(v)}" for k, v in grid.items()) or "all"
        try:
            config = load_run_config(settings, config_file=config_file, env=env)
            _check_names(config)
        except CsroError as error:  # an unknown game, oracle, solver or seed policy too
            raise ConfigError(f"sweep file {path}: [{label}] {_strip_flag_source(str(error))}") from None
        base = "-".join(slug(_text(v)) for v in values) or "run"
        for repeat in range(1, repeats + 1):
            session_id = f"{prefix}-{base}-r{repeat}"
            if session_id in seen:  # values that differ only in characters a slug drops
                session_id = f"{prefix}-{base}-{len(cells)}-r{repeat}"
            seen.add(session_id)
            cell_config = config.to_dict()
            cell_config.pop("sessions_dir")
            if seeds is not None:
                cell_config["seed"] = seeds[repeat - 1]
            cells.append(Cell(session_id, label, grid, repeat, cell_config))
    return cells


def _text(value: Any) -> str:
    return value if isinstance(value, str) else repr(value)


def _strip_flag_source(message: str) -> str:
    """load_run_config names a setting's source as its flag (`--game: ...`); in a sweep file it is the key."""
    return re.sub(r"^--([a-z-]+): ", lambda m: m.group(1).replace("-", "_") + ": ", message)


def _check_names(config: Any) -> None:
    """Game, oracle, solver and seed policies exist; offline oracles' options are theirs;
    `populations = 2` has an oracle and solver that support it."""
    from csro_tui.engine.setup import (  # start-up time: loaded only when this runs
        _check_solver,
        check_offline_oracle_options,
        check_populations,
        check_seed_policies,
    )
    from csro_tui.games.registry import get_game  # start-up time: loaded only when this runs
    from csro_tui.oracles.registry import oracle_factory  # start-up time: loaded only when this runs

    spec = get_game(config.game)
    oracle_factory(config.oracle)
    _check_solver(config.solver)
    check_seed_policies(config, spec)
    check_offline_oracle_options(config.oracle, config.oracle_options)
    check_populations(config)
