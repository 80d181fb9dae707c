"""Where an API key may be sent: only to endpoints the user named (issue 35).

A `csro.toml` in a checkout, a `--config` file, a sweep file and a recorded
session are files from elsewhere: they may set `base_url` (where requests
go) and `api_key_env` (which environment variable is sent as the key), but
neither may send a key anywhere on its own.  A key read from the
environment goes only to an endpoint whose origin (scheme, host, port) the
user gave on the command line (`--base-url`), in the environment
(`OPENAI_BASE_URL`, `CSRO_LLM_BASE_URL`, `CSRO_BASE_URL`) or in the user's own
config (`~/.config/csro/config.toml`: `base_url`, or `[trust] base_urls`), or
to OpenAI's own API (the default); and only from a variable the user chose
the same way (`--api-key-env`, `api_key_env` in the user config or `[trust]
api_key_envs`) or the default ones (`OPENAI_API_KEY`, `CSRO_LLM_API_KEY`).
`--trust-base-url` confirms a run's settings once.  `KeyTrust.refusal` is the
check; `LLMClient` makes it before it builds anything that could send a key.
"""

from __future__ import annotations

import dataclasses
import os
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping
from urllib.parse import urlsplit

from csro_tui.errors import ConfigError

OPENAI_BASE_URL = "https://api.openai.com/v1"
# The variables a key is read from when nothing names another (in this order).
DEFAULT_KEY_VARIABLES = ("OPENAI_API_KEY", "CSRO_LLM_API_KEY")
# The variables that set where the model is served; the user's own environment.
BASE_URL_VARIABLES = ("OPENAI_BASE_URL", "CSRO_LLM_BASE_URL", "CSRO_BASE_URL")
# The user's own config file, below $XDG_CONFIG_HOME (default ~/.config).
USER_CONFIG_PARTS = ("csro", "config.toml")
TRUST_TABLE = "trust"
CONFIRM_FLAG = "--trust-base-url"


def user_config_path(env: Mapping[str, str] | None = None) -> Path:
    """`$XDG_CONFIG_HOME/csro/config.toml`, else `~/.config/csro/config.toml`."""
    env = os.environ if env is None else env
    base = env.get("XDG_CONFIG_HOME") or str(Path(env.get("HOME") or Path.home()) / ".config")
    return Path(base).joinpath(*USER_CONFIG_PARTS)


def read_user_config(env: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The user's own config file as a table ({} when there is none); one-line `ConfigError` if unreadable."""
    path = user_config_path(env)
    try:
        with open(path, "rb") as handle:
            data = tomllib.load(handle)
    except FileNotFoundError:
        return {}
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"user config {path}: {error}") from None
    except OSError as error:
        raise ConfigError(f"user config {path}: cannot read ({error.strerror})") from None
    trust = data.get(TRUST_TABLE, {})
    if not isinstance(trust, Mapping) or any(
        not isinstance(trust.get(key, []), list) or not all(isinstance(v, str) for v in trust.get(key, []))
        for key in ("base_urls", "api_key_envs")
    ):
        raise ConfigError(f"user config {path}: [trust] base_urls and api_key_envs must be lists of text")
    return data


def origin(url: str) -> str:
    """scheme://host:port of `url` (the port made explicit), lower case; "" if it has no host."""
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError:
        return ""
    host = (parts.hostname or "").lower()
    if not host:
        return ""
    scheme = parts.scheme.lower()
    port = port or {"http": 80, "https": 443}.get(scheme, 0)
    host = f"[{host}]" if ":" in host else host
    return f"{scheme}://{host}:{port}"


def host_of(url: str) -> str:
    """The host of `url` with its port if it names one (never credentials), for messages."""
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError:
        return "an unreadable URL"
    host = parts.hostname or "no host"
    host = f"[{host}]" if ":" in host else host
    return f"{host}:{port}" if port else host


@dataclass(frozen=True)
class KeyTrust:
    """The endpoints (origins) and key variables the user named; `confirmed`: `--trust-base-url`."""

    origins: frozenset[str] = frozenset()
    key_variables: frozenset[str] = frozenset()
    confirmed: bool = False

    @classmethod
    def of_user(
        cls,
        env: Mapping[str, str] | None = None,
        *,
        base_urls: Iterable[str | None] = (),
        key_variables: Iterable[str | None] = (),
        confirmed: bool = False,
    ) -> "KeyTrust":
        """What the user named: `base_urls`/`key_variables` from the command line (or typed in
        the TUI), plus the environment and the user's own config."""
        env = os.environ if env is None else env
        user = read_user_config(env)
        trust = user.get(TRUST_TABLE, {})
        # The user config's settings, at its top level or under [run] (as csro.toml's).
        settings = {**user, **user["run"]} if isinstance(user.get("run"), Mapping) else user

        def table(name: str) -> Mapping[str, Any]:
            return settings[name] if isinstance(settings.get(name), Mapping) else {}

        urls = [OPENAI_BASE_URL, *base_urls, *(env.get(name) for name in BASE_URL_VARIABLES),
                settings.get("base_url"), table("llm").get("base_url"), *trust.get("base_urls", [])]
        variables = [*DEFAULT_KEY_VARIABLES, *key_variables, table("oracle_options").get("api_key_env"),
                     *trust.get("api_key_envs", [])]
        return cls(
            origins=frozenset(filter(None, (origin(u) for u in urls if isinstance(u, str)))),
            key_variables=frozenset(v for v in variables if isinstance(v, str) and v),
            confirmed=confirmed,
        )

    def naming(self, base_url: str | None) -> "KeyTrust":
        """This trust and `base_url`, which the user just named (typed in the TUI's form)."""
        found = origin(base_url or "")
        return dataclasses.replace(self, origins=self.origins | {found}) if found else self

    def refusal(self, base_url: str, key_variable: str) -> str | None:
        """Why the key in `key_variable` must not go to `base_url` (one line saying what to do), or None."""
        if self.confirmed:
            return None
        where = str(user_config_path()).replace(str(Path.home()), "~", 1)
        if key_variable not in self.key_variables:
            return (f"not sending {key_variable} to {host_of(base_url)}: api_key_env came from a file, not from you; "
                    f"name it (--api-key-env {key_variable}) or confirm ({CONFIRM_FLAG}, or [trust] api_key_envs "
                    f"in {where})")
        if origin(base_url) not in self.origins:
            return (f"not sending {key_variable} to {host_of(base_url)}: that base URL came from a file, not from "
                    f"you; name it (--base-url, or type it in the TUI's Base URL field) or confirm ({CONFIRM_FLAG}, or [trust] base_urls "
                    f"in {where})")
        return None
