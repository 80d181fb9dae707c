"""Failed proposals reach the person (issue 36): an LLM oracle whose every candidate fails
hands its last failed code to the engine, which sends it to review with the failure, so a
person sees the code and the reason and may fix it by editing.

The LLM is the scripted server of tests/llm_server.py: its replies are test fixtures.
"""

from __future__ import annotations

import pytest

from csro_tui.config import RunConfig
from csro_tui.engine import Engine
from csro_tui.oracles.candidates import NoUsableCandidate
from csro_tui.oracles.registry import make_oracle
from csro_tui.records import Decision, Proposal, ReviewRequest
from csro_tui.reviewers import AutoReviewer
from csro_tui.sessions.events import OracleFailed, ProposalCreated, from_record, to_record
from csro_tui.sessions.state import fold
from csro_tui.sessions.store import SessionStore
from tests.fakes import ToyEvaluator, ToySpec, best_member_solve, strength
from tests.llm_server import llm_server  # noqa: F401
from tests.oracles.llm_fixtures import code_reply, options, toy_context, user_message

pytestmark = pytest.mark.usefixtures("no_llm_env")

CRASHING = code_reply(0.9, extra="CRASH = 1\n")


def test_zero_shot_hands_over_its_last_failed_code_with_the_failure(llm_server):
    llm_server.script(CRASHING, CRASHING)
    oracle = make_oracle("llm", options(llm_server, budget=2))

    with pytest.raises(NoUsableCandidate) as raised:
        oracle.propose(toy_context())

    failed = raised.value.failed
    assert isinstance(failed, Proposal)
    assert "CRASH = 1" in failed.source and strength(failed.source) == 0.9
    assert failed.failure.startswith("crash: ZeroDivisionError: boom")
    assert "Edit it (e) to fix it" in failed.rationale and failed.oracle == "llm" and failed.name == "llm-1"


def test_code_that_fails_static_validation_is_handed_over_too(llm_server):
    forbidden = ("```python\nimport os\n\nclass Policy:\n    def __init__(self, player, game):\n        pass\n\n"
                 "    def act(self, obs):\n        return 0\n```")
    llm_server.script(forbidden)
    oracle = make_oracle("llm", options(llm_server, budget=1))

    with pytest.raises(NoUsableCandidate) as raised:
        oracle.propose(toy_context())

    assert "import os" in raised.value.failed.source
    assert raised.value.failed.failure.startswith("invalid code:") and "os" in raised.value.failed.failure


def test_replies_without_any_code_leave_nothing_to_hand_over(llm_server):
    llm_server.script("No code, sorry.")
    with pytest.raises(NoUsableCandidate) as raised:
        make_oracle("llm", options(llm_server, budget=1)).propose(toy_context())
    assert raised.value.failed is None


def test_refinement_hands_over_its_last_failed_attempt(llm_server):
    llm_server.script(CRASHING)
    oracle = make_oracle("llm-refine", options(llm_server, budget=1))

    with pytest.raises(NoUsableCandidate) as raised:
        oracle.propose(toy_context())

    assert "CRASH = 1" in raised.value.failed.source and raised.value.failed.failure.startswith("crash")


class FixingReviewer:
    """Edits the failed code (drops its crash), then accepts what it sees."""

    name = "person"

    def __init__(self) -> None:
        self.requests: list[ReviewRequest] = []

    def decide(self, review: ReviewRequest) -> Decision:
        self.requests.append(review)
        if not review.validation.valid:
            return Decision.edit(review.proposal.source.replace("CRASH = 1\n", ""), "fixed the crash")
        return Decision.accept()


def _engine(llm_server, tmp_path, reviewer, *, iterations=1, max_attempts=3):
    store = SessionStore(tmp_path)
    writer = store.create("failed")
    engine = Engine(
        config=RunConfig(game="toy", oracle="llm", iterations=iterations, max_attempts=max_attempts),
        spec=ToySpec(),
        oracle=make_oracle("llm", options(llm_server, budget=1)),
        reviewer=reviewer,
        evaluator=ToyEvaluator(),
        meta_solve=best_member_solve,
        writer=writer,
        versions={"csro_tui": "test"},
    )
    return engine, store, writer


def test_the_person_sees_the_failed_code_and_its_failure_and_fixes_it_with_one_edit(llm_server, tmp_path):
    llm_server.script(CRASHING, CRASHING, CRASHING)
    reviewer = FixingReviewer()
    engine, store, writer = _engine(llm_server, tmp_path, reviewer)

    engine.run()
    writer.close()

    first = reviewer.requests[0]
    assert "CRASH = 1" in first.proposal.source and first.proposal.failure.startswith("crash")
    assert not first.validation.valid and first.validation.failure.summary().startswith("crash: ZeroDivisionError")
    assert "Traceback" in first.validation.failure.traceback
    assert len(llm_server.chat_requests) == 1  # one call: the person fixed it instead of two more attempts
    state = fold(store.read("failed").events)
    joined = state.population[-1]
    assert "CRASH" not in joined.source and strength(joined.source) == 0.9
    created = [e for e in state.events if isinstance(e, ProposalCreated)]
    assert created[0].proposal.failure and len(created[0].proposal.llm_calls) == 1  # its call recorded once
    assert not [e for e in state.events if isinstance(e, OracleFailed)]


def test_an_auto_reviewer_rejects_the_failed_code_and_the_oracle_hears_why(llm_server, tmp_path):
    llm_server.script(CRASHING, code_reply(0.5))
    engine, store, writer = _engine(llm_server, tmp_path, AutoReviewer())

    engine.run()
    writer.close()

    state = fold(store.read("failed").events)
    first, second = (state.proposals[pid] for pid in state.iterations[1].proposals)
    assert first.decision.action == "reject" and "crash" in first.decision.reason
    assert "crash" in user_message(llm_server.chat_requests[1])  # the next prompt lists the rejection
    assert second.decision.action == "accept" and strength(state.population[-1].source) == 0.5


def test_a_failed_proposal_round_trips_through_the_log_and_an_ordinary_one_is_unchanged():
    failed = ProposalCreated(proposal_id="i1.1", iteration=1, attempt=1,
                             proposal=Proposal(source="x", oracle="llm", name="llm-1", failure="crash: boom"))
    ordinary = ProposalCreated(proposal_id="i1.2", iteration=1, attempt=2,
                               proposal=Proposal(source="x", oracle="llm", name="llm-1"))
    failed.seq, ordinary.seq = 1, 2

    assert from_record(to_record(failed)).proposal.failure == "crash: boom"
    assert "failure" not in to_record(ordinary)["proposal"]
    assert from_record(to_record(ordinary)).proposal.failure == ""


def test_csro_run_says_why_the_failed_code_failed_and_where_it_is(llm_server, tmp_path, capsys):
    from csro_tui.cli import main
    from tests.tui.sample import KUHN_POLICY

    illegal = KUHN_POLICY.replace('return obs["legal_actions"][0]', "return 7")
    reply = f"Here it is.\n\n```python\n{illegal}```\n"
    llm_server.script(reply, reply, reply)
    code = main(["run", "--game", "kuhn_poker", "--oracle", "llm", "--iterations", "1", "--max-attempts", "1",
                 "--model", "scripted-model", "--base-url", llm_server.base_url, "--session-dir", str(tmp_path)])
    out = capsys.readouterr().out
    assert code == 0
    line = next(line for line in out.splitlines() if "the oracle's code failed" in line)
    assert "iteration 1: the oracle's code failed (illegal_action" in line and "rejected by auto" in line
    assert "proposal i1.1 of session" in line
