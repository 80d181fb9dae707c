"""Run configuration: defaults < user config < config file < environment < command-line flags.

The config file is TOML (keys as in `RunConfig`, at the top level or under
`[run]`, plus the tables `[oracle_options]` and `[llm]`), found at
`--config FILE`, else `$CSRO_CONFIG`, else `./csro.toml` if it exists.
Below it, the user's own config (`~/.config/csro/config.toml`, the same keys,
plus `[trust]`: `oracles.llm.keys`), the one file trusted to say where an API
key may go; a project's file or a session may not (issue 35).
Environment variables are `CSRO_<FIELD>` in upper case (e.g.
`CSRO_ITERATIONS`, `CSRO_SESSIONS_DIR`, `CSRO_MODEL`, `CSRO_BASE_URL`).

The LLM client's settings go through the same layers: `[llm]` in the file,
then `CSRO_LLM_<FIELD>` (and `OPENAI_BASE_URL`) in the environment, then the
flags (`--model`, `--base-url`, `--temperature`, ... and `--oracle-option`).
The model and base URL are resolved here, into `RunConfig.model` and
`base_url` (recorded with the session); the other `[llm]` keys stay in
`RunConfig.llm`, the file layer under which the client puts the environment
and the flags (`LLMConfig.from_sources`).
API keys are never part of the configuration: the LLM client reads them from
its own environment variable, and nothing here records them.
"""

from __future__ import annotations

import dataclasses
import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from csro_tui.booleans import parse_boolean
from csro_tui.errors import ConfigError
from csro_tui.names import did_you_mean
from csro_tui.oracles.llm.client import llm_env_value, llm_table_values
from csro_tui.oracles.llm.keys import TRUST_TABLE, read_user_config, user_config_path

CONFIG_ENV = "CSRO_CONFIG"
# Evaluation backends (RunConfig.backend); "ray" needs the ray extra.
BACKENDS = ("local", "ray")
DEFAULT_CONFIG_FILE = "csro.toml"
ENV_PREFIX = "CSRO_"
# LLM settings that are run fields: the model and where it is served.
LLM_RUN_FIELDS = ("model", "base_url")


@dataclass
class RunConfig:
    """Everything that determines a run (recorded in the session's first event)."""

    game: str = "kuhn_poker"
    oracle: str = "best-response"
    iterations: int = 10  # oracle iterations, after the initial population
    solver: str = "nash"
    review: str = "auto"  # "auto", "auto:THRESHOLD", "valid" or "script:FILE"
    # Master seed of the session; None: a fresh secret one (os.urandom), chosen
    # and recorded when the session starts (so it replays exactly).
    seed: int | None = None
    # Episodes per payoff entry (sampled games); None: the game's default.
    # Exact games (Kuhn, Leduc) compute entries exactly and ignore it.
    episodes: int | None = None
    # Episodes of the validation smoke match against each member; None: 2, or
    # 1 for long repeated games (one rrps episode is a whole 1000-throw match).
    smoke_episodes: int | None = None
    # Episodes of the preview against each member (sampled games); None:
    # reuse the smoke matches.  Exact games preview exactly.
    preview_episodes: int | None = None
    # Population metrics against the game's benchmark bots: "auto" (for sampled
    # games that have a benchmark), "on" or "off"; episodes per bot.
    benchmark: str = "auto"
    # 20, what `csro eval` plays per bot in rrps and repeated_leduc, so the
    # run's AggScore and eval's agree within their stated errors (issue 16:
    # with 2, one seat-swapped pair, a uniform-random copy scored -76 in the
    # run against -12 ± 14 in eval; with 20, -21 ± 15).
    benchmark_episodes: int = 20
    preview_benchmark: bool = True  # also score each candidate against the bots
    # Initial population: seed policy names; empty means the game's first seed.
    seed_policies: list[str] = field(default_factory=list)
    # Oracle attempts per iteration: after this many rejections the
    # iteration ends without a new policy and the run moves on.
    max_attempts: int = 3
    # 1: one population whose members play both seats (the CSRO paper); 2: one
    # population per seat, as OpenSpiel's psro_v2 (issue 23; docs/ARCHITECTURE.md).
    populations: int = 1
    workers: int | None = None  # evaluation processes; None: the evaluator decides
    # Where sampled matches are played: "local" (processes on this machine) or
    # "ray" (actors on the Ray cluster at ray_address; "" = $RAY_ADDRESS or a
    # Ray started here).  Same seeds, same results on either.
    backend: str = "local"
    ray_address: str = ""
    sessions_dir: str = "sessions"
    model: str = ""  # for LLM oracles (recorded; no key)
    base_url: str = ""
    oracle_options: dict[str, Any] = field(default_factory=dict)
    # The config file's [llm] table without model and base_url (those are the
    # fields above): the LLM client's settings below the environment and flags.
    llm: dict[str, Any] = field(default_factory=dict)
    # The sandbox's limits (policies.sandbox.SandboxLimits); None: its default,
    # given in brackets.  Per call: move_timeout [1 s] (act, __init__),
    # init_timeout [10 s] (the module's code).  The chess clock, pooled over
    # the episodes a host plays at once: move_budget [0.02 s] per decision
    # plus budget_reserve [2 s]; init_budget [0.2 s] per episode for the
    # module's code and __init__.  Memory: memory_mb [1024] per host,
    # episode_memory_mb [8] per episode (a host plays (memory_mb - 128) /
    # episode_memory_mb episodes at once).
    move_timeout: float | None = None
    init_timeout: float | None = None
    move_budget: float | None = None
    budget_reserve: float | None = None
    init_budget: float | None = None
    memory_mb: int | None = None
    episode_memory_mb: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def to_record(self) -> dict[str, Any]:
        """`to_dict` safe to record: secrets in oracle options and the base URL are removed."""
        data = self.to_dict()
        data["oracle_options"] = redact(data["oracle_options"])
        data["llm"] = redact(data["llm"])
        data["base_url"] = strip_credentials(data["base_url"])
        if data["populations"] == 1:
            del data["populations"]  # one population: recorded as before issue 23 (absent = 1)
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, source: str = "configuration") -> "RunConfig":
        config = cls()
        for key, value in data.items():
            _set(config, key, value, source)
        config.check()
        return config

    def check(self) -> None:
        """Reject values that cannot work, with the field's name."""
        if self.iterations < 0:
            raise ConfigError(f"iterations must be >= 0, not {self.iterations}")
        if self.max_attempts < 1:
            raise ConfigError(f"max_attempts must be >= 1, not {self.max_attempts}")
        if self.populations not in (1, 2):
            raise ConfigError(f"populations must be 1 or 2, not {self.populations}")
        for name in ("episodes", "smoke_episodes", "preview_episodes", "workers"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise ConfigError(f"{name} must be >= 1, not {value}")
        if self.benchmark_episodes < 1:
            raise ConfigError(f"benchmark_episodes must be >= 1, not {self.benchmark_episodes}")
        for name in SANDBOX_LIMIT_FIELDS:
            value = getattr(self, name)
            if value is not None and not value > 0:
                raise ConfigError(f"{name} must be > 0, not {value}")
        if self.backend not in BACKENDS:
            raise ConfigError(f"backend must be {' or '.join(BACKENDS)}, not {self.backend!r}")
        if self.benchmark not in ("auto", "on", "off"):
            raise ConfigError(f"benchmark must be auto, on or off, not {self.benchmark!r}")
        if not (self.review in ("auto", "valid") or (self.review.startswith("script:") and len(self.review) > 7)
                or (self.review.startswith("auto:") and len(self.review) > 5)):
            raise ConfigError(f"review must be auto, auto:THRESHOLD, valid or script:FILE, not {self.review!r}")


FIELDS = {f.name: f for f in dataclasses.fields(RunConfig)}
# RunConfig fields that are SandboxLimits fields of the same name.
SANDBOX_LIMIT_FIELDS = (
    "move_timeout", "init_timeout", "move_budget", "budget_reserve", "init_budget", "memory_mb", "episode_memory_mb",
)

# Option names that may hold a credential; their values are never recorded.
_SECRET_WORDS = ("key", "token", "secret", "password", "credential", "auth")
REDACTED = "<redacted>"


def _secret_name(name: object) -> bool:
    text = str(name).lower()
    # "api_key_env" names the variable that holds the key, not the key itself;
    # "max_tokens" and the like count tokens (resume needs them), "author" is a name.
    if text.endswith(("_env", "tokens")) or text == "author":
        return False
    return any(word in text for word in _SECRET_WORDS)


def redact(value: Any) -> Any:
    """A copy of `value` with every secret-looking entry of a mapping replaced."""
    if isinstance(value, dict):
        return {k: REDACTED if _secret_name(k) else redact(v) for k, v in value.items()}
    if isinstance(value, list):
        return [redact(v) for v in value]
    return value


def strip_credentials(url: str) -> str:
    """The URL without a user:password@ part."""
    from urllib.parse import urlsplit, urlunsplit

    if not url or "@" not in url:
        return url
    parts = urlsplit(url)
    host = parts.netloc.rsplit("@", 1)[-1]
    return urlunsplit((parts.scheme, host, parts.path, parts.query, parts.fragment))


def _set(config: RunConfig, key: str, value: Any, source: str) -> None:
    if key not in FIELDS:
        raise ConfigError(f"{source}: unknown setting {key!r}{did_you_mean(key, FIELDS)} (known: {', '.join(FIELDS)})")
    value = _coerce(key, value, source)
    if key == "llm":
        value = llm_table_values(value, source)
        for name in LLM_RUN_FIELDS:
            if name in value:
                raise ConfigError(f"{source}: [llm] {name} belongs in the run settings here, not in the llm table")
    if isinstance(value, dict):
        # A table is layered key by key: `--oracle-option a=1` keeps the file's `b`.
        value = {**getattr(config, key), **value}
    setattr(config, key, value)


def _coerce(key: str, value: Any, source: str) -> Any:
    """Convert `value` (from TOML, the environment or a flag) to the field's type."""
    annotation = str(FIELDS[key].type)
    optional = "None" in annotation
    if value is None:
        if optional:
            return None
        raise ConfigError(f"{source}: {key} cannot be empty")
    if isinstance(value, str) and optional and value.strip().lower() in ("", "none", "default"):
        return None

    def bad(kind: str) -> ConfigError:
        return ConfigError(f"{source}: {key}={value!r} is not {kind}")

    if annotation.startswith("int"):
        if isinstance(value, bool):
            raise bad("an integer")
        try:
            return int(value)
        except (TypeError, ValueError):
            raise bad("an integer") from None
    if annotation.startswith("float"):
        if isinstance(value, bool):
            raise bad("a number")
        try:
            number = float(value)
        except (TypeError, ValueError):
            raise bad("a number") from None
        if number != number or number in (float("inf"), float("-inf")):
            raise bad("a finite number")
        return number
    if annotation.startswith("bool"):
        parsed = parse_boolean(value)
        if parsed is None:
            raise bad("true or false")
        return parsed
    if annotation.startswith("list"):
        if isinstance(value, str):
            return [part.strip() for part in value.split(",") if part.strip()]
        if isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
            return list(value)
        raise bad("a list of names")
    if annotation.startswith("dict"):
        if isinstance(value, dict):
            return dict(value)
        raise bad("a table")
    if not isinstance(value, str):
        raise bad("text")
    return value


def find_config_file(explicit: str | Path | None, env: Mapping[str, str]) -> Path | None:
    if explicit:
        return Path(explicit)
    if env.get(CONFIG_ENV):
        return Path(env[CONFIG_ENV])
    default = Path(DEFAULT_CONFIG_FILE)
    return default if default.is_file() else None


def read_config_file(path: Path) -> dict[str, Any]:
    try:
        with open(path, "rb") as handle:
            data = tomllib.load(handle)
    except FileNotFoundError:
        raise ConfigError(f"config file {path}: no such file") from None
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"config file {path}: {error}") from None
    except OSError as error:
        raise ConfigError(f"config file {path}: cannot read ({error.strerror})") from None
    if isinstance(data.get("run"), dict):
        # [run] beside other tables ([llm], [oracle_options]) or keys: all of them count.
        run = data.pop("run")
        for key in set(run) & set(data):
            raise ConfigError(f"config file {path}: {key} is set twice (at the top level and in [run]); keep one")
        data = {**data, **run}
    return data


def _split_llm_table(data: dict[str, Any], source: str) -> dict[str, Any]:
    """The file's settings with [llm] model/base_url moved to the run settings (checked for clashes)."""
    if "llm" not in data:
        return data
    table = llm_table_values(data["llm"], source)
    data = {**data, "llm": {k: v for k, v in table.items() if k not in LLM_RUN_FIELDS}}
    for name in LLM_RUN_FIELDS:
        if name in table:
            if name in data:
                raise ConfigError(f"{source}: {name} is set twice (in the run settings and in [llm]); keep one")
            data[name] = table[name]
    return data


def env_settings(env: Mapping[str, str]) -> dict[str, str]:
    """`CSRO_<FIELD>` variables, by field name (CSRO_CONFIG is the file, not a field)."""
    settings = {}
    for name in FIELDS:
        variable = ENV_PREFIX + name.upper()
        if variable in env and name not in ("oracle_options", "llm"):
            settings[name] = env[variable]
    # The LLM client's own variables for the model and where it is served
    # (CSRO_LLM_MODEL; OPENAI_BASE_URL, CSRO_LLM_BASE_URL): the same layer.
    for name in LLM_RUN_FIELDS:
        value = llm_env_value(name, env)
        if name not in settings and value is not None:
            settings[name] = value
    return settings


def load_run_config(
    flags: Mapping[str, Any] | None = None,
    *,
    config_file: str | Path | None = None,
    env: Mapping[str, str] | None = None,
) -> RunConfig:
    """Merge the layers; `flags` holds only the flags the user gave (None = not given)."""
    env = os.environ if env is None else env
    config = RunConfig()
    user_path = user_config_path(env)
    if user_path.is_file():
        read_user_config(env)  # its [trust] table checked (one line if wrong)
        user = read_config_file(user_path)
        user.pop(TRUST_TABLE, None)
        for key, value in _split_llm_table(user, f"user config {user_path}").items():
            _set(config, key, value, f"user config {user_path}")
    path = find_config_file(config_file, env)
    if path is not None and path.resolve() != user_path.resolve():
        data = read_config_file(path)
        if TRUST_TABLE in data:
            raise ConfigError(f"config file {path}: [{TRUST_TABLE}] counts only in your own config {user_path}, "
                              "never in a project's file")
        for key, value in _split_llm_table(data, f"config file {path}").items():
            _set(config, key, value, f"config file {path}")
    for key, value in env_settings(env).items():
        _set(config, key, value, f"environment {ENV_PREFIX}{key.upper()}")
    for key, value in (flags or {}).items():
        if value is not None:
            _set(config, key, value, f"--{key.replace('_', '-')}")
    config.check()
    return config
