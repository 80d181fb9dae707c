"""The LLM oracles (`llm`, `llm-refine`, `llm-evolve`) end to end through the real
openai client against the scripted local server (tests/llm_server.py).

Every reply below is fixed test text served by that server; no model is
involved anywhere.  Most tests rank candidates with the engine's real gate
over the toy game of `tests/fakes.py` (a policy declares
`STRENGTH = x`; the payoff of a against b is strength(a) - strength(b);
source containing CRASH fails its run), so they take milliseconds.  The
last tests run `csro run` on RRPS with the real sandbox.
"""

from __future__ import annotations

import json
import threading
import time

import pytest

from csro_tui.cli import main
from csro_tui.config import RunConfig
from csro_tui.engine import Engine
from tests.fakes import ToyEvaluator, ToySpec, best_member_solve, strength, toy_policy
from csro_tui.errors import ConfigError, CsroError
from csro_tui.oracles.base import OracleContext
from csro_tui.records import PolicyRecord, Proposal
from csro_tui.oracles.llm.client import LLMError
from csro_tui.oracles.candidates import NoUsableCandidate
from csro_tui.oracles.llm.backend import load_recorded_calls
from csro_tui.oracles.llm.mutation import LLMMutation
from csro_tui.oracles.evolve.search import EvolutionOracle
from csro_tui.oracles.llm.recorded import RecordedLLM
from csro_tui.oracles.llm.refine import RefineOracle
from csro_tui.oracles.llm.zero_shot import ZeroShotOracle
from csro_tui.oracles.registry import make_oracle
from csro_tui.reviewers import AutoReviewer
from csro_tui.sessions.events import OracleFailed, ProposalCreated
from csro_tui.sessions.state import fold
from csro_tui.sessions.store import EVENTS_FILE, SessionStore
from tests.llm_server import ScriptedLLMServer, ScriptedReply, closed_port_url, llm_server  # noqa: F401
from tests.oracles.llm_fixtures import client, code_reply, options, toy_context, user_message


# The developer's own key, endpoint or LLM settings never leak in (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("no_llm_env")


# ------------------------------------------------------------------ helpers
# ------------------------------------------------------------------ zero-shot
def test_zero_shot_proposes_the_best_of_k_candidates_by_preview(llm_server):
    llm_server.script(code_reply(0.1), code_reply(0.5), code_reply(0.3))
    oracle = make_oracle("llm", options(llm_server, candidates=3))

    proposal = oracle.propose(toy_context())

    assert strength(proposal.source) == 0.5
    assert proposal.oracle == "llm" and proposal.parent is None
    assert len(llm_server.chat_requests) == 3
    # The K candidates answer the same question.
    assert len({json.dumps(r["messages"]) for r in llm_server.chat_requests}) == 1
    for value in ("+0.100", "+0.500", "+0.300"):
        assert value in proposal.rationale
    assert "Chosen: candidate" in proposal.rationale and "+0.500" in proposal.rationale.splitlines()[-2]
    # Every call is in the proposal, with what was asked and what came back.
    assert len(proposal.llm_calls) == 3
    assert sorted(strength(c["response"]) for c in proposal.llm_calls) == [0.1, 0.3, 0.5]
    assert all(c["messages"][0]["role"] == "system" and c["purpose"] == "best_response" for c in proposal.llm_calls)


def test_a_reply_without_code_is_a_failed_attempt_sent_back_with_its_reason(llm_server):
    llm_server.script("I would open with rock and adapt from there.", code_reply(0.2))
    oracle = make_oracle("llm", options(llm_server))

    proposal = oracle.propose(toy_context())

    assert strength(proposal.source) == 0.2
    assert "failed attempts: the reply has no code block and no class Policy" in proposal.rationale
    first, second = llm_server.chat_requests
    # The retry continues the conversation: the reply, then why it was unusable.
    assert second["messages"][:-2] == first["messages"]
    assert second["messages"][-2] == {"role": "assistant", "content": "I would open with rock and adapt from there."}
    assert "no code block" in user_message(second) and "```python" in user_message(second)
    assert [c["response"] for c in proposal.llm_calls][0].startswith("I would open")


def test_code_that_fails_static_validation_is_retried_with_the_issue(llm_server):
    forbidden = "```python\nimport os\n\nclass Policy:\n    def __init__(self, player, game):\n        pass\n\n    def act(self, obs):\n        return 0\n```"
    llm_server.script(forbidden, code_reply(0.4))
    proposal = make_oracle("llm", options(llm_server)).propose(toy_context())

    assert strength(proposal.source) == 0.4
    retry = user_message(llm_server.chat_requests[1])
    assert "invalid code" in retry and "os" in retry
    assert "import os" not in proposal.source


def test_a_candidate_that_crashes_in_its_preview_gets_the_failure_back(llm_server):
    llm_server.script(code_reply(0.9, extra="CRASH = 1\n"), code_reply(0.3))
    proposal = make_oracle("llm", options(llm_server)).propose(toy_context())

    assert strength(proposal.source) == 0.3 and "CRASH" not in proposal.source
    feedback = user_message(llm_server.chat_requests[1])
    assert "crash: ZeroDivisionError: boom" in feedback and "Traceback" in feedback
    assert "preview failed: crash" in proposal.rationale


def test_when_the_budget_is_spent_without_code_the_oracle_fails_with_the_reasons_and_calls(llm_server):
    llm_server.script("No code, sorry.", "Still no code.", code_reply(0.5))
    oracle = make_oracle("llm", options(llm_server, budget=2))

    with pytest.raises(NoUsableCandidate, match="no usable policy from 2 LLM calls.*no code block") as raised:
        oracle.propose(toy_context())

    assert len(raised.value.llm_calls) == 2
    assert llm_server.pending == 1  # the budget held: the third reply was never asked for


def test_rate_limit_and_server_error_are_retried_by_the_client_then_succeed(llm_server):
    llm_server.script(
        ScriptedReply.error(429, "slow down", headers={"Retry-After": "0"}),
        ScriptedReply.error(500, "overloaded", headers={"Retry-After": "0"}),
        code_reply(0.25),
    )
    oracle = ZeroShotOracle(client(llm_server.base_url, max_retries=3))

    proposal = oracle.propose(toy_context())

    assert strength(proposal.source) == 0.25
    (call,) = proposal.llm_calls
    assert call["attempts"] == 3 and call["error"] is None


def test_an_unreachable_server_raises_a_clear_llm_error_carrying_the_failed_call():
    oracle = ZeroShotOracle(client(closed_port_url(), max_retries=1))

    with pytest.raises(LLMError) as raised:
        oracle.propose(toy_context())

    assert raised.value.kind == "unreachable"
    assert "refused the connection" in str(raised.value) and "\n" not in str(raised.value)
    (record,) = raised.value.llm_calls
    assert record["error_kind"] == "unreachable" and record["attempts"] == 2


def test_a_timeout_raises_an_llm_error():
    with ScriptedLLMServer([ScriptedReply(hang=True)]) as server:
        oracle = ZeroShotOracle(client(server.base_url, timeout=0.3, max_retries=0))
        with pytest.raises(LLMError, match="did not answer within 0.3 s") as raised:
            oracle.propose(toy_context())
    assert raised.value.kind == "timeout"


def test_an_iteration_whose_candidates_all_fail_ends_alone_and_the_run_goes_on(llm_server, tmp_path):
    # Iteration 1: two replies without code (both attempts come up empty); iteration 2: a policy.
    llm_server.script("No code, sorry.", "Still no code.", code_reply(0.9))
    store = SessionStore(tmp_path)
    writer = store.create("small-model")
    engine = Engine(
        config=RunConfig(game="toy", oracle="llm", iterations=2, max_attempts=2),
        spec=ToySpec(),
        oracle=make_oracle("llm", options(llm_server, budget=1)),
        reviewer=AutoReviewer(),
        evaluator=ToyEvaluator(),
        meta_solve=best_member_solve,
        writer=writer,
        versions={"csro_tui": "test"},
    )
    engine.run()
    writer.close()

    state = fold(store.read("small-model").events)
    failures = [e for e in state.events if isinstance(e, OracleFailed)]
    assert [(f.iteration, f.attempt) for f in failures] == [(1, 1), (1, 2)]
    assert all("NoUsableCandidate" in f.error for f in failures)
    assert state.iterations[1].accepted is None and state.iterations[2].accepted is not None
    assert state.closed.reason == "completed"
    assert [strength(m.source) for m in state.population][-1] == 0.9


def test_a_call_cancelled_by_a_stop_is_recorded_without_costing_the_attempt(tmp_path):
    import threading
    import time

    store = SessionStore(tmp_path)
    writer = store.create("stopped")
    with ScriptedLLMServer([ScriptedReply(hang=True)]) as server:
        engine = Engine(
            config=RunConfig(game="toy", oracle="llm", iterations=1, max_attempts=1),
            spec=ToySpec(),
            oracle=ZeroShotOracle(client(server.base_url, max_retries=0)),
            reviewer=AutoReviewer(),
            evaluator=ToyEvaluator(),
            meta_solve=best_member_solve,
            writer=writer,
            versions={"csro_tui": "test"},
        )
        worker = threading.Thread(target=engine.run)
        worker.start()
        deadline = time.monotonic() + 30
        while not server.chat_requests and time.monotonic() < deadline:
            time.sleep(0.05)
        engine.request_stop()  # ctrl+q / ctrl+c while the model is still reading the prompt
        worker.join(timeout=30)
        assert not worker.is_alive()
    writer.close()

    state = fold(store.read("stopped").events)
    (failure,) = state.oracle_failures
    assert failure.cancelled and failure.llm_calls and failure.llm_calls[0]["error_kind"] == "cancelled"
    assert state.iterations[1].attempts == 0  # a resumed run asks again within its one attempt
    assert state.closed.reason == "stopped"


def test_the_engine_records_llm_failures_and_stops_the_session_cleanly(tmp_path):
    store = SessionStore(tmp_path)
    writer = store.create("down")
    engine = Engine(
        config=RunConfig(game="toy", oracle="llm", iterations=2, max_attempts=2),
        spec=ToySpec(),
        oracle=ZeroShotOracle(client(closed_port_url(), max_retries=0)),
        reviewer=AutoReviewer(),
        evaluator=ToyEvaluator(),
        meta_solve=best_member_solve,
        writer=writer,
        versions={"csro_tui": "test"},
    )

    # no server there: the next attempt would fail the same way, so the run stops at the first
    with pytest.raises(CsroError, match=r"^oracle llm: LLM server at http://127\.0\.0\.1:\d+/v1 refused the connection"):
        engine.run()
    writer.close()

    state = fold(store.read("down").events)
    assert state.closed.reason == "error" and state.closed.message.startswith("oracle llm: LLM server at ")
    failures = [e for e in state.events if isinstance(e, OracleFailed)]
    assert [f.attempt for f in failures] == [1]
    assert all(f.llm_calls and f.llm_calls[0]["error_kind"] == "unreachable" for f in failures)
    assert len(state.population) == 1  # the seed; nothing half-added


def test_rejection_reasons_and_opponents_by_weight_go_into_the_prompt(llm_server):
    population = [
        PolicyRecord("p0", "heavy", toy_policy(0.1), "seed"),
        PolicyRecord("p1", "light", toy_policy(0.2), "llm"),
        PolicyRecord("p2", "unused", toy_policy(0.3), "llm"),
    ]
    rejected = Proposal(source=toy_policy(0.05), oracle="llm", name="llm-1")
    context = toy_context(population, [0.7, 0.3, 0.0], rejections=[(rejected, "it only copies the heavy opponent")])
    llm_server.script(code_reply(0.6))

    make_oracle("llm", options(llm_server)).propose(context)

    prompt = user_message(llm_server.chat_requests[0])
    assert "it only copies the heavy opponent" in prompt and "STRENGTH = 0.05" in prompt
    assert prompt.index("heavy (id p0), weight 0.700") < prompt.index("light (id p1), weight 0.300")
    assert "unused" not in prompt  # zero weight: not shown


def test_summaries_are_asked_once_per_policy_source_and_then_cached(llm_server):
    summary = "It always plays the first legal action, whatever happens."
    llm_server.script(summary, code_reply(0.2), code_reply(0.3))
    oracle = make_oracle("llm", options(llm_server, opponent_format="summary"))

    first = oracle.propose(toy_context(iteration=1))
    second = oracle.propose(toy_context(iteration=2))

    purposes = [c["purpose"] for c in first.llm_calls]
    assert purposes == ["summarize", "best_response"]
    assert [c["purpose"] for c in second.llm_calls] == ["best_response"]  # cached by source hash
    for request in llm_server.chat_requests[1:]:
        assert summary in user_message(request) and "STRENGTH = 0.0" not in user_message(request)


def test_zero_shot_options_are_checked():
    with pytest.raises(ConfigError, match="unknown option\\(s\\) candidate"):
        make_oracle("llm", {"base_url": "http://127.0.0.1:9/v1", "candidate": 2})
    with pytest.raises(ConfigError, match="budget .* must cover the 3 candidates"):
        make_oracle("llm", {"base_url": "http://127.0.0.1:9/v1", "candidates": 3, "budget": 2})
    with pytest.raises(ConfigError, match="opponent_format must be one of auto, code, summary, names"):
        make_oracle("llm", {"base_url": "http://127.0.0.1:9/v1", "opponent_format": "prose"})
    with pytest.raises(ConfigError, match="environment variable NO_SUCH_KEY_VAR"):
        make_oracle("llm", {"base_url": "http://127.0.0.1:9/v1", "api_key_env": "NO_SUCH_KEY_VAR"})


# ------------------------------------------------------------------ refinement
def test_refinement_stops_as_soon_as_the_threshold_is_reached(llm_server):
    llm_server.script(code_reply(-0.2), code_reply(0.4), code_reply(0.9))
    oracle = make_oracle("llm-refine", options(llm_server))

    proposal = oracle.propose(toy_context())

    assert strength(proposal.source) == 0.4
    assert len(proposal.llm_calls) == 2 and llm_server.pending == 1
    assert [c["purpose"] for c in proposal.llm_calls] == ["best_response", "refine"]
    assert "Stopped: threshold +0.000 reached" in proposal.rationale
    # The refinement prompt carries the root's code and its evaluation per opponent.
    prompt = user_message(llm_server.chat_requests[1])
    assert "STRENGTH = -0.2" in prompt and "zero (p0): -0.200" in prompt


def test_refinement_keeps_only_improvements_and_stops_when_the_budget_is_spent(llm_server):
    llm_server.script(code_reply(-0.5), code_reply(-0.7), code_reply(-0.2), code_reply(0.8))
    oracle = RefineOracle(client(llm_server.base_url), budget=3)

    proposal = oracle.propose(toy_context())

    assert strength(proposal.source) == -0.2
    assert len(proposal.llm_calls) == 3 and llm_server.pending == 1
    # The worse attempt (-0.7) was dropped: the third request refines the root again.
    third = user_message(llm_server.chat_requests[2])
    assert "STRENGTH = -0.5" in third and "STRENGTH = -0.7" not in third
    lines = proposal.rationale
    assert "2. refines 1: -0.700, dropped" in lines and "3. refines 1: -0.200, kept (improved)" in lines
    assert "Stopped: budget of 3 calls used" in lines


def test_refinement_feeds_back_a_crash_with_category_and_traceback(llm_server):
    llm_server.script(code_reply(-0.5), code_reply(-0.1, extra="CRASH = 1\n"), code_reply(0.1))
    proposal = make_oracle("llm-refine", options(llm_server)).propose(toy_context())

    assert strength(proposal.source) == 0.1
    fix_request = user_message(llm_server.chat_requests[2])
    assert "CRASH = 1" in fix_request  # the failing code is what gets fixed
    assert "FAILED: crash: ZeroDivisionError: boom" in fix_request and "Traceback" in fix_request
    assert "nan" not in fix_request
    assert "2. refines 1: failed: crash" in proposal.rationale and "3. refines 2: +0.100" in proposal.rationale


def test_refinement_from_a_member_names_it_as_the_parent(llm_server):
    population = [PolicyRecord("p0", "zero", toy_policy(0.0), "seed"), PolicyRecord("p1", "strong", toy_policy(0.4), "llm")]
    llm_server.script(code_reply(0.5))
    oracle = make_oracle("llm-refine", options(llm_server, start="member", threshold=0.1))

    proposal = oracle.propose(toy_context(population, [0.2, 0.8]))

    assert proposal.parent == "p1" and strength(proposal.source) == 0.5
    assert "STRENGTH = 0.4" in user_message(llm_server.chat_requests[0])  # it refined the member's code
    assert "from population member strong (p1)" in proposal.rationale


def test_refinement_with_no_working_attempt_fails_with_the_chain(llm_server):
    llm_server.script("no code", code_reply(0.0, extra="CRASH = 1\n"))
    oracle = make_oracle("llm-refine", options(llm_server, budget=2))

    with pytest.raises(NoUsableCandidate, match="no attempt ran successfully .*budget of 2 calls used") as raised:
        oracle.propose(toy_context())
    assert len(raised.value.llm_calls) == 2


def _finish_when(server: ScriptedLLMServer, requests: int, context: OracleContext) -> threading.Thread:
    """Set finish (and cancel, as the engine's finish_oracle does) once `requests` calls have reached the server."""

    def watch() -> None:
        deadline = time.monotonic() + 30
        while len(server.chat_requests) < requests and time.monotonic() < deadline:
            time.sleep(0.02)
        context.finish.set()
        context.cancel.set()

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    return watcher


def test_finishing_refinement_early_proposes_the_best_so_far_and_cancels_the_call_in_flight(llm_server):
    # A person tired of waiting on a slow model: the second call never answers; finish takes the first reply.
    llm_server.script(code_reply(0.2), ScriptedReply(hang=True))
    oracle = make_oracle("llm-refine", options(llm_server, timeout=60.0, threshold=5.0))  # nothing clears 5.0
    context = toy_context()
    watcher = _finish_when(llm_server, 2, context)
    started = time.monotonic()

    proposal = oracle.propose(context)

    watcher.join()
    assert time.monotonic() - started < 20  # not the 60 s timeout of the call in flight
    assert strength(proposal.source) == 0.2
    assert len(proposal.llm_calls) == 2 and proposal.llm_calls[-1]["error_kind"] == "cancelled"
    assert "Stopped: finished early on request (the call in flight was cancelled)" in proposal.rationale


def test_the_engine_s_finish_oracle_ends_the_wait_and_the_run_goes_on(llm_server, tmp_path):
    llm_server.script(code_reply(0.2), ScriptedReply(hang=True))
    store = SessionStore(tmp_path)
    writer = store.create("finish")
    engine = Engine(
        config=RunConfig(game="toy", oracle="llm-refine", iterations=1, max_attempts=1),
        spec=ToySpec(),
        oracle=make_oracle("llm-refine", options(llm_server, timeout=60.0, threshold=5.0)),
        reviewer=AutoReviewer(),
        evaluator=ToyEvaluator(),
        meta_solve=best_member_solve,
        writer=writer,
        versions={"csro_tui": "test"},
    )
    worker = threading.Thread(target=engine.run)
    worker.start()
    deadline = time.monotonic() + 30
    while len(llm_server.chat_requests) < 2 and time.monotonic() < deadline:
        time.sleep(0.02)
    engine.finish_oracle()
    worker.join(timeout=30)
    assert not worker.is_alive()
    writer.close()

    state = fold(store.read("finish").events)
    assert state.closed.reason == "completed" and not engine.stop_requested
    (proposal,) = state.proposals.values()
    assert strength(proposal.proposal.source) == 0.2 and proposal.decision.action == "accept"


def test_finishing_a_zero_shot_candidate_early_with_nothing_usable_says_so_at_once(llm_server):
    llm_server.script(code_reply(0.0, extra="CRASH = 1\n"), ScriptedReply(hang=True))
    oracle = make_oracle("llm", options(llm_server, timeout=60.0, budget=3))
    context = toy_context()
    watcher = _finish_when(llm_server, 2, context)
    started = time.monotonic()

    with pytest.raises(NoUsableCandidate, match="finished early on request") as raised:
        oracle.propose(context)

    watcher.join()
    assert time.monotonic() - started < 20
    assert [c.get("error_kind") for c in raised.value.llm_calls] == [None, "cancelled"]


# ------------------------------------------------------------------ evolution (LLM operator)
def test_llm_evolution_applies_edits_and_falls_back_to_a_full_module(llm_server):
    edit = "Raise the constant.\n<<<<<<< SEARCH\nSTRENGTH = 0.0\n=======\nSTRENGTH = 0.6\n>>>>>>> REPLACE\n"
    stale_edit = (
        "Rewrite.\n<<<<<<< SEARCH\nthis line is not in the parent\n=======\nx = 1\n>>>>>>> REPLACE\n\n"
        + code_reply(0.8)
    )
    llm_server.script(edit, stale_edit, "Nothing to change.")
    oracle = make_oracle("llm-evolve", options(llm_server, budget=3, islands=1, children=3, game_seeds=False))

    proposal = oracle.propose(toy_context())

    assert strength(proposal.source) == 0.8 and proposal.parent == "p0"
    assert len(proposal.llm_calls) == 3 and all(c["purpose"] == "mutate" for c in proposal.llm_calls)
    summary = oracle.last_search
    assert summary.children == 3 and summary.failures == 1 and summary.programs == 3
    assert "rewrite: edits did not apply" in proposal.rationale
    assert "edits did not apply (the reply has no SEARCH/REPLACE blocks) and no full module" in proposal.rationale
    # The mutate prompt shows the parent and how it fared against each opponent.
    prompt = user_message(llm_server.chat_requests[0])
    assert "STRENGTH = 0.0" in prompt and "SEARCH" in prompt and "zero (p0): +0.000" in prompt


def test_llm_evolution_tells_the_model_why_the_reviewer_rejected_earlier_proposals(llm_server):
    rejected = Proposal(source=toy_policy(0.05), oracle="llm-evolve", name="llm-evolve-1")
    llm_server.script(code_reply(0.3))
    oracle = make_oracle("llm-evolve", options(llm_server, budget=1, islands=1, game_seeds=False))

    oracle.propose(toy_context(rejections=[(rejected, "it ignores the opponent entirely")]))

    assert "- it ignores the opponent entirely" in user_message(llm_server.chat_requests[0])


def test_concurrent_llm_evolution_replays_from_its_recorded_calls(llm_server):
    """Calls finish in any order, but are kept in request order, so a replay asks for them in that order."""
    llm_server.script(*[ScriptedReply(code_reply(round(0.1 * n, 1)), chunk_delay_s=0.01 * (4 - n)) for n in range(1, 5)])
    live_oracle = make_oracle("llm-evolve", options(llm_server, budget=4, islands=2, children=2, game_seeds=False))
    live = live_oracle.propose(toy_context())

    recorded = RecordedLLM(live.llm_calls)
    replay_oracle = EvolutionOracle(LLMMutation(recorded), live_oracle.settings, name="llm-evolve")
    replayed = replay_oracle.propose(toy_context())

    assert replayed.source == live.source and replayed.rationale == live.rationale
    assert replayed.llm_calls == live.llm_calls
    assert recorded.remaining == 0


def test_llm_evolution_spends_exactly_its_budget_over_generations(llm_server):
    llm_server.script(*[code_reply(round(0.1 * n, 1)) for n in range(1, 6)])
    oracle = make_oracle("llm-evolve", options(llm_server, budget=5, islands=2, children=2, game_seeds=False))

    proposal = oracle.propose(toy_context())

    assert len(llm_server.chat_requests) == 5 and llm_server.pending == 0
    assert oracle.last_search.generations == 2  # 4 children, then 1
    assert strength(proposal.source) == 0.5


# ------------------------------------------------------------------ csro run on RRPS, recorded and replayed
ALWAYS_PAPER = '''The population only throws rock, so paper wins every throw.

```python
class Policy:
    def __init__(self, player, game):
        self.player = player

    def act(self, obs):
        return 1
```
'''

BEAT_PREVIOUS = '''Answer whatever the opponent threw last.

```python
class Policy:
    def __init__(self, player, game):
        self.player = player

    def act(self, obs):
        if not obs["opp_moves"]:
            return 2
        return (obs["opp_moves"][-1] + 1) % 3
```
'''

RUN_FLAGS = ["--game", "rrps(num_repetitions=50)", "--oracle", "llm", "--iterations", "2", "--seeds", "constant_rock",
             "--benchmark", "off", "--episodes", "2", "--smoke-episodes", "1", "--model", "scripted-model"]


def only_session(root) -> str:
    (session,) = [p.name for p in root.iterdir() if (p / EVENTS_FILE).exists()]
    return session


def test_csro_run_records_every_llm_call_and_replays_without_a_server(tmp_path, capsys):
    recorded_root, replay_root = tmp_path / "live", tmp_path / "replay"
    with ScriptedLLMServer([ALWAYS_PAPER, "I cannot decide.", BEAT_PREVIOUS]) as server:
        code = main(["run", *RUN_FLAGS, "--base-url", server.base_url, "--session-dir", str(recorded_root)])
    assert code == 0, capsys.readouterr().err

    session = only_session(recorded_root)
    state = fold(SessionStore(recorded_root).read(session).events)
    assert state.closed.reason == "completed"
    created = [e for e in state.events if isinstance(e, ProposalCreated)]
    calls = [c for e in created for c in e.proposal.llm_calls]
    assert [len(e.proposal.llm_calls) for e in created] == [1, 2]
    assert [c["response"] for c in calls] == [ALWAYS_PAPER, "I cannot decide.", BEAT_PREVIOUS]
    assert all(c["model"] == "scripted-model" and c["messages"][0]["role"] == "system" for c in calls)
    assert "Repeated Rock-Paper-Scissors" in calls[0]["messages"][0]["content"]
    assert "return 1" in state.member("p1").source and "opp_moves" in state.member("p2").source
    assert state.member("p1").origin == "llm"

    # The same run again with no server: the recorded calls answer.
    code = main(["run", *RUN_FLAGS, "--llm", f"recorded:{recorded_root / session}", "--session-dir", str(replay_root)])
    assert code == 0, capsys.readouterr().err
    replayed = fold(SessionStore(replay_root).read(only_session(replay_root)).events)
    assert [m.source for m in replayed.population] == [m.source for m in state.population]
    assert len(load_recorded_calls(recorded_root / session)) == 3



def test_a_replay_that_diverges_stops_with_a_clear_error(tmp_path):
    calls = [
        {"purpose": "best_response", "model": "m", "base_url": "http://x/v1", "response": ALWAYS_PAPER, "attempts": 1,
         "messages": [{"role": "user", "content": "a different question"}]},
    ]
    oracle = ZeroShotOracle(RecordedLLM(calls))
    with pytest.raises(LLMError, match="recorded session diverged at call 1: 2 messages asked, 1 recorded"):
        oracle.propose(toy_context())


def test_run_flags_become_oracle_options():
    from csro_tui.cli import build_parser
    from csro_tui.commands.run import given_flags

    args = build_parser().parse_args(
        ["run", "--oracle", "llm", "--model", "m", "--api-key-env", "MY_KEY", "--temperature", "0.2",
         "--max-tokens", "900", "--llm-budget", "6", "--candidates", "2", "--llm", "live",
         "--oracle-option", "top_k=3"]
    )
    flags = given_flags(args)
    assert flags["model"] == "m"
    assert flags["oracle_options"] == {
        "top_k": 3, "api_key_env": "MY_KEY", "temperature": 0.2, "max_tokens": 900, "budget": 6,
        "candidates": 2, "llm": "live",
    }
    oracle = make_oracle("llm", {**flags["oracle_options"], "api_key_env": None, "base_url": "http://127.0.0.1:9/v1"})
    assert (oracle.candidates, oracle.budget, oracle.prompts.top_k) == (2, 6, 3)
    assert oracle.backend.config.temperature == 0.2 and oracle.backend.config.max_tokens == 900
