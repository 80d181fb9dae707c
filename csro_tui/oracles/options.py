"""An oracle's options: typed values read from its configuration, nothing unknown.

`OptionReader` checks an oracle's configuration (the run's `oracle_options`
plus `model`/`base_url`): typed values, ranges, and a one-line `ConfigError`
for anything unknown or wrong. `LLM_KEYS` are the keys that set up an LLM
backend; the run passes its model and base URL to every oracle, so an oracle
that needs no model ignores them.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from csro_tui.booleans import parse_boolean
from csro_tui.errors import ConfigError
from csro_tui.names import did_you_mean


# Keys of an oracle's configuration that set up the LLM backend (the rest are
# the oracle's own).  `llm` is "live" or "recorded:SESSION".
LLM_KEYS = (
    "model", "base_url", "api_key_env", "temperature", "max_tokens", "timeout",
    "max_retries", "concurrency", "stream", "input_price_per_mtok", "output_price_per_mtok",
    "llm", "strict_replay", "llm_file_settings", "key_trust",
)
# The key under which the run hands an oracle its config file's [llm] table
# (`RunConfig.llm`): the client's settings *below* the environment, whereas
# the other keys are flags, above it.
LLM_FILE_SETTINGS = "llm_file_settings"
# The key under which the run hands an oracle where the user lets an API key go
# (`oracles.llm.keys.KeyTrust`, from the command line, environment and user config;
# never from a file or a session).
KEY_TRUST = "key_trust"


class OptionReader:
    """Typed access to one oracle's configuration; `finish()` rejects leftovers."""

    def __init__(self, oracle: str, config: Mapping[str, Any] | None) -> None:
        self.oracle = oracle
        self._values = dict(config or {})
        self._read: set[str] = set()

    def _raw(self, key: str) -> Any:
        self._read.add(key)
        return self._values.get(key)

    def _bad(self, key: str, value: Any, wanted: str) -> ConfigError:
        return ConfigError(f"{self.oracle} oracle: {key} must be {wanted}, not {value!r}")

    def has(self, key: str) -> bool:
        return self._values.get(key) is not None

    def integer(self, key: str, default: int, *, minimum: int | None = None) -> int:
        value = self._raw(key)
        if value is None:
            return default
        if isinstance(value, str) and value.strip().lstrip("-").isdigit():
            value = int(value)
        if not isinstance(value, int) or isinstance(value, bool):
            raise self._bad(key, value, "a whole number")
        if minimum is not None and value < minimum:
            raise self._bad(key, value, f"at least {minimum}")
        return value

    def number(self, key: str, default: float, *, minimum: float | None = None, maximum: float | None = None) -> float:
        value = self._raw(key)
        if value is None:
            return default
        if isinstance(value, str):
            try:
                value = float(value)
            except ValueError:
                raise self._bad(key, value, "a number") from None
        if not isinstance(value, (int, float)) or isinstance(value, bool) or value != value:
            raise self._bad(key, value, "a number")
        if minimum is not None and value < minimum:
            raise self._bad(key, value, f"at least {minimum}")
        if maximum is not None and value > maximum:
            raise self._bad(key, value, f"at most {maximum}")
        return float(value)

    def boolean(self, key: str, default: bool) -> bool:
        value = self._raw(key)
        if value is None:
            return default
        parsed = parse_boolean(value)
        if parsed is None:
            raise self._bad(key, value, "true or false")
        return parsed

    def choice(self, key: str, default: str, choices: Sequence[str]) -> str:
        value = self._raw(key)
        if value is None:
            return default
        if value not in choices:
            raise self._bad(key, value, "one of " + ", ".join(choices))
        return value

    def text(self, key: str, default: str | None = None) -> str | None:
        value = self._raw(key)
        if value is None:
            return default
        if not isinstance(value, str):
            raise self._bad(key, value, "text")
        return value

    def raw(self, key: str) -> Any:
        """The value as given (None when absent), for settings checked elsewhere."""
        return self._raw(key)

    def finish(self, *, ignore: Sequence[str] = ()) -> None:
        """Raise `ConfigError` for keys nobody read (typos), except `ignore`d ones."""
        unknown = sorted(set(self._values) - self._read - set(ignore))
        if unknown:
            known = ", ".join(sorted(self._read))
            hint = did_you_mean(unknown[0], self._read) if len(unknown) == 1 else ""
            raise ConfigError(f"{self.oracle} oracle: unknown option(s) {', '.join(unknown)}{hint} (known: {known})")
