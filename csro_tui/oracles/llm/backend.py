"""How an LLM oracle reaches its model: a live client, or a recorded session replayed.

`LLMSettings` / `make_backend`: a live `LLMClient` built with
`LLMConfig.from_sources` (defaults < config file < environment < options),
or, with `llm = "recorded:SESSION"`, a `RecordedLLM` that replays the LLM
calls recorded in that session, so it re-runs with no server.

Replays and concurrency.  `RecordedLLM` hands back records in order, so an
oracle must ask for them in the order they were recorded.  Every oracle
therefore keeps its calls in a fixed *logical* order (slot by slot, child by
child) in `Proposal.llm_calls`, whatever order concurrent calls finished in,
and with a recorded backend it makes its calls one at a time in that same
order (`backend_concurrency` is 1).  Budgets are split between concurrent
slots up front (`calls.split_budget`), so the calls a slot makes never depend
on timing.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

from csro_tui.errors import ConfigError, SessionError
from csro_tui.oracles.llm.client import LLMBackend, LLMCall, LLMClient, LLMConfig
from csro_tui.oracles.llm.keys import KeyTrust
from csro_tui.oracles.llm.recorded import RecordedLLM
from csro_tui.oracles.options import KEY_TRUST, LLM_FILE_SETTINGS, LLM_KEYS, OptionReader
from csro_tui.sessions.store import SessionStore, default_sessions_root


RECORDED_PREFIX = "recorded:"


@dataclass(frozen=True)
class LLMSettings:
    """How an oracle reaches its model; never holds the key itself."""

    flags: dict[str, Any] = field(default_factory=dict)  # LLMConfig field -> value
    file_values: dict[str, Any] = field(default_factory=dict)  # the [llm] table, below the environment
    api_key_env: str | None = None  # name of the variable holding the key
    recorded: str | None = None  # session reference to replay, or None for live calls
    strict_replay: bool = True
    # Where the user lets a key go (issue 35); None: the environment and the user's config only.
    key_trust: KeyTrust | None = None


def read_llm_settings(options: OptionReader) -> LLMSettings:
    """The LLM keys of an oracle's configuration (see `LLM_KEYS`)."""
    flags: dict[str, Any] = {}
    for key in ("model", "base_url", "temperature", "max_tokens", "timeout", "max_retries", "concurrency", "stream",
                "input_price_per_mtok", "output_price_per_mtok"):
        value = options.raw(key)
        if value is not None and value != "":
            flags[key] = value
    file_values = options.raw(LLM_FILE_SETTINGS) or {}
    if not isinstance(file_values, Mapping):
        raise ConfigError(f"{options.oracle} oracle: {LLM_FILE_SETTINGS} must be a table, not {file_values!r}")
    key_trust = options.raw(KEY_TRUST)
    if key_trust is not None and not isinstance(key_trust, KeyTrust):
        # Handed in by the program (engine.setup), never read from a file.
        raise ConfigError(f"{options.oracle} oracle: {KEY_TRUST} is not an option")
    backend = options.text("llm", "live") or "live"
    recorded = None
    if backend.startswith(RECORDED_PREFIX):
        recorded = backend[len(RECORDED_PREFIX):].strip()
        if not recorded:
            raise ConfigError(f"{options.oracle} oracle: llm=recorded:SESSION needs a session id or path")
    elif backend != "live":
        raise ConfigError(f"{options.oracle} oracle: llm must be 'live' or 'recorded:SESSION', not {backend!r}")
    return LLMSettings(
        flags=flags,
        file_values=dict(file_values),
        api_key_env=options.text("api_key_env"),
        recorded=recorded,
        strict_replay=options.boolean("strict_replay", True),
        key_trust=key_trust,
    )


def make_backend(settings: LLMSettings, env: Mapping[str, str] | None = None) -> LLMBackend:
    """A live client (settings < environment < options), or a replay of a recorded session."""
    env = os.environ if env is None else env
    if settings.recorded is not None:
        return RecordedLLM(load_recorded_calls(settings.recorded, env=env), strict=settings.strict_replay)
    flags = dict(settings.flags)
    if settings.api_key_env:
        key = env.get(settings.api_key_env)
        if not key:
            raise ConfigError(f"environment variable {settings.api_key_env} (named by api_key_env) is not set")
        flags["api_key"] = key
    config = LLMConfig.from_sources(flags=flags, env=env, file_values=settings.file_values)
    if settings.api_key_env:
        config = dataclasses.replace(config, api_key_env=settings.api_key_env)
    key_trust = settings.key_trust if settings.key_trust is not None else KeyTrust.of_user(env)
    return LLMClient(config, key_trust=key_trust)


def backend_concurrency(backend: LLMBackend) -> int:
    """Calls an oracle may have in flight: the client's limit; 1 when replaying (order matters)."""
    config = getattr(backend, "config", None)
    if isinstance(backend, LLMClient) and config is not None:
        return max(1, int(config.concurrency))
    return 1


def load_recorded_calls(reference: str | os.PathLike[str], env: Mapping[str, str] | None = None) -> list[LLMCall]:
    """Every LLM call a session recorded, in the order the oracles made them.

    `reference` is a session directory, its events file, or a session id
    under $CSRO_SESSIONS_DIR (default ./sessions).  Calls come from the
    oracle's proposals (not the reviewers' edits) and from failed oracle
    attempts, in event order.
    """
    store = SessionStore(default_sessions_root(env))
    log = store.read(Path(reference) if Path(reference).exists() else str(reference))
    calls: list[LLMCall] = []
    for event in log.events:
        records: Sequence[Any] = ()
        if event.TYPE == "proposal_created" and getattr(event, "edited_from", None) is None:
            records = event.proposal.llm_calls or ()
        elif event.TYPE == "oracle_failed":
            records = getattr(event, "llm_calls", None) or ()
        for record in records:
            calls.append(LLMCall.from_dict(record))
    if not calls:
        raise SessionError(f"session {reference} recorded no LLM calls to replay")
    return calls
