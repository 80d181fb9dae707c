"""LLMClient through the real openai SDK against the scripted local server.

The replies below are fixed test text served by tests/llm_server.py; no model
is involved anywhere.
"""

from __future__ import annotations

import json
import threading

import pytest

from csro_tui.errors import ConfigError, CsroError, SessionError
from csro_tui.oracles.llm.client import LLMCall, LLMClient, LLMConfig, LLMError, estimate_tokens
from csro_tui.oracles.llm.recorded import RecordedLLM
from tests.llm_server import ScriptedLLMServer, ScriptedReply, closed_port_url, llm_server  # noqa: F401

MESSAGES = [
    {"role": "system", "content": "You write policies."},
    {"role": "user", "content": "Write a rock-paper-scissors policy."},
]
REPLY = "```python\nclass Policy:\n    def act(self, obs):\n        return obs['legal_actions'][0]\n```\n"


# The developer's own key, endpoint or LLM settings never leak in (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("no_llm_env")


def make_client(server: ScriptedLLMServer, **overrides) -> tuple[LLMClient, list[float]]:
    """A client on the scripted server whose backoff waits are recorded, not slept."""
    waits: list[float] = []
    settings = {"model": "scripted-model", "base_url": server.base_url, "timeout": 5.0, "max_retries": 2}
    settings.update(overrides)
    client = LLMClient(LLMConfig(**settings), retry_base_delay=0.01, sleep=waits.append)
    return client, waits


# ------------------------------------------------------------------ success
def test_streamed_reply_is_recorded_with_usage_latency_and_cost(llm_server):
    llm_server.script(ScriptedReply(text=REPLY, prompt_tokens=1200, completion_tokens=300, chunk_chars=10))
    client, _ = make_client(llm_server, input_price_per_mtok=1.0, output_price_per_mtok=4.0)
    seen: list[str] = []

    call = client.complete(MESSAGES, purpose="best_response", on_text=seen.append)

    assert call.response == REPLY
    assert call.finish_reason == "stop"
    assert (call.prompt_tokens, call.completion_tokens) == (1200, 300)
    assert call.usage_estimated is False
    assert call.cost_usd == pytest.approx((1200 * 1.0 + 300 * 4.0) / 1e6)
    assert call.latency_s > 0
    assert call.attempts == 1 and call.error is None and call.ok
    assert call.purpose == "best_response" and call.base_url == llm_server.base_url
    # on_text gets the growing reply, ending with all of it.
    assert len(seen) > 3 and seen[-1] == REPLY
    assert all(REPLY.startswith(text) for text in seen)
    # What the server was asked.
    (request,) = llm_server.chat_requests
    assert request["model"] == "scripted-model"
    assert request["messages"] == MESSAGES
    assert request["stream"] is True
    assert request["stream_options"] == {"include_usage": True}
    assert request["max_tokens"] == 4096 and request["temperature"] == 0.7
    # The client keeps the record and its totals.
    assert client.calls == [call]
    usage = client.usage
    assert (usage.calls, usage.failed_calls, usage.prompt_tokens, usage.completion_tokens) == (1, 0, 1200, 300)
    assert usage.cost_usd == pytest.approx(call.cost_usd)


def test_non_streamed_mode(llm_server):
    llm_server.script(ScriptedReply(text=REPLY, prompt_tokens=50, completion_tokens=25))
    client, _ = make_client(llm_server, stream=False)
    seen: list[str] = []
    call = client.complete(MESSAGES, purpose="summarize", on_text=seen.append)
    assert call.response == REPLY and call.finish_reason == "stop"
    assert (call.prompt_tokens, call.completion_tokens) == (50, 25)
    assert seen == [REPLY]
    assert "stream" not in llm_server.chat_requests[0]


def test_missing_usage_is_estimated_and_marked(llm_server):
    llm_server.script(ScriptedReply(text=REPLY, usage=False))
    client, _ = make_client(llm_server)
    call = client.complete(MESSAGES, purpose="p")
    assert call.usage_estimated is True
    assert call.completion_tokens == estimate_tokens(REPLY)
    assert call.prompt_tokens == sum(estimate_tokens(m["content"]) + 4 for m in MESSAGES)
    assert call.cost_usd is None  # a local model has no known price


def test_server_without_stream_options_is_adapted_once(llm_server):
    server = ScriptedLLMServer(reject_params=("stream_options",)).start()
    try:
        server.script("first reply", "second reply")
        client, _ = make_client(server)
        first = client.complete(MESSAGES, purpose="p")
        second = client.complete(MESSAGES, purpose="p")
        assert (first.response, second.response) == ("first reply", "second reply")
        assert first.usage_estimated and first.attempts == 1
        bodies = server.chat_requests
        # rejected once, then never sent again
        assert ["stream_options" in b for b in bodies] == [True, False, False]
    finally:
        server.stop()


def test_finish_reason_length_is_returned_not_raised(llm_server):
    llm_server.script(ScriptedReply(text="class Policy:\n    def act(self", finish_reason="length"))
    client, _ = make_client(llm_server)
    call = client.complete(MESSAGES, purpose="p")
    assert call.finish_reason == "length" and call.error is None


def test_list_models(llm_server):
    client, _ = make_client(llm_server)
    assert client.list_models() == ["scripted-model"]


# ------------------------------------------------------------------ retries
def test_rate_limit_with_retry_after_then_success(llm_server):
    llm_server.script(ScriptedReply.error(429, "slow down", headers={"Retry-After": "7"}), REPLY)
    client, waits = make_client(llm_server)
    call = client.complete(MESSAGES, purpose="p")
    assert call.attempts == 2 and call.response == REPLY
    assert waits == [7.0]  # the server's Retry-After, not our backoff
    assert len(llm_server.chat_requests) == 2


def test_server_error_then_success(llm_server):
    llm_server.script(ScriptedReply.error(500, "overloaded"), REPLY)
    client, waits = make_client(llm_server)
    call = client.complete(MESSAGES, purpose="p")
    assert call.attempts == 2 and call.response == REPLY
    assert len(waits) == 1 and 0.0075 <= waits[0] <= 0.0125  # first backoff: base delay with jitter


def test_server_errors_exhaust_bounded_retries(llm_server):
    llm_server.script(*[ScriptedReply.error(503, "down") for _ in range(3)])
    client, waits = make_client(llm_server, max_retries=2)
    with pytest.raises(LLMError) as info:
        client.complete(MESSAGES, purpose="p")
    assert info.value.kind == "server_error"
    assert "503" in str(info.value) and "3 attempts" in str(info.value)
    assert len(llm_server.chat_requests) == 3
    assert len(waits) == 2 and waits[1] > waits[0]  # exponential backoff
    assert client.usage.failed_calls == 1


def test_unauthorized_is_not_retried_and_key_is_never_recorded():
    secret = "sk-test-very-secret-key-123"
    with ScriptedLLMServer(api_key="sk-the-right-key") as server:
        client, waits = make_client(server, api_key=secret)
        with pytest.raises(LLMError) as info:
            client.complete(MESSAGES, purpose="p")
        assert info.value.kind == "auth"
        # The host and where the key came from (here: given in code, not a variable), issue 35.
        assert str(info.value) == f"authentication failed (401) at 127.0.0.1:{server.port}: check the API key given"
        assert len(server.chat_requests) == 1 and waits == []
        (record,) = client.calls
        assert record.error_kind == "auth" and info.value.call is record
        dumped = json.dumps([c.to_dict() for c in client.calls] + [client.config.to_public_dict()])
        assert secret not in dumped and secret not in repr(client.config)


def test_public_config_hides_key_and_url_credentials():
    config = LLMConfig(base_url="http://user:hunter22@127.0.0.1:8000/v1?api-key=hunter22", api_key="sk-secret-123")
    public = config.to_public_dict()
    assert "api_key" not in public and public["base_url"] == "http://127.0.0.1:8000/v1"
    assert "hunter22" not in json.dumps(public) and public["model"] == "gpt-4o-mini"


def test_right_key_is_sent(llm_server):
    with ScriptedLLMServer(api_key="sk-the-right-key") as server:
        server.script("ok")
        client, _ = make_client(server, api_key="sk-the-right-key")
        assert client.complete(MESSAGES, purpose="p").response == "ok"


def test_not_found_is_a_bad_request_without_retry(llm_server):
    llm_server.script(ScriptedReply.error(404, "model not found"))
    client, _ = make_client(llm_server)
    with pytest.raises(LLMError) as info:
        client.complete(MESSAGES, purpose="p")
    assert info.value.kind == "bad_request" and "404" in str(info.value)
    assert len(llm_server.chat_requests) == 1


def test_connection_refused_is_unreachable_after_bounded_retries():
    url = closed_port_url()
    waits: list[float] = []
    client = LLMClient(LLMConfig(base_url=url, max_retries=2, timeout=2.0), retry_base_delay=0.01, sleep=waits.append)
    with pytest.raises(LLMError) as info:
        client.complete(MESSAGES, purpose="p")
    assert info.value.kind == "unreachable"
    assert str(info.value).startswith(f"LLM server at {url} refused the connection")
    assert info.value.call.attempts == 3 and len(waits) == 2


def test_slow_server_times_out(llm_server):
    llm_server.script(ScriptedReply(text="late", delay_s=10), ScriptedReply(text="late", delay_s=10))
    client, _ = make_client(llm_server, timeout=0.3, max_retries=1)
    with pytest.raises(LLMError) as info:
        client.complete(MESSAGES, purpose="p")
    assert info.value.kind == "timeout"
    assert "did not answer within 0.3 s" in str(info.value)
    assert info.value.call.attempts == 2


def test_stream_cut_mid_reply_is_truncated_after_retries(llm_server):
    cut = ScriptedReply(text=REPLY, chunk_chars=5, cut_after_chunks=3)
    llm_server.script(cut, cut)
    client, _ = make_client(llm_server, max_retries=1)
    with pytest.raises(LLMError) as info:
        client.complete(MESSAGES, purpose="p")
    assert info.value.kind == "truncated"
    assert info.value.call.response == REPLY[:15]  # the partial text is kept in the record
    assert info.value.call.attempts == 2


def test_stream_cut_then_success_restarts_the_text(llm_server):
    llm_server.script(ScriptedReply(text="abandoned draft", chunk_chars=4, cut_after_chunks=2), REPLY)
    client, _ = make_client(llm_server)
    seen: list[str] = []
    call = client.complete(MESSAGES, purpose="p", on_text=seen.append)
    assert call.response == REPLY and call.attempts == 2
    assert seen[0] == "aban" and seen[-1] == REPLY


@pytest.mark.parametrize(
    "reply",
    [
        ScriptedReply(raw_body="data: this is not json\n\n", raw_content_type="text/event-stream"),
        ScriptedReply(raw_body="<html>502 Bad Gateway</html>", raw_content_type="text/html"),
        ScriptedReply(raw_body="", raw_content_type="text/event-stream"),
    ],
    ids=["sse-not-json", "html-page", "empty-body"],
)
def test_non_json_or_empty_body_is_bad_response(llm_server, reply):
    llm_server.script(reply)
    client, _ = make_client(llm_server)
    with pytest.raises(LLMError) as info:
        client.complete(MESSAGES, purpose="p")
    assert info.value.kind == "bad_response"
    assert len(llm_server.chat_requests) == 1  # not retried


def test_non_json_body_without_streaming_is_bad_response(llm_server):
    llm_server.script(ScriptedReply(raw_body="not json at all", raw_content_type="application/json"))
    client, _ = make_client(llm_server, stream=False)
    with pytest.raises(LLMError) as info:
        client.complete(MESSAGES, purpose="p")
    assert info.value.kind == "bad_response"


def test_a_failing_on_text_callback_surfaces_unchanged_and_is_recorded(llm_server):
    llm_server.script(REPLY)
    client, _ = make_client(llm_server)

    def broken_display(text: str) -> None:
        raise KeyError("widget")

    with pytest.raises(KeyError, match="widget"):
        client.complete(MESSAGES, purpose="p", on_text=broken_display)
    (record,) = client.calls
    assert record.error_kind == "callback" and "KeyError" in record.error
    assert len(llm_server.chat_requests) == 1  # not retried


def test_bad_messages_are_rejected_before_any_request(llm_server):
    client, _ = make_client(llm_server)
    for bad in ([], [{"role": "robot", "content": "x"}], [{"role": "user", "content": 3}], "hello"):
        with pytest.raises(LLMError) as info:
            client.complete(bad, purpose="p")
        assert info.value.kind == "bad_request"
    assert llm_server.requests == []


# ------------------------------------------------------------------ concurrency, cancel
def test_concurrency_limit_is_respected(llm_server):
    llm_server.script(*[ScriptedReply(text=f"reply {i}", delay_s=0.3) for i in range(6)])
    client, _ = make_client(llm_server, concurrency=2)
    results: list[str] = []
    errors: list[Exception] = []

    def worker() -> None:
        try:
            results.append(client.complete(MESSAGES, purpose="p").response)
        except Exception as error:  # noqa: BLE001 - surfaced by the assertion below
            errors.append(error)

    threads = [threading.Thread(target=worker) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert sorted(results) == [f"reply {i}" for i in range(6)]
    assert llm_server.max_in_flight == 2
    assert client.usage.calls == 6


def test_cancel_interrupts_a_stalled_stream(llm_server):
    # After its first chunk the server goes silent (until it is stopped), and
    # the read timeout is far away: only the cancel can end this call.
    llm_server.script(ScriptedReply(text="first chunk, then silence", chunk_chars=11, chunk_delay_s=600))
    client, _ = make_client(llm_server, timeout=300.0)
    cancel = threading.Event()
    outcome: list[BaseException] = []

    def run() -> None:
        try:
            client.complete(MESSAGES, purpose="p", on_text=lambda text: cancel.set(), cancel=cancel)
        except BaseException as error:  # noqa: BLE001 - inspected below
            outcome.append(error)

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(30)  # a liveness bound, not a speed check: without the cancel it would block for minutes
    assert not worker.is_alive(), "cancel did not end a call stalled mid-stream"
    (error,) = outcome
    assert isinstance(error, LLMError) and error.kind == "cancelled"
    assert error.call.response == "first chunk"


@pytest.mark.parametrize("stream", [True, False])
def test_cancel_interrupts_a_call_before_the_first_byte(llm_server, stream):
    # A server reading a long prompt sends no headers until its first token
    # (llama-cpp-python; minutes for a small CPU model): the cancel must not wait for them.
    llm_server.script(ScriptedReply(text="never sent", delay_s=600))
    client, _ = make_client(llm_server, timeout=300.0, stream=stream)
    cancel = threading.Event()
    outcome: list[BaseException] = []

    def run() -> None:
        try:
            client.complete(MESSAGES, purpose="p", cancel=cancel)
        except BaseException as error:  # noqa: BLE001 - inspected below
            outcome.append(error)

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    for _ in range(600):  # the request reaches the server before the cancel
        if llm_server.chat_requests:
            break
        threading.Event().wait(0.05)
    cancel.set()
    worker.join(30)  # a liveness bound, not a speed check: without the cancel it would block for minutes
    assert not worker.is_alive(), "cancel did not end a call waiting for the server's first byte"
    (error,) = outcome
    assert isinstance(error, LLMError) and error.kind == "cancelled"
    assert error.call.attempts == 1


def test_cancel_during_backoff_stops_retrying(llm_server):
    llm_server.script(ScriptedReply.error(500), ScriptedReply.error(500))
    cancel = threading.Event()
    client = LLMClient(
        LLMConfig(base_url=llm_server.base_url, max_retries=3),
        retry_base_delay=0.01,
        sleep=lambda seconds: cancel.set(),
    )
    with pytest.raises(LLMError) as info:
        client.complete(MESSAGES, purpose="p", cancel=cancel)
    assert info.value.kind == "cancelled"
    assert len(llm_server.chat_requests) == 1


# ------------------------------------------------------------------ keys and config
def test_openai_without_key_is_no_key_error():
    with pytest.raises(LLMError) as info:
        LLMClient(LLMConfig())
    assert info.value.kind == "no_key"
    assert "OPENAI_API_KEY" in str(info.value) and "--base-url" in str(info.value)


def test_local_server_needs_no_key(llm_server):
    llm_server.script("fine")
    client = LLMClient(LLMConfig(base_url=llm_server.base_url))
    assert client.complete(MESSAGES, purpose="p").response == "fine"


def test_openai_base_url_env_is_used(llm_server, monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", llm_server.base_url)
    llm_server.script("via env")
    assert LLMClient(LLMConfig()).complete(MESSAGES, purpose="p").response == "via env"


def test_config_precedence_file_env_flags(tmp_path):
    config_file = tmp_path / "csro.toml"
    config_file.write_text(
        '[llm]\nmodel = "from-file"\ntemperature = 0.1\nmax_tokens = 1000\nconcurrency = 8\n', encoding="utf-8"
    )
    env = {"CSRO_LLM_TEMPERATURE": "0.2", "CSRO_LLM_MAX_TOKENS": "2000", "OPENAI_BASE_URL": "http://localhost:11434/v1"}
    flags = {"max-tokens": 3000, "model": None}
    config = LLMConfig.from_sources(flags, config_file, env)
    assert config.model == "from-file"  # file over default; a None flag is unset
    assert config.concurrency == 8
    assert config.temperature == 0.2  # env over file
    assert config.max_tokens == 3000  # flag over env
    assert config.base_url == "http://localhost:11434/v1"
    assert LLMConfig.from_sources({}, None, {}) == LLMConfig()


@pytest.mark.parametrize(
    "flags, toml, env, message",
    [
        ({"temperature": "hot"}, None, {}, "temperature must be a number"),
        ({"colour": "red"}, None, {}, "unknown LLM setting 'colour'"),
        ({}, "[llm]\nmodle = 'x'\n", {}, "unknown key 'modle' in [llm] (did you mean model?)"),
        ({}, "[llm\n", {}, "is not valid TOML"),
        ({}, None, {"CSRO_LLM_CONCURRENCY": "0"}, "concurrency must be at least 1"),
        ({}, None, {"CSRO_LLM_MAX_RETRIES": "two"}, "CSRO_LLM_MAX_RETRIES: max_retries must be an integer"),
        ({"base_url": "localhost:8080"}, None, {}, "base_url must look like"),
        ({"api_key": 12345}, None, {}, "api_key must be a string, got <hidden>"),
    ],
)
def test_bad_config_is_a_one_line_config_error(tmp_path, flags, toml, env, message):
    path = None
    if toml is not None:
        path = tmp_path / "c.toml"
        path.write_text(toml, encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        LLMConfig.from_sources(flags, path, env)
    assert message in str(info.value) and "\n" not in str(info.value)


def test_missing_config_file_is_config_error(tmp_path):
    with pytest.raises(ConfigError, match="does not exist"):
        LLMConfig.from_sources({}, tmp_path / "nope.toml", {})


def test_config_built_directly_is_type_checked():
    with pytest.raises(ConfigError, match="temperature must be a number, got 'hot'"):
        LLMClient(LLMConfig(base_url="http://127.0.0.1:9/v1", temperature="hot"))
    with pytest.raises(ConfigError, match="api_key must be a string, got <hidden>"):
        LLMConfig(api_key=123456789).validate()


@pytest.mark.parametrize("base_url, expected", [
    ("http://127.0.0.1:8080/v1", 900.0),
    ("http://localhost:11434/v1", 900.0),
    ("http://[::1]:8000/v1", 900.0),
    ("https://api.openai.com/v1", 120.0),
    ("http://gpu-box.lan:8000/v1", 120.0),
])
def test_the_default_timeout_is_patient_with_a_server_on_this_machine(base_url, expected):
    # A CPU model reads a 2,000-token prompt for minutes before its first token; a remote API does not.
    client = LLMClient(LLMConfig(model="m", base_url=base_url, api_key="sk-test-key"))
    assert client.timeout == expected and client._sdk.timeout == expected
    explicit = LLMClient(LLMConfig(model="m", base_url=base_url, api_key="sk-test-key", timeout=30.0))
    assert explicit.timeout == 30.0


def test_known_openai_price_is_used_only_for_openai():
    config = LLMConfig(model="gpt-4o-mini")
    assert config.prices("https://api.openai.com/v1") == (0.15, 0.60)
    assert LLMConfig(model="gpt-4o-2024-08-06").prices("https://api.openai.com/v1") == (2.50, 10.00)
    assert LLMConfig(model="my-finetune").prices("https://api.openai.com/v1") == (None, None)
    assert config.prices("http://127.0.0.1:8000/v1") == (None, None)
    assert LLMConfig(model="gpt-4o-mini", input_price_per_mtok=9.0).prices("http://x/v1") == (9.0, None)


# ------------------------------------------------------------------ records and replay
def test_call_record_round_trips_through_json(llm_server):
    llm_server.script(ScriptedReply(text=REPLY, prompt_tokens=10, completion_tokens=5))
    client, _ = make_client(llm_server)
    call = client.complete(MESSAGES, purpose="refine")
    again = LLMCall.from_dict(json.loads(json.dumps(call.to_dict())))
    assert again == call


def test_malformed_record_is_session_error():
    with pytest.raises(SessionError, match="missing"):
        LLMCall.from_dict({"purpose": "p"})
    with pytest.raises(SessionError):
        LLMCall.from_dict(["not", "a", "dict"])


def test_recorded_backend_replays_a_live_session(llm_server):
    llm_server.script(
        ScriptedReply(text="first reply", prompt_tokens=7, completion_tokens=3),
        ScriptedReply.error(401),
        ScriptedReply(text="third reply", prompt_tokens=8, completion_tokens=4),
    )
    client, _ = make_client(llm_server)
    second_messages = MESSAGES + [{"role": "user", "content": "again"}]
    client.complete(MESSAGES, purpose="best_response")
    with pytest.raises(LLMError):
        client.complete(second_messages, purpose="refine")
    client.complete(MESSAGES, purpose="summarize")
    log = json.loads(json.dumps([c.to_dict() for c in client.calls]))

    replay = RecordedLLM(log)
    seen: list[str] = []
    assert replay.complete(MESSAGES, purpose="best_response", on_text=seen.append).response == "first reply"
    assert seen == ["first reply"]
    with pytest.raises(LLMError) as info:
        replay.complete(second_messages, purpose="refine")
    assert info.value.kind == "auth"  # the recorded failure, replayed
    assert replay.complete(MESSAGES, purpose="summarize").response == "third reply"
    assert replay.remaining == 0
    assert (replay.usage.calls, replay.usage.prompt_tokens) == (3, 15)
    with pytest.raises(LLMError, match="diverged at call 4: only 3 calls were recorded"):
        replay.complete(MESSAGES, purpose="summarize")


def test_recorded_backend_detects_divergence():
    record = LLMCall("best_response", "m", "http://x/v1", MESSAGES, "reply", "stop", 1, 1, 0.1, None, 1, None)
    other = [MESSAGES[0], {"role": "user", "content": "Write a Kuhn poker policy."}]
    with pytest.raises(LLMError) as info:
        RecordedLLM([record]).complete(other, purpose="best_response")
    assert info.value.kind == "bad_response"
    assert str(info.value) == "recorded session diverged at call 1: message 1 (user) differs from the recording"
    with pytest.raises(LLMError, match="expected a 'best_response' call, got 'refine'"):
        RecordedLLM([record]).complete(MESSAGES, purpose="refine")
    # Lenient replay matches purpose and order only.
    assert RecordedLLM([record], strict=False).complete(other, purpose="best_response").response == "reply"


def test_errors_are_csro_errors():
    assert issubclass(LLMError, CsroError)
