"""The one way the LLM oracles talk to a model: a bounded, recorded chat client.

`LLMClient.complete(messages, purpose=...)` streams a chat completion from any
OpenAI-compatible endpoint (OpenAI, Ollama, vLLM, llama.cpp, LM Studio ...)
through the official `openai` SDK.  The retry policy is ours, not the SDK's:
bounded retries with backoff on 429 (honouring Retry-After), 5xx, connection
errors, timeouts and streams cut before they finished; no retry on 401/403/404
or other rejected requests.  Every call, failed ones included, becomes an
`LLMCall` record (JSON-serialisable, never containing the API key) kept on the
client, so the UI can show usage and the session log can replay it later
(`csro_tui.oracles.llm.recorded.RecordedLLM`).

Failures raise `LLMError` with a `kind` and a one-line message.  Settings
come from `LLMConfig.from_sources` (defaults < config file < env < flags).
"""

from __future__ import annotations

import email.utils
import ipaddress
import math
import os
import random
import re
import socket
import threading
import time
import tomllib
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Protocol
from urllib.parse import urlsplit, urlunsplit

from csro_tui.booleans import parse_boolean
from csro_tui.errors import ConfigError, CsroError, SessionError
from csro_tui.names import did_you_mean
from csro_tui.oracles.llm.keys import DEFAULT_KEY_VARIABLES, OPENAI_BASE_URL, KeyTrust, host_of

# Sent to servers that do not check keys (local servers), because the SDK
# refuses to run without one.
LOCAL_PLACEHOLDER_KEY = "not-needed"
REMOTE_TIMEOUT_S = 120.0
LOCAL_TIMEOUT_S = 900.0

# Approximate public list prices, USD per million tokens (input, output), used
# only for the cost estimate when the endpoint is OpenAI and no price is
# configured.  Unknown models get no estimate rather than a guessed one.
KNOWN_PRICES_PER_MTOK: dict[str, tuple[float, float]] = {
    "gpt-4o-mini": (0.15, 0.60),
    "gpt-4o": (2.50, 10.00),
    "gpt-4.1": (2.00, 8.00),
    "gpt-4.1-mini": (0.40, 1.60),
    "gpt-4.1-nano": (0.10, 0.40),
    "o3-mini": (1.10, 4.40),
    "o4-mini": (1.10, 4.40),
}

# Longest wait we accept from a Retry-After header: the retry budget stays
# bounded even if a server asks for minutes.
MAX_RETRY_AFTER_S = 60.0

# Request parameters some servers or models reject; on a 400 naming one of
# them the client adapts the request once and remembers it for later calls.
_ADAPTABLE_PARAMS = ("stream_options", "max_tokens", "temperature")


def estimate_tokens(text: str) -> int:
    """Rough token count (characters / 4), for budgets and missing usage."""
    return (len(text) + 3) // 4


def is_loopback_url(base_url: str) -> bool:
    """True when `base_url` is a server on this machine (localhost, 127.0.0.0/8, ::1)."""
    host = (urlsplit(base_url).hostname or "").lower()
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def is_openai_url(base_url: str) -> bool:
    """True when `base_url` points at OpenAI's own API (which needs a key)."""
    host = (urlsplit(base_url).hostname or "").lower()
    return host == "openai.com" or host.endswith(".openai.com")


def public_url(base_url: str) -> str:
    """`base_url` without credentials or query string, safe to show and record."""
    parts = urlsplit(base_url)
    host = parts.hostname or ""
    netloc = f"{host}:{parts.port}" if parts.port else host
    return urlunsplit((parts.scheme, netloc, parts.path.rstrip("/"), "", ""))


# --------------------------------------------------------------------- config
@dataclass(frozen=True)
class LLMConfig:
    """How to reach the model and how patient to be with it."""

    model: str = "gpt-4o-mini"
    base_url: str | None = None  # None -> OPENAI_BASE_URL env, else OpenAI
    api_key: str | None = field(default=None, repr=False)  # None -> OPENAI_API_KEY; never recorded
    temperature: float = 0.7
    max_tokens: int = 4096
    # Seconds to connect, and at most between two received chunks (the whole reply without
    # streaming). None: LOCAL_TIMEOUT_S for a server on this machine, where a CPU model reads a
    # 2,000-token prompt for minutes before its first token, else REMOTE_TIMEOUT_S.
    timeout: float | None = None
    max_retries: int = 3
    concurrency: int = 4
    input_price_per_mtok: float | None = None
    output_price_per_mtok: float | None = None
    stream: bool = True  # False: one plain request per attempt (for servers without streaming)
    # The environment variable `api_key` was read from (None: given in code, not read from the
    # environment): named in every error, and checked against `KeyTrust` before it is sent.
    api_key_env: str | None = None

    @classmethod
    def from_sources(
        cls,
        flags: Mapping[str, Any] | None = None,
        config_file: str | os.PathLike[str] | None = None,
        env: Mapping[str, str] | None = None,
        file_values: Mapping[str, Any] | None = None,
    ) -> "LLMConfig":
        """Merge settings: defaults < config file < environment < flags.

        The config file is TOML with an `[llm]` table whose keys are the
        field names (`model = "qwen2.5-coder"`, `base_url = "http://..."`);
        `file_values` is such a table already read (what `csro run` passes:
        `RunConfig.llm`, from csro.toml).  Environment: OPENAI_BASE_URL,
        OPENAI_API_KEY, and CSRO_LLM_<FIELD> for every field
        (CSRO_LLM_MODEL, CSRO_LLM_TEMPERATURE, ...).  Flags are field names
        (dashes allowed) mapped to values; None means unset.  Bad values
        raise `ConfigError` naming where they came from.
        """
        env = os.environ if env is None else env
        values: dict[str, Any] = {}
        if config_file is not None:
            values.update(_read_config_file(Path(config_file)))
        if file_values:
            values.update(llm_table_values(file_values, "[llm]"))
        for name, raw in _env_settings(env).items():
            values[name] = _coerce(name, raw, f"environment variable {_ENV_NAMES[name][0]}")
        for key, raw in (flags or {}).items():
            name = key.replace("-", "_")
            if name not in _FIELD_TYPES:
                raise ConfigError(f"unknown LLM setting {key!r}; known: {', '.join(_FIELD_TYPES)}")
            if raw is not None:
                values[name] = _coerce(name, raw, f"--{name.replace('_', '-')}")
        if "api_key" in values and (flags or {}).get("api_key") is None:
            values["api_key_env"] = next(name for name in _ENV_NAMES["api_key"] if env.get(name, "").strip())
        config = cls(**values)
        config.validate()
        return config

    def validate(self) -> None:
        """Raise `ConfigError` if any value has the wrong type or is out of range."""
        for name, kind in _FIELD_TYPES.items():
            value = getattr(self, name)
            if not _has_type(value, kind):
                shown = "<hidden>" if name == "api_key" else repr(value)
                raise ConfigError(f"LLM setting {name} must be {_TYPE_WORDS[kind.rstrip('?')]}, got {shown}")
        checks = [
            (bool(self.model.strip()), "model must not be empty"),
            (0.0 <= self.temperature <= 2.0, f"temperature must be in [0, 2], got {self.temperature}"),
            (self.max_tokens > 0, f"max_tokens must be positive, got {self.max_tokens}"),
            (self.timeout is None or self.timeout > 0, f"timeout must be positive, got {self.timeout}"),
            (self.max_retries >= 0, f"max_retries must be 0 or more, got {self.max_retries}"),
            (self.concurrency >= 1, f"concurrency must be at least 1, got {self.concurrency}"),
        ]
        for price_name in ("input_price_per_mtok", "output_price_per_mtok"):
            price = getattr(self, price_name)
            checks.append((price is None or price >= 0, f"{price_name} must be 0 or more, got {price}"))
        if self.base_url is not None:
            parts = urlsplit(self.base_url)
            checks.append(
                (
                    parts.scheme in ("http", "https") and bool(parts.hostname),
                    f"base_url must look like http://host:port/v1, got {public_url(self.base_url)!r}",
                )
            )
        for ok, message in checks:
            if not ok:
                raise ConfigError(message)

    def to_public_dict(self) -> dict[str, Any]:
        """The settings for a session log or the UI: no API key, no credentials in the URL."""
        data = {name: getattr(self, name) for name in _FIELD_TYPES if name != "api_key"}
        if self.base_url is not None:
            data["base_url"] = public_url(self.base_url)
        return data

    def resolved_timeout(self, base_url: str) -> float:
        """`timeout`, else the default for where `base_url` is (this machine or elsewhere)."""
        if self.timeout is not None:
            return self.timeout
        return LOCAL_TIMEOUT_S if is_loopback_url(base_url) else REMOTE_TIMEOUT_S

    def resolved_base_url(self, env: Mapping[str, str] | None = None) -> str:
        """The endpoint actually used: base_url, else OPENAI_BASE_URL, else OpenAI."""
        env = os.environ if env is None else env
        return (self.base_url or env.get("OPENAI_BASE_URL") or OPENAI_BASE_URL).rstrip("/")

    def prices(self, base_url: str) -> tuple[float | None, float | None]:
        """(input, output) USD per million tokens: configured, else known OpenAI list price."""
        known = (_known_price(self.model) if is_openai_url(base_url) else None) or (None, None)
        input_price = self.input_price_per_mtok if self.input_price_per_mtok is not None else known[0]
        output_price = self.output_price_per_mtok if self.output_price_per_mtok is not None else known[1]
        return input_price, output_price


def _known_price(model: str) -> tuple[float, float] | None:
    """List price of `model` or of the model a dated snapshot belongs to (gpt-4o-2024-08-06)."""
    if model in KNOWN_PRICES_PER_MTOK:
        return KNOWN_PRICES_PER_MTOK[model]
    base = re.sub(r"-\d{4}-\d{2}-\d{2}$", "", model)
    return KNOWN_PRICES_PER_MTOK.get(base)


_FIELD_TYPES: dict[str, str] = {
    "model": "str",
    "base_url": "str?",
    "api_key": "str?",
    "temperature": "float",
    "max_tokens": "int",
    "timeout": "float?",
    "max_retries": "int",
    "concurrency": "int",
    "input_price_per_mtok": "float?",
    "output_price_per_mtok": "float?",
    "stream": "bool",
}

# Environment variables per field, in order of preference.
_ENV_NAMES: dict[str, tuple[str, ...]] = {
    name: (f"CSRO_LLM_{name.upper()}",) for name in _FIELD_TYPES
} | {
    "base_url": ("OPENAI_BASE_URL", "CSRO_LLM_BASE_URL"),
    "api_key": DEFAULT_KEY_VARIABLES,
}


_TYPE_WORDS = {"str": "a string", "bool": "true or false", "int": "an integer", "float": "a number"}


def _has_type(value: Any, kind: str) -> bool:
    if value is None:
        return kind.endswith("?")
    base = kind.rstrip("?")
    if base == "str":
        return isinstance(value, str)
    if base == "bool":
        return isinstance(value, bool)
    if isinstance(value, bool):
        return False
    if base == "int":
        return isinstance(value, int)
    return isinstance(value, (int, float)) and math.isfinite(value)


def _env_settings(env: Mapping[str, str]) -> dict[str, str]:
    found: dict[str, str] = {}
    for name, env_names in _ENV_NAMES.items():
        for env_name in env_names:
            value = env.get(env_name)
            if value is not None and value.strip() != "":
                found[name] = value.strip()
                break
    return found


def _coerce(name: str, raw: Any, source: str) -> Any:
    """Convert a flag, env string or TOML value to the field's type."""
    kind = _FIELD_TYPES[name]
    shown = "<hidden>" if name == "api_key" else repr(raw)
    try:
        if kind.endswith("?") and (raw is None or (isinstance(raw, str) and raw.strip().lower() in ("", "none"))):
            return None
        base = kind.rstrip("?")
        if base == "str":
            if not isinstance(raw, str):
                raise ValueError
            return raw
        if base == "bool":
            parsed = parse_boolean(raw) if isinstance(raw, (bool, str)) else None
            if parsed is None:
                raise ValueError
            return parsed
        if isinstance(raw, bool):  # True is an int in Python, never a number here
            raise ValueError
        if base == "int":
            if isinstance(raw, float) and not raw.is_integer():
                raise ValueError
            return int(raw)
        value = float(raw)
        if not math.isfinite(value):
            raise ValueError
        return value
    except (TypeError, ValueError):
        raise ConfigError(f"{source}: {name} must be {_TYPE_WORDS[kind.rstrip('?')]}, got {shown}") from None


def _read_config_file(path: Path) -> dict[str, Any]:
    try:
        document = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"config file {path} does not exist") from None
    except (OSError, UnicodeDecodeError) as error:
        raise ConfigError(f"cannot read config file {path}: {error}") from None
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"config file {path} is not valid TOML: {error}") from None
    return llm_table_values(document.get("llm", {}), f"config file {path}")


# Keys an `[llm]` table may hold: every field but the key, which is never
# part of a configuration (it stays in OPENAI_API_KEY, or the variable
# `api_key_env` names).
LLM_TABLE_KEYS = tuple(name for name in _FIELD_TYPES if name != "api_key")


def llm_table_values(table: Any, source: str) -> dict[str, Any]:
    """The checked, typed values of an `[llm]` table; `ConfigError` (one line) for a bad key or value."""
    if not isinstance(table, Mapping):
        raise ConfigError(f"{source}: 'llm' must be a table ([llm])")
    values: dict[str, Any] = {}
    for key, raw in table.items():
        if key == "api_key":
            raise ConfigError(f"{source}: [llm] api_key is not read from a file (keys are never part of the "
                              "configuration); set OPENAI_API_KEY, or name the variable holding it with --api-key-env")
        if key not in LLM_TABLE_KEYS:
            raise ConfigError(f"{source}: unknown key {key!r} in [llm]{did_you_mean(key, LLM_TABLE_KEYS)} "
                              f"(known: {', '.join(LLM_TABLE_KEYS)})")
        values[key] = _coerce(key, raw, source)
    return values


def llm_env_value(name: str, env: Mapping[str, str]) -> str | None:
    """The environment's value for LLM setting `name` (CSRO_LLM_<NAME>; OPENAI_BASE_URL too), or None."""
    for env_name in _ENV_NAMES[name]:
        value = env.get(env_name)
        if value is not None and value.strip() != "":
            return value.strip()
    return None


# --------------------------------------------------------------------- records
@dataclass
class LLMCall:
    """The record of one `complete` call (all its attempts), success or not.

    `latency_s` is the wall time of the whole call, retries and waits
    included.  Token counts are the server's usage summed over attempts; when
    a server reports none they are estimated (characters / 4) and
    `usage_estimated` is True.  `error`/`error_kind` are set on failure
    (an `LLMError` kind, or "callback" when the caller's on_text raised).
    """

    purpose: str
    model: str
    base_url: str
    messages: list[dict[str, Any]]
    response: str
    finish_reason: str | None
    prompt_tokens: int | None
    completion_tokens: int | None
    latency_s: float
    cost_usd: float | None
    attempts: int
    error: str | None
    error_kind: str | None = None
    usage_estimated: bool = False

    @property
    def ok(self) -> bool:
        return self.error is None

    @property
    def prompt_size(self) -> int:
        """The prompt's size in estimated tokens (characters / 4, plus 4 per message), whatever the server counted."""
        return sum(estimate_tokens(str(m.get("content", ""))) + 4 for m in self.messages)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable copy (with `prompt_estimated_tokens`, the prompt's size, recorded too)."""
        data = asdict(self)
        data["messages"] = [dict(m) for m in self.messages]
        data["prompt_estimated_tokens"] = self.prompt_size
        return data

    @classmethod
    def from_dict(cls, data: Any) -> "LLMCall":
        """Rebuild a record written by `to_dict`; raises SessionError if malformed."""
        if not isinstance(data, Mapping):
            raise SessionError(f"LLM call record must be an object, got {type(data).__name__}")
        required = {"purpose", "model", "base_url", "messages", "response", "attempts"}
        missing = sorted(required - set(data))
        if missing:
            raise SessionError(f"LLM call record is missing {', '.join(missing)}")
        known = {f.name for f in fields(cls)}
        values = {k: v for k, v in data.items() if k in known}
        defaults = {
            "finish_reason": None,
            "prompt_tokens": None,
            "completion_tokens": None,
            "latency_s": 0.0,
            "cost_usd": None,
            "error": None,
        }
        for key, default in defaults.items():
            values.setdefault(key, default)
        messages = values["messages"]
        if not isinstance(messages, list) or not all(isinstance(m, Mapping) for m in messages):
            raise SessionError("LLM call record: messages must be a list of objects")
        if not isinstance(values["response"], str) or not isinstance(values["purpose"], str):
            raise SessionError("LLM call record: purpose and response must be strings")
        values["messages"] = [dict(m) for m in messages]
        return cls(**values)


@dataclass(frozen=True)
class LLMUsage:
    """Totals over a client's calls, for the UI's usage display."""

    calls: int = 0
    failed_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float | None = None  # None until some call had a known price

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


def usage_of(calls: Iterable[LLMCall]) -> LLMUsage:
    """Sum calls into an `LLMUsage`."""
    count = failed = prompt = completion = 0
    cost: float | None = None
    for call in calls:
        count += 1
        failed += call.error is not None
        prompt += call.prompt_tokens or 0
        completion += call.completion_tokens or 0
        if call.cost_usd is not None:
            cost = (cost or 0.0) + call.cost_usd
    return LLMUsage(count, failed, prompt, completion, cost)


class LLMError(CsroError):
    """An LLM call that failed, with a one-line message and a `kind`.

    Kinds: "no_key", "unreachable", "auth", "rate_limit", "timeout",
    "truncated" (stream cut before it finished), "bad_response" (not an
    understandable completion, or a replay that diverged), "server_error"
    (5xx), "bad_request" (the server rejected the request: 400/404/422, e.g.
    an unknown model) and "cancelled".  `call` is the record of the failed
    call when there was one.
    """

    KINDS = (
        "no_key",
        "unreachable",
        "auth",
        "rate_limit",
        "timeout",
        "truncated",
        "bad_response",
        "server_error",
        "bad_request",
        "cancelled",
    )

    def __init__(self, kind: str, message: str, *, call: LLMCall | None = None) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.call = call
        self.persistent = kind in ("no_key", "unreachable", "auth")  # after the client's own retries


class LLMBackend(Protocol):
    """What an oracle needs: `LLMClient` (live) and `RecordedLLM` (replay) both fit."""

    def complete(
        self,
        messages: list[dict[str, Any]],
        *,
        purpose: str,
        on_text: Callable[[str], None] | None = None,
        cancel: threading.Event | None = None,
    ) -> LLMCall: ...

    @property
    def calls(self) -> list[LLMCall]: ...

    @property
    def usage(self) -> LLMUsage: ...


# --------------------------------------------------------------------- client
class _CallbackFailed(Exception):
    """The caller's on_text raised: not a model failure, so it is re-raised as is."""

    def __init__(self, original: Exception) -> None:
        super().__init__(str(original))
        self.original = original


def _notify(on_text: Callable[[str], None] | None, text: str) -> None:
    if on_text is None:
        return
    try:
        on_text(text)
    except Exception as error:  # noqa: BLE001 - carried out to complete(), which re-raises it
        raise _CallbackFailed(error) from error


class _AttemptFailed(Exception):
    """One attempt failed; `retryable` says whether another may help."""

    def __init__(
        self, kind: str, message: str, *, retryable: bool, retry_after: float | None = None
    ) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.retryable = retryable
        self.retry_after = retry_after


@dataclass
class _Attempt:
    """What one attempt produced so far (kept when it fails halfway)."""

    text: str = ""
    finish_reason: str | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    got_data: bool = False  # any chunk or body parsed from the server


@dataclass
class _Usage:
    """Tokens summed over a call's attempts."""

    prompt: int = 0
    completion: int = 0
    estimated: bool = False

    def add(self, prompt: int | None, completion: int | None, estimated: bool) -> None:
        self.prompt += prompt or 0
        self.completion += completion or 0
        self.estimated = self.estimated or estimated


class LLMClient:
    """A thread-safe chat client over the `openai` SDK with our retry policy.

    `sleep(seconds)` replaces the wait between attempts (tests use it to see
    the waits without sleeping); `retry_base_delay` is the first backoff,
    doubled per retry up to `retry_max_delay`.
    """

    def __init__(
        self,
        config: LLMConfig,
        *,
        retry_base_delay: float = 1.0,
        retry_max_delay: float = 30.0,
        sleep: Callable[[float], None] | None = None,
        key_trust: KeyTrust | None = None,
    ) -> None:
        config.validate()
        self.config = config
        self.base_url = config.resolved_base_url()
        if not urlsplit(self.base_url).hostname:
            raise ConfigError(f"base_url must look like http://host:port/v1, got {public_url(self.base_url)!r}")
        self.public_base_url = public_url(self.base_url)
        self.host = host_of(self.base_url)
        self.timeout = config.resolved_timeout(self.base_url)
        key, variable = config.api_key, config.api_key_env
        if key is None:
            variable = DEFAULT_KEY_VARIABLES[0]
            key = os.environ.get(variable) or None
        # Named in every error: the variable the key came from ("the key given in code" has none).
        self.key_variable = variable or "the API key given"
        if key is None:
            if is_openai_url(self.base_url):
                raise LLMError(
                    "no_key",
                    f"no API key for {self.host}: set {self.key_variable}, "
                    "or --base-url for a local server (Ollama, vLLM, llama.cpp)",
                )
            key = LOCAL_PLACEHOLDER_KEY
        elif variable is not None:
            # A key from the environment goes only where the user said (issue 35); checked
            # before the SDK client exists, so nothing below can send it.
            refusal = (key_trust if key_trust is not None else KeyTrust.of_user()).refusal(
                self.public_base_url, variable)
            if refusal:
                raise ConfigError(refusal)
        self._sends_key = key != LOCAL_PLACEHOLDER_KEY
        # Strings that must never appear in messages or records.
        self._secrets = [s for s in (key, config.api_key) if s and s != LOCAL_PLACEHOLDER_KEY and len(s) >= 6]
        self._input_price, self._output_price = config.prices(self.base_url)
        self._retry_base_delay = retry_base_delay
        self._retry_max_delay = retry_max_delay
        self._sleep = sleep

        import openai  # start-up time: importing it loads openai; deferred: importing the SDK takes about a second

        self._openai = openai
        # max_retries=0: the SDK must not retry behind our back; our policy is bounded.
        self._sdk = openai.OpenAI(
            api_key=key, base_url=self.base_url, timeout=self.timeout, max_retries=0
        )
        self._slots = threading.BoundedSemaphore(config.concurrency)
        self._lock = threading.Lock()
        self._calls: list[LLMCall] = []
        self._unsupported_params: set[str] = set()

    # ---------------------------------------------------------------- public
    @property
    def calls(self) -> list[LLMCall]:
        """Every call made so far, failed ones included (a copy)."""
        with self._lock:
            return list(self._calls)

    @property
    def usage(self) -> LLMUsage:
        """Totals over `calls`."""
        return usage_of(self.calls)

    def list_models(self) -> list[str]:
        """Model ids the server offers (GET /models), one attempt: a connection check."""
        try:
            return sorted(model.id for model in self._sdk.models.list())
        except Exception as error:  # noqa: BLE001 - mapped to a one-line LLMError
            failure = self._classify(error, _Attempt(), cancel=None)
            raise LLMError(failure.kind, self._redact(self._named(failure.message))) from None

    def complete(
        self,
        messages: list[dict[str, Any]],
        *,
        purpose: str,
        on_text: Callable[[str], None] | None = None,
        cancel: threading.Event | None = None,
    ) -> LLMCall:
        """Ask for one chat completion; returns its record or raises `LLMError`.

        `on_text` receives the reply received so far (the whole text, not a
        delta, so a retry simply starts it over).  `cancel` aborts between
        chunks, during backoff waits, while waiting for a concurrency slot,
        and while the request waits for the server's first byte (its socket
        is shut down).  finish_reason "length" is returned, not raised:
        the caller decides what to do with a reply cut by max_tokens.
        """
        checked = check_messages(messages)
        started = time.monotonic()
        attempts = 0
        usage = _Usage()
        failure: _AttemptFailed | None = None
        attempt = _Attempt()
        while True:
            attempts += 1
            attempt = _Attempt()
            try:
                self._attempt(checked, attempt, on_text, cancel)
                failure = None
            except _AttemptFailed as error:
                failure = error
            except _CallbackFailed as error:
                # The caller's own bug, not the model's: record the call, then
                # let the original exception surface unchanged.
                usage.add(*self._attempt_usage(checked, attempt))
                failure = _AttemptFailed(
                    "callback", f"the on_text callback raised {error.original!r}", retryable=False
                )
                self._record(purpose, checked, attempt, attempts, started, usage, failure)
                raise error.original from None
            usage.add(*self._attempt_usage(checked, attempt))
            if failure is None:
                break
            if not failure.retryable or attempts > self.config.max_retries:
                break
            if not self._wait_before_retry(attempts, failure.retry_after, cancel):
                failure = _AttemptFailed("cancelled", "LLM call cancelled", retryable=False)
                break
        call = self._record(purpose, checked, attempt, attempts, started, usage, failure)
        if call.error is not None:
            raise LLMError(call.error_kind or "bad_response", call.error, call=call)
        return call

    def _record(
        self,
        purpose: str,
        messages: list[dict[str, Any]],
        attempt: _Attempt,
        attempts: int,
        started: float,
        usage: "_Usage",
        failure: _AttemptFailed | None,
    ) -> LLMCall:
        """Build the call's record (the last attempt's text) and keep it."""
        used_tokens = usage.prompt + usage.completion > 0
        call = LLMCall(
            purpose=purpose,
            model=self.config.model,
            base_url=self.public_base_url,
            messages=messages,
            response=attempt.text,
            finish_reason=attempt.finish_reason if failure is None else None,
            prompt_tokens=usage.prompt if used_tokens else None,
            completion_tokens=usage.completion if used_tokens else None,
            latency_s=time.monotonic() - started,
            cost_usd=self._cost(usage.prompt, usage.completion) if used_tokens else None,
            attempts=attempts,
            error=None,
            usage_estimated=usage.estimated,
        )
        if failure is not None:
            message = self._redact(self._named(failure.message))
            if failure.retryable and attempts > 1:
                message = f"{message} (gave up after {attempts} attempts)"
            call.error = message
            call.error_kind = failure.kind
        with self._lock:
            self._calls.append(call)
        return call

    # ---------------------------------------------------------------- attempt
    def _attempt(
        self,
        messages: list[dict[str, Any]],
        attempt: _Attempt,
        on_text: Callable[[str], None] | None,
        cancel: threading.Event | None,
    ) -> None:
        if not self._acquire_slot(cancel):
            raise _AttemptFailed("cancelled", "LLM call cancelled", retryable=False)
        try:
            # A rejected optional parameter is dropped and the request sent
            # again at once; each parameter is adapted at most once.
            for _ in range(len(_ADAPTABLE_PARAMS) + 1):
                try:
                    if self.config.stream:
                        self._stream_once(messages, attempt, on_text, cancel)
                    else:
                        self._request_once(messages, attempt, on_text, cancel)
                    return
                except _CallbackFailed:
                    raise
                except Exception as error:  # noqa: BLE001 - every failure is classified
                    param = self._rejected_param(error)
                    if param is None:
                        raise self._classify(error, attempt, cancel) from None
                    with self._lock:
                        self._unsupported_params.add(param)
            raise _AttemptFailed("bad_request", "the server rejected every request variant", retryable=False)
        finally:
            self._slots.release()

    def _request_params(self, stream: bool) -> dict[str, Any]:
        with self._lock:
            unsupported = set(self._unsupported_params)
        params: dict[str, Any] = {"model": self.config.model}
        if "temperature" not in unsupported:
            params["temperature"] = self.config.temperature
        # Newer OpenAI models take max_completion_tokens instead.
        params["max_completion_tokens" if "max_tokens" in unsupported else "max_tokens"] = self.config.max_tokens
        if stream:
            params["stream"] = True
            if "stream_options" not in unsupported:
                params["stream_options"] = {"include_usage": True}
        return params

    def _stream_once(
        self,
        messages: list[dict[str, Any]],
        attempt: _Attempt,
        on_text: Callable[[str], None] | None,
        cancel: threading.Event | None,
    ) -> None:
        attempt.text, attempt.finish_reason, attempt.got_data = "", None, False
        # Watched from before the request: a server that reads a long prompt
        # sends no headers until its first token (llama-cpp-python), minutes
        # on a small CPU model, and a cancel must not wait for them.
        with _CloseOnCancel(cancel, None, self._sdk) as guard:
            stream = guard.stream = self._sdk.chat.completions.create(messages=messages, **self._request_params(stream=True))
            try:
                for chunk in stream:
                    attempt.got_data = True
                    if cancel is not None and cancel.is_set():
                        raise _AttemptFailed("cancelled", "LLM call cancelled", retryable=False)
                    usage = getattr(chunk, "usage", None)
                    if usage is not None:
                        attempt.prompt_tokens = usage.prompt_tokens
                        attempt.completion_tokens = usage.completion_tokens
                    for choice in chunk.choices or ():
                        if choice.index != 0:
                            continue
                        delta = choice.delta.content if choice.delta is not None else None
                        if delta:
                            attempt.text += delta
                            _notify(on_text, attempt.text)
                        if choice.finish_reason:
                            attempt.finish_reason = choice.finish_reason
            finally:
                stream.close()
        if cancel is not None and cancel.is_set():
            raise _AttemptFailed("cancelled", "LLM call cancelled", retryable=False)
        if attempt.finish_reason is None:
            if not attempt.got_data:
                raise _AttemptFailed(
                    "bad_response",
                    f"LLM server at {self.public_base_url} sent no completion data "
                    "(is it an OpenAI-compatible /v1 endpoint?)",
                    retryable=False,
                )
            raise _AttemptFailed(
                "truncated",
                f"the reply from {self.public_base_url} stopped before it finished",
                retryable=True,
            )

    def _request_once(
        self,
        messages: list[dict[str, Any]],
        attempt: _Attempt,
        on_text: Callable[[str], None] | None,
        cancel: threading.Event | None = None,
    ) -> None:
        with _CloseOnCancel(cancel, None, self._sdk):
            completion = self._sdk.chat.completions.create(messages=messages, **self._request_params(stream=False))
        if cancel is not None and cancel.is_set():  # what a shut-down socket returned is not a reply
            raise _AttemptFailed("cancelled", "LLM call cancelled", retryable=False)
        if isinstance(completion, (str, bytes)) or not getattr(completion, "choices", None):
            raise _AttemptFailed(
                "bad_response", f"LLM server at {self.public_base_url} sent no completion", retryable=False
            )
        attempt.got_data = True
        choice = completion.choices[0]
        attempt.text = (choice.message.content if choice.message is not None else None) or ""
        attempt.finish_reason = choice.finish_reason
        if completion.usage is not None:
            attempt.prompt_tokens = completion.usage.prompt_tokens
            attempt.completion_tokens = completion.usage.completion_tokens
        _notify(on_text, attempt.text)

    # ---------------------------------------------------------------- errors
    def _rejected_param(self, error: Exception) -> str | None:
        """The optional request parameter a 400/422 complains about, if any (and not yet adapted)."""
        openai = self._openai
        if not isinstance(error, (openai.BadRequestError, openai.UnprocessableEntityError)):
            return None
        text = f"{getattr(error, 'param', '') or ''} {getattr(error, 'message', '')}"
        with self._lock:
            unsupported = set(self._unsupported_params)
        for param in _ADAPTABLE_PARAMS:
            if param not in unsupported and (getattr(error, "param", None) == param or f"'{param}'" in text):
                return param
        return None

    def _classify(self, error: Exception, attempt: _Attempt, cancel: threading.Event | None) -> _AttemptFailed:
        """Map an SDK/transport exception to a one-line failure and a retry decision."""
        openai = self._openai
        url = self.public_base_url
        if isinstance(error, _AttemptFailed):
            return error
        if cancel is not None and cancel.is_set():
            return _AttemptFailed("cancelled", "LLM call cancelled", retryable=False)
        if isinstance(error, openai.APITimeoutError):
            if attempt.got_data:
                return _AttemptFailed(
                    "truncated", f"the reply from {url} stalled for {self.timeout:g} s", retryable=True
                )
            return _AttemptFailed(
                "timeout", f"LLM server at {url} did not answer within {self.timeout:g} s", retryable=True
            )
        if isinstance(error, openai.APIConnectionError):
            if attempt.got_data:
                return _AttemptFailed("truncated", f"the connection to {url} dropped mid-reply", retryable=True)
            cause = error.__cause__
            if isinstance(cause, ConnectionRefusedError) or "refused" in str(cause).lower():
                return _AttemptFailed("unreachable", f"LLM server at {url} refused the connection", retryable=True)
            return _AttemptFailed(
                "unreachable", f"LLM server at {url} could not be reached ({_one_line(cause or error)})", retryable=True
            )
        if isinstance(error, openai.APIStatusError):
            return self._classify_status(error)
        if isinstance(error, openai.APIResponseValidationError):
            return _AttemptFailed("bad_response", f"LLM server at {url} sent an unexpected reply", retryable=False)
        if isinstance(error, openai.APIError):
            # An error event inside an otherwise fine stream: the server failed mid-reply.
            return _AttemptFailed(
                "server_error", f"LLM server at {url} reported an error: {_one_line(error.message)}", retryable=True
            )
        if isinstance(error, (ValueError, TypeError, AttributeError, KeyError)):
            # JSON that does not decode, or data that is not a completion.
            return _AttemptFailed(
                "bad_response", f"LLM server at {url} sent a reply that is not valid JSON or not a completion",
                retryable=False,
            )
        return _AttemptFailed("bad_response", f"LLM call to {url} failed: {_one_line(error)}", retryable=False)

    def _classify_status(self, error: Any) -> _AttemptFailed:
        url = self.public_base_url
        status = error.status_code
        server_message = _one_line(_error_message(error))
        if status == 401:
            return _AttemptFailed(
                "auth", f"authentication failed (401) at {self.host}: check {self.key_variable}", retryable=False)
        if status == 403:
            return _AttemptFailed(
                "auth", f"permission denied (403) at {self.host} for model {self.config.model!r}: "
                f"check the access of the key in {self.key_variable}",
                retryable=False,
            )
        if status == 429:
            if getattr(error, "code", None) == "insufficient_quota":
                return _AttemptFailed(
                    "rate_limit", f"quota exceeded (429) at {self.host}: check the plan and billing of the key in "
                    f"{self.key_variable}", retryable=False
                )
            return _AttemptFailed(
                "rate_limit", f"rate limited (429) by {url}", retryable=True,
                retry_after=_retry_after(error.response.headers),
            )
        if status == 404:
            return _AttemptFailed(
                "bad_request",
                f"not found (404) at {url}: check the model name {self.config.model!r} "
                "and that the base URL ends in /v1",
                retryable=False,
            )
        if status in (408, 409) or status >= 500:
            return _AttemptFailed(
                "server_error", f"LLM server at {url} failed ({status}): {server_message}", retryable=True,
                retry_after=_retry_after(error.response.headers),
            )
        return _AttemptFailed("bad_request", f"LLM server at {url} rejected the request ({status}): {server_message}",
                              retryable=False)

    # ---------------------------------------------------------------- helpers
    def _acquire_slot(self, cancel: threading.Event | None) -> bool:
        if cancel is None:
            self._slots.acquire()
            return True
        while not self._slots.acquire(timeout=0.05):
            if cancel.is_set():
                return False
        if cancel.is_set():
            self._slots.release()
            return False
        return True

    def _wait_before_retry(self, attempts: int, retry_after: float | None, cancel: threading.Event | None) -> bool:
        """Wait before the next attempt; False if cancelled meanwhile."""
        if retry_after is not None:
            delay = min(max(retry_after, 0.0), MAX_RETRY_AFTER_S)
        else:
            backoff = self._retry_base_delay * 2 ** (attempts - 1)
            delay = min(backoff, self._retry_max_delay) * random.uniform(0.75, 1.25)
        if self._sleep is not None:
            self._sleep(delay)
        elif cancel is not None:
            cancel.wait(delay)
        else:
            time.sleep(delay)
        return not (cancel is not None and cancel.is_set())

    def _attempt_usage(self, messages: list[dict[str, Any]], attempt: _Attempt) -> tuple[int | None, int | None, bool]:
        """Tokens one attempt used: the server's numbers, else an estimate if it produced text."""
        if attempt.prompt_tokens is not None or attempt.completion_tokens is not None:
            return attempt.prompt_tokens, attempt.completion_tokens, False
        if not attempt.got_data:
            return None, None, False
        prompt = sum(estimate_tokens(str(m.get("content", ""))) + 4 for m in messages)
        return prompt, estimate_tokens(attempt.text), True

    def _cost(self, prompt_tokens: int, completion_tokens: int) -> float | None:
        if self._input_price is None or self._output_price is None:
            return None
        return (prompt_tokens * self._input_price + completion_tokens * self._output_price) / 1_000_000

    def _named(self, message: str) -> str:
        """`message` naming the host and the key's variable (issue 35: a key sent to an unexpected
        host must show in the error), each once."""
        if self.host not in message:
            message = f"{message} ({self.host})"
        if self.key_variable not in message:
            sent = "key from" if self._sends_key else "no key sent; it would come from"
            message = f"{message} ({sent} {self.key_variable})"
        return message

    def _redact(self, text: str) -> str:
        for secret in self._secrets:
            text = text.replace(secret, "***")
        return text


class _CloseOnCancel:
    """Close a stream from a watcher thread when `cancel` is set, so a read
    blocked on a silent server ends at once instead of at the timeout."""

    def __init__(self, cancel: threading.Event | None, stream: Any, sdk: Any = None) -> None:
        self._cancel = cancel
        self.stream = stream  # set once the request returns one
        self._sdk = sdk  # before that: its connection pool's busy sockets are shut down
        self._done = threading.Event()
        self._thread: threading.Thread | None = None

    def _watch(self) -> None:
        assert self._cancel is not None
        while not self._done.is_set():
            if self._cancel.wait(0.05):
                self._interrupt()
                return

    def _interrupt(self) -> None:
        # Closing a socket does not wake a thread blocked reading it; shutting
        # it down does.  Best effort: the reader re-checks the cancel anyway.
        if self.stream is None:
            _shut_down_busy_connections(self._sdk)
            return
        response = getattr(self.stream, "response", None)
        try:
            network_stream = response.extensions.get("network_stream")
            sock = network_stream.get_extra_info("socket") if network_stream is not None else None
            if sock is not None:
                sock.shutdown(socket.SHUT_RDWR)
        except Exception:  # noqa: BLE001 - see above
            pass
        try:
            response.close()
        except Exception:  # noqa: BLE001 - see above
            pass

    def __enter__(self) -> "_CloseOnCancel":
        if self._cancel is not None:
            self._thread = threading.Thread(target=self._watch, daemon=True, name="llm-cancel-watch")
            self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._done.set()
        if self._thread is not None:
            self._thread.join()


def _shut_down_busy_connections(sdk: Any) -> None:
    """Wake requests still waiting for a response's headers (there is no response
    to close yet) by shutting down the sockets of the SDK's busy pooled connections.
    Cancel is the whole oracle's, so every call in flight on this client is meant.
    Reaches into httpx's pool (no public handle); does nothing if that changes."""
    try:
        connections = list(sdk._client._transport._pool.connections)
    except Exception:  # noqa: BLE001 - see above: the request then ends at the timeout
        return
    for connection in connections:
        try:
            if connection.is_idle():
                continue
            stream = connection._connection._network_stream
            sock = stream.get_extra_info("socket")
            if sock is not None:
                sock.shutdown(socket.SHUT_RDWR)
        except Exception:  # noqa: BLE001 - best effort, one connection at a time
            continue


def check_messages(messages: Any) -> list[dict[str, Any]]:
    """Copy chat messages, raising LLMError on anything that is not one."""
    if not isinstance(messages, list) or not messages:
        raise LLMError("bad_request", "messages must be a non-empty list of {role, content} objects")
    checked = []
    for index, message in enumerate(messages):
        if (
            not isinstance(message, Mapping)
            or message.get("role") not in ("system", "user", "assistant")
            or not isinstance(message.get("content"), str)
        ):
            raise LLMError(
                "bad_request", f"message {index} must have role system/user/assistant and text content"
            )
        checked.append({"role": message["role"], "content": message["content"]})
    return checked


def _error_message(error: Any) -> str:
    body = getattr(error, "body", None)
    if isinstance(body, Mapping):
        inner = body.get("error", body)
        if isinstance(inner, Mapping) and isinstance(inner.get("message"), str):
            return inner["message"]
        if isinstance(body.get("message"), str):
            return body["message"]
    return str(getattr(error, "message", "") or error)


def _one_line(value: object, limit: int = 200) -> str:
    text = " ".join(str(value).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _retry_after(headers: Any) -> float | None:
    """Seconds a Retry-After(-ms) header asks for, or None."""
    if headers is None:
        return None
    for name, divisor in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            seconds = float(value) / divisor
        except ValueError:
            parsed = email.utils.parsedate_tz(value)
            if parsed is None:
                continue
            seconds = email.utils.mktime_tz(parsed) - time.time()
        if math.isfinite(seconds):
            return max(seconds, 0.0)
    return None


__all__ = [
    "KNOWN_PRICES_PER_MTOK",
    "LLMBackend",
    "LLMCall",
    "LLMClient",
    "LLMConfig",
    "LLMError",
    "LLMUsage",
    "OPENAI_BASE_URL",
    "check_messages",
    "estimate_tokens",
    "is_openai_url",
    "public_url",
    "usage_of",
]
