"""A model-written summary of a policy's code, where an LLM is configured (`csro explain
--summary`; `m` on Compare policies, which records it in a live session).

Model text: shown as such (with the model's name), never mixed with the
offline description, which comes from the profile.  The code is sent to the
model as text and never run here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from csro_tui.games.base import GameSpec

SUMMARY_MAX_TOKENS = 300

INSTRUCTION = (
    "Describe in two or three plain sentences what this policy does in the game: what it plays in which "
    "situations, what it remembers, and whether it adapts to its opponent. Say only what the code does; "
    "note code that can never run (for example a method that nothing calls)."
)


def summary_messages(spec: "GameSpec", source: str) -> list[dict[str, str]]:
    return [
        {"role": "system", "content": "You explain game-playing programs to a person reviewing them."},
        {"role": "user", "content": f"Game: {spec.title}\n{spec.rules_text}\n\nThe referee calls Policy(player, game) "
                                    f"once per episode, then act(obs) at each decision, and nothing else.\n\n"
                                    f"```python\n{source}\n```\n\n{INSTRUCTION}"},
    ]


def model_summary(spec: "GameSpec", source: str, *, model: str | None = None, base_url: str | None = None,
                  key_trust: Any = None) -> dict[str, Any]:
    """{"model", "text"} from the configured model (csro.toml [llm], CSRO_LLM_*/CSRO_MODEL,
    OPENAI_BASE_URL, or the arguments); LLMError or ConfigError (one line) when it cannot.
    `key_trust` (`oracles.llm.keys.KeyTrust`): where the user lets the key go; None: the
    environment and the user's config only (a session's recorded base URL is not the user's)."""
    # imported when used, not at the top: keeps csro's start-up fast
    from csro_tui.config import load_run_config
    from csro_tui.oracles.llm.client import LLMClient, LLMConfig, LLMError

    settings = load_run_config({"model": model, "base_url": base_url})
    flags = {"model": settings.model or None, "base_url": settings.base_url or None, "max_tokens": SUMMARY_MAX_TOKENS}
    client = LLMClient(LLMConfig.from_sources(flags={k: v for k, v in flags.items() if v}, file_values=settings.llm),
                       key_trust=key_trust)
    call = client.complete(summary_messages(spec, source), purpose="policy summary")
    if call.error:
        raise LLMError(call.error_kind or "failed", call.error)
    return {"model": call.model, "text": call.response}
