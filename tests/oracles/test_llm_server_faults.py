"""LLM server faults at the engine level: the session carries on or stops cleanly.

The client's own handling of each fault (kinds, messages, retries, backoff)
is tested in test_llm_client.py; here the real zero-shot oracle, with the
real openai client against the scripted server (tests/llm_server.py), drives
a real engine on RRPS with the real sandbox and a session store.  Each fault
must end the attempt with a clear one-line reason recorded in the log
(`oracle_failed`, with the failed call's record), retries must be bounded,
nothing half-done may join the population, a run whose attempts are all
used up must close as "error", and `--resume` must continue it once the
server answers again, keeping every event recorded before.  Replies that
hold no usable code are the model's failure, not the server's: they end
the iteration and the run goes on.

Every reply is fixed test text; no model is involved.  Only 127.0.0.1 is
ever contacted.
"""

from __future__ import annotations

import json
import re

import pytest

from csro_tui.config import RunConfig
from csro_tui.engine import GameEvaluator
from csro_tui.engine.setup import new_engine, resume_engine
from csro_tui.errors import CsroError
from csro_tui.games.registry import get_game
from csro_tui.oracles.llm.client import LLMClient, LLMConfig
from csro_tui.oracles.llm.zero_shot import ZeroShotOracle
from csro_tui.sandbox.sandbox import SandboxLimits
from csro_tui.reviewers import AutoReviewer
from csro_tui.sessions.events import OracleFailed
from csro_tui.sessions.state import fold
from csro_tui.sessions.store import EVENTS_FILE, SessionStore
from tests.llm_server import ScriptedLLMServer, ScriptedReply, closed_port_url

GAME = "rrps(num_repetitions=20)"
LIMITS = SandboxLimits(init_timeout=20.0, move_timeout=5.0, batch_timeout=5.0)
MAX_RETRIES = 1  # so every retryable fault is tried exactly twice per call
WRONG_KEY = "sk-wrong-key-that-must-never-be-recorded"

ALWAYS_PAPER = """The population throws rock every time; paper beats it.

```python
class Policy:
    def __init__(self, player, game):
        self.player = player

    def act(self, obs):
        return 1
```
"""
NO_CODE = "I would rather explain the idea than write code: play paper."


# The developer's own key, endpoint or LLM settings never leak in (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("no_llm_env")


def oracle(base_url: str, **overrides) -> ZeroShotOracle:
    """The real zero-shot oracle on the real client, with tiny backoff waits."""
    settings = {"model": "scripted-model", "base_url": base_url, "timeout": 2.0, "max_retries": MAX_RETRIES}
    settings.update(overrides)
    return ZeroShotOracle(LLMClient(LLMConfig(**settings), retry_base_delay=0.01))


def config(**overrides) -> RunConfig:
    settings = dict(game=GAME, oracle="llm", iterations=1, max_attempts=2, episodes=2, smoke_episodes=1,
                    benchmark="off", seed_policies=["constant_rock"], workers=1)
    settings.update(overrides)
    return RunConfig(**settings)


def evaluator(spec) -> GameEvaluator:
    return GameEvaluator(spec, limits=LIMITS, workers=1)


# name -> (replies for one LLM call, the error kind, what the one-line reason says,
#          client settings); "refused" has no server, "unauthorized" a server wanting another key.
FAULTS = {
    "refused": (None, "unreachable", r"LLM server at http://127\.0\.0\.1:\d+/v1 refused the connection", {}),
    "unauthorized": ([], "auth", r"authentication failed \(401\) at 127\.0\.0\.1:\d+: check the API key given", {"api_key": WRONG_KEY}),
    "rate_limited": ([ScriptedReply.error(429, "slow down", headers={"Retry-After": "0"})] * 2, "rate_limit",
                     r"rate limited \(429\)", {}),
    "server_error": ([ScriptedReply.error(500, "overloaded")] * 2, "server_error", r"failed \(500\): overloaded", {}),
    "timeout": ([ScriptedReply(ALWAYS_PAPER, delay_s=3.0)] * 2, "timeout", r"did not answer within 0\.4 s",
             {"timeout": 0.4}),
    "cut_stream": ([ScriptedReply(ALWAYS_PAPER, chunk_chars=4, cut_after_chunks=3)] * 2, "truncated",
                   r"dropped mid-reply|stalled", {}),
    "not_json": ([ScriptedReply(raw_body="<html><body>502 Bad Gateway</body></html>")] * 2, "bad_response",
                 r"sent no completion data \(is it an OpenAI-compatible /v1 endpoint\?\)", {}),
    "no_code": ([NO_CODE] * 3, None, r"NoUsableCandidate: llm oracle: no usable policy from 3 LLM calls", {}),
}


# Faults that would repeat at once (LLMError.persistent): the run stops at their first attempt.
PERSISTENT = ("refused", "unauthorized")


def start_server(fault: str) -> ScriptedLLMServer | None:
    replies, *_ = FAULTS[fault]
    if replies is None:
        return None
    server = ScriptedLLMServer(api_key="sk-the-right-key" if fault == "unauthorized" else None).start()
    # Two oracle attempts, each one call (three for no_code: its whole budget).
    server.script(*(replies or []) * 2)
    return server


def check_failures(state, fault: str, attempts: int) -> int:
    """The recorded oracle failures; returns how many requests their calls made."""
    _, kind, pattern, _ = FAULTS[fault]
    failures = [e for e in state.events if isinstance(e, OracleFailed)]
    assert [f.attempt for f in failures] == list(range(1, attempts + 1))
    requests = 0
    for failure in failures:
        assert "\n" not in failure.error and re.search(pattern, failure.error), failure.error
        assert failure.llm_calls, "the failed call's record is kept in the log"
        for call in failure.llm_calls:
            assert 1 <= call["attempts"] <= MAX_RETRIES + 1  # bounded retries
            requests += call["attempts"]
        if kind is not None:
            assert failure.llm_calls[-1]["error_kind"] == kind
            assert failure.error.startswith("LLMError: ")
    return requests


def test_replies_without_code_on_every_attempt_end_the_iteration_not_the_session(tmp_path):
    """The model answered but nothing usable came of it: that iteration ends empty, the run completes."""
    spec = get_game(GAME)
    store = SessionStore(tmp_path / "sessions", fsync=False)
    server = start_server("no_code")
    try:
        engine = new_engine(config(), store=store, reviewer=AutoReviewer(), spec=spec,
                            oracle=oracle(server.base_url), evaluator=evaluator(spec))
        try:
            outcome = engine.run()
        finally:
            engine.writer.close()
    finally:
        server.stop()
    assert outcome.reason == "completed"
    state = fold(store.read(engine.session_id).events)
    requests = check_failures(state, "no_code", attempts=2)
    assert len(server.chat_requests) == requests == 6
    assert state.completed_iterations == 1 and state.iterations[1].accepted is None
    assert [m.id for m in state.population] == ["p0"] and not state.proposals


@pytest.mark.parametrize("fault", [name for name in FAULTS if name != "no_code"])
def test_a_fault_on_every_attempt_stops_the_session_cleanly_and_resume_continues(tmp_path, fault):
    spec = get_game(GAME)
    store = SessionStore(tmp_path / "sessions", fsync=False)
    server = start_server(fault)
    base_url = server.base_url if server is not None else closed_port_url()
    try:
        engine = new_engine(config(), store=store, reviewer=AutoReviewer(), spec=spec,
                            oracle=oracle(base_url, **FAULTS[fault][3]), evaluator=evaluator(spec))
        try:
            # no server, or a refused key: the next attempt would fail the same way at once, so the
            # run stops at the first; the other faults may pass, so every attempt is made
            expected = r"^oracle llm: " if fault in PERSISTENT else r"^oracle llm failed 2 times in iteration 1; last: "
            with pytest.raises(CsroError, match=expected) as raised:
                engine.run()
        finally:
            engine.writer.close()
    finally:
        if server is not None:
            server.stop()
    assert "\n" not in str(raised.value)
    session = engine.session_id
    log_path = tmp_path / "sessions" / session / EVENTS_FILE
    recorded = log_path.read_bytes()
    state = fold(store.read(session).events)
    assert state.closed.reason == "error" and state.closed.message == str(raised.value)
    attempts = 1 if fault in PERSISTENT else 2
    requests = check_failures(state, fault, attempts=attempts)
    if server is not None:
        assert len(server.chat_requests) == requests  # every request the server saw is accounted for
    assert [m.id for m in state.population] == ["p0"] and not state.proposals
    assert sorted(p.name for p in (log_path.parent / "policies").iterdir()) == ["p0.py"]
    assert WRONG_KEY.encode() not in recorded

    # The server answers again: the resumed session gets a third attempt and the policy joins.
    with ScriptedLLMServer([ALWAYS_PAPER]) as healthy:
        engine, warnings = resume_engine(session, store=store, overrides={"max_attempts": 3},
                                         reviewer=AutoReviewer(), spec=spec, oracle=oracle(healthy.base_url),
                                         evaluator=evaluator(spec))
        try:
            outcome = engine.run()
        finally:
            engine.writer.close()
    assert warnings == [] and outcome.reason == "completed"
    after = log_path.read_bytes()
    assert after.startswith(recorded)  # nothing recorded before was lost or rewritten
    state = fold(store.read(session).events)
    assert state.closed.reason == "completed" and state.completed_iterations == 1
    assert [m.id for m in state.population] == ["p0", "p1"] and "return 1" in state.member("p1").source
    check_failures(state, fault, attempts=attempts)
    assert state.payoff("p1", "p0") == 20.0  # paper beats the rock seed in all 20 throws


def test_the_session_carries_on_when_a_later_attempt_succeeds(tmp_path):
    """Three different faults, then a good reply, within one iteration's attempts."""
    spec = get_game(GAME)
    store = SessionStore(tmp_path / "sessions", fsync=False)
    with ScriptedLLMServer() as server:
        server.script(
            ScriptedReply.error(503, "warming up"), ScriptedReply.error(503, "warming up"),
            ScriptedReply(ALWAYS_PAPER, chunk_chars=4, cut_after_chunks=2),
            ScriptedReply(ALWAYS_PAPER, chunk_chars=4, cut_after_chunks=2),
            NO_CODE, NO_CODE, NO_CODE,
            ScriptedReply.error(429, "slow down", headers={"Retry-After": "0"}), ALWAYS_PAPER,
        )
        engine = new_engine(config(max_attempts=4), store=store, reviewer=AutoReviewer(), spec=spec,
                            oracle=oracle(server.base_url), evaluator=evaluator(spec))
        try:
            outcome = engine.run()
        finally:
            engine.writer.close()
        assert server.pending == 0 and server.unscripted_requests == 0
    assert outcome.reason == "completed"
    state = fold(store.read(engine.session_id).events)
    failures = [e for e in state.events if isinstance(e, OracleFailed)]
    assert [f.attempt for f in failures] == [1, 2, 3]
    assert [f.llm_calls[-1].get("error_kind") for f in failures] == ["server_error", "truncated", None]
    assert all("\n" not in f.error for f in failures)
    (proposal,) = state.proposals.values()
    assert proposal.attempt == 4 and proposal.decision.action == "accept"
    calls = proposal.proposal.llm_calls
    assert len(calls) == 1 and calls[0]["attempts"] == 2  # the 429, then the reply
    assert [m.id for m in state.population] == ["p0", "p1"]
    # The log is valid JSON lines with consecutive sequence numbers.
    lines = (tmp_path / "sessions" / engine.session_id / EVENTS_FILE).read_text().splitlines()
    assert [json.loads(line)["seq"] for line in lines] == list(range(1, len(lines) + 1))
