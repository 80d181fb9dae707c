"""The LLM oracles against a real model (marker `real_llm`).

These run only when $CSRO_REAL_LLM_BASE_URL names an OpenAI-compatible
server (`scripts/local-llm.sh start` serves Qwen2.5-Coder-1.5B-Instruct on
this machine; `.ci/run` sets the variable when the model starts) and are
skipped otherwise.  Every reply here is real model output, different from
run to run, so the tests assert only what must hold whatever the model
writes: the call is made and recorded with the server's token counts, the
prompt fits the context, the reply becomes either validated code or a
specific reason, that reason reaches the next prompt, and the run completes
with its metrics.  Nothing depends on the model being good at the game.

Budgets are small: at most 4 calls in all.  A call with a ~2,000-token
prompt takes 3-6 minutes on 2 busy CPU cores (measured: prompt read at
~7-11 tokens/s, reply written at ~3.5-9 tokens/s on one server thread), so
these tests take 10-25 minutes; follow-up calls reuse the cached prefix.  The tests take a file lock so that, under `pytest -n 2`, they reach
the one-slot server one at a time instead of timing each other out.
"""

from __future__ import annotations

import fcntl
import math
import os
import tempfile
from pathlib import Path

import pytest

from csro_tui.cli import main
from csro_tui.oracles.llm.conversation import code_from_reply
from csro_tui.sessions.events import MetricsComputed, OracleFailed, ProposalCreated
from csro_tui.sessions.state import fold
from csro_tui.sessions.store import EVENTS_FILE, SessionStore
from tests.conftest import REAL_LLM_ENV

pytestmark = pytest.mark.real_llm

MODEL = os.environ.get("CSRO_REAL_LLM_MODEL", "qwen2.5-coder-1.5b-instruct")
CONTEXT_TOKENS = int(os.environ.get("CSRO_REAL_LLM_CONTEXT", "8192"))  # the server's window (scripts/local-llm.sh)


@pytest.fixture(autouse=True)
def one_at_a_time(monkeypatch):
    """Only the given server: no key, endpoint or LLM setting of the developer's leaks in."""
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "CSRO_PROMPTS_DIR"):
        monkeypatch.delenv(name, raising=False)
    for name in list(os.environ):
        if name.startswith("CSRO_LLM_"):
            monkeypatch.delenv(name, raising=False)
    lock_path = Path(tempfile.gettempdir()) / "csro-real-llm-tests.lock"
    with open(lock_path, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def run_with_model(tmp_path: Path, *flags: str) -> tuple[int, object]:
    """`csro run` against the real model; (exit code, folded session)."""
    root = tmp_path / "sessions"
    code = main([
        "run", *flags, "--review", "auto", "--max-attempts", "1",
        "--base-url", os.environ[REAL_LLM_ENV], "--model", MODEL,
        # Bounded replies and a patient client: a CPU model writes ~4-20 tokens/s.  Not streamed:
        # llama-cpp-python's server reports token usage only on plain requests.
        "--max-tokens", "1024", "--oracle-option", "stream=false",
        "--oracle-option", "timeout=900", "--oracle-option", "max_retries=1", "--oracle-option", "concurrency=1",
        "--session-dir", str(root),
    ])
    (session,) = [p.name for p in root.iterdir() if (p / EVENTS_FILE).exists()]
    return code, fold(SessionStore(root).read(session).events)


def recorded_calls(state) -> list[dict]:
    calls = []
    for event in state.events:
        if isinstance(event, ProposalCreated):
            calls += event.proposal.llm_calls or []
        elif isinstance(event, OracleFailed):
            calls += event.llm_calls or []
    return calls


def assert_real_calls(calls: list[dict], budget: int) -> None:
    """Each call answered, with the server's own token counts, and fit the context."""
    assert 1 <= len(calls) <= budget
    for call in calls:
        assert call["error"] is None, call["error"]
        assert call["model"] and call["response"].strip()
        assert not call["usage_estimated"], "the server reports usage; it must be recorded, not estimated"
        assert 0 < call["prompt_tokens"] and call["prompt_tokens"] + call["completion_tokens"] <= CONTEXT_TOKENS
        assert 0 < call["completion_tokens"] <= 1024
        assert call["latency_s"] > 0


def assert_accepted_ones_beat_the_meta_strategy(state) -> None:
    """--review auto: whatever joined was valid, new, and better than the meta-strategy it answered."""
    for proposal in state.proposals.values():
        decision = proposal.decision
        assert decision is not None, f"{proposal.id} was never decided"
        if decision.action == "accept":
            preview = proposal.preview.preview
            assert proposal.validation.valid and preview.failure is None
            assert preview.duplicate_of is None
            assert preview.expected_payoff > 0
        else:
            assert decision.reason.strip(), "a rejection must say why"


def assert_outcome_recorded(code: int, state, calls: list[dict]) -> bool:
    """The run completed either with a decided proposal, or, when no usable policy came within the
    budget, with its one attempt failed, the reasons recorded and the iteration ended without a
    policy (the model's failure ends the iteration, not the run).  True when a proposal was made."""
    if state.proposals:
        assert code == 0 and state.closed.reason == "completed"
        (proposal,) = state.proposals.values()
        assert proposal.proposal.source.strip() and proposal.validation is not None
        if not proposal.validation.valid:
            assert proposal.validation.issues or proposal.validation.failure is not None
        assert_accepted_ones_beat_the_meta_strategy(state)
        return True
    assert code == 0 and state.closed.reason == "completed"
    (failure,) = state.oracle_failures
    assert failure.error.startswith("NoUsableCandidate: ") and len(failure.llm_calls) == len(calls)
    assert state.iterations[1].accepted is None
    return False


def test_zero_shot_reply_becomes_checked_code_or_a_specific_reason(tmp_path, capsys):
    budget = 2
    code, state = run_with_model(tmp_path, "--game", "kuhn_poker", "--oracle", "llm", "--iterations", "1",
                                 "--llm-budget", str(budget))
    calls = recorded_calls(state)
    assert_real_calls(calls, budget)
    assert "Kuhn" in calls[0]["messages"][0]["content"] + calls[0]["messages"][-1]["content"]

    # Each reply is either a statically valid module or an unusable reply with a reason; that
    # reason is what the next call is told.
    outcomes = [code_from_reply(call["response"], call["finish_reason"]) for call in calls]
    for (source, reason), following in zip(outcomes, calls[1:] + [None]):
        assert (source is None) != (reason is None)
        if reason is not None:
            assert reason.strip()
            if following is not None:
                assert reason[:60] in following["messages"][-1]["content"]
    assert_outcome_recorded(code, state, calls)


def test_llm_refine_run_on_kuhn_completes_with_metrics_and_recorded_tokens(tmp_path, capsys):
    budget = 2
    # From the example, as README advises for small models: every call edits working code.
    code, state = run_with_model(tmp_path, "--game", "kuhn_poker", "--oracle", "llm-refine", "--iterations", "1",
                                 "--llm-budget", str(budget), "--oracle-option", "start=example")
    calls = recorded_calls(state)
    assert_real_calls(calls, budget)
    proposed = assert_outcome_recorded(code, state, calls)

    # Metrics are computed when the population changes: for the seeds (iteration 0), then for
    # iteration 1 only if a proposal joined.
    metrics = {m.iteration: m for m in state.events if isinstance(m, MetricsComputed)}
    assert metrics[0].exploitability is not None and math.isfinite(metrics[0].exploitability)
    accepted = state.iterations[1].accepted if proposed else None
    if accepted is None:
        assert 1 not in metrics
    else:
        assert metrics[1].new_policy == accepted and metrics[1].population_size == 2
        assert metrics[1].new_policy_payoff > 0 and math.isfinite(metrics[1].exploitability)
