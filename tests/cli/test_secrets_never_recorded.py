"""Secret-looking oracle options are never recorded; everything else is, so resume gets it back."""

from __future__ import annotations

from csro_tui.config import REDACTED, RunConfig, redact


def test_credentials_are_redacted_and_token_counts_are_kept():
    options = {
        "api_key": "sk-live-123",
        "auth_header": "Bearer abc",
        "authorization": "Bearer def",
        "token": "t-1",
        "client_secret": "s",
        "api_key_env": "OPENAI_API_KEY",
        "max_tokens": 300,
        "max_completion_tokens": 200,
        "author": "ana",
        "temperature": 0.3,
    }
    recorded = RunConfig(game="kuhn_poker", oracle="llm", oracle_options=options).to_record()["oracle_options"]
    assert {k for k, v in recorded.items() if v == REDACTED} == {
        "api_key", "auth_header", "authorization", "token", "client_secret"}
    assert {k: recorded[k] for k in ("api_key_env", "max_tokens", "max_completion_tokens", "author", "temperature")} == {
        "api_key_env": "OPENAI_API_KEY",
        "max_tokens": 300,
        "max_completion_tokens": 200,
        "author": "ana",
        "temperature": 0.3,
    }
    assert redact([{"password": "p", "n": 1}]) == [{"password": REDACTED, "n": 1}]


def test_a_base_url_is_recorded_without_its_credentials():
    config = RunConfig(game="kuhn_poker", oracle="llm", base_url="http://user:pw@127.0.0.1:8080/v1")
    assert config.to_record()["base_url"] == "http://127.0.0.1:8080/v1"
