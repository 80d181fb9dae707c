"""The UI-free adapters: session state -> dashboard, review request -> review info, decisions."""

from __future__ import annotations

import dataclasses

from csro_tui.oracles.base import Preview, Proposal
from csro_tui.policies.failures import FailureCategory, PolicyFailure
from csro_tui.reviewers import Decision, ReviewRequest, ValidationResult
from csro_tui.sessions import events as ev
from csro_tui.sessions.state import fold
from csro_tui.tui.adapt import REGENERATE_REASON, dashboard_data, engine_decision, event_line, review_info
from csro_tui.tui.model import ReviewDecision, block_plot
from tests.tui.sample import BLUFFER, record_sample_session, sample_review


def test_dashboard_of_a_folded_session(tmp_path):
    events = record_sample_session(tmp_path)
    data = dashboard_data(fold(events))
    assert [m.id for m in data.members] == ["p0", "p1"]
    assert [m.weight for m in data.members] == [0.0, 1.0]
    assert data.cell("p1", "p0").mean == 0.5 and data.cell("p0", "p1").mean == -0.5  # antisymmetric
    assert data.cell("p0", "p0").mean == 0.0
    assert data.members[1].scores["vs meta"] == 0.0 and data.members[0].scores["vs meta"] == -0.5
    assert data.metric_name == "exploitability" and data.metric_history == [(0, 0.5), (1, 0.25)]
    assert data.log[0] == "#1 session_started: kuhn_poker · best-response · nash"
    assert data.closed
    # earlier steps: before p1 joined
    early = dashboard_data(fold(events[:6]))
    assert [m.id for m in early.members] == ["p0"] and early.metric_history == [(0, 0.5)]


def test_llm_usage_reaches_the_status_numbers(tmp_path):
    events = record_sample_session(tmp_path)
    created = next(e for e in events if isinstance(e, ev.ProposalCreated))
    call = sample_review().llm_calls[0]
    created.proposal = dataclasses.replace(created.proposal, llm_calls=[call, call])
    data = dashboard_data(fold(events))
    assert (data.llm_calls, data.tokens, round(data.cost, 4)) == (2, 38, 0.0042)


def test_event_lines_name_what_happened():
    decided = ev.ProposalDecided(proposal_id="i1.1", action="reject", decided_by="tui", reason="too timid", seq=7)
    assert event_line(decided) == "#7 proposal_decided: i1.1 reject by tui: too timid"
    failure = PolicyFailure(FailureCategory.TIMEOUT, "act took 2 s", policy="candidate")
    validated = ev.ProposalValidated(proposal_id="i1.2", valid=False, failure=failure, seq=8)
    assert event_line(validated) == "#8 proposal_validated: i1.2 invalid: timeout: act took 2 s (candidate)"


def test_review_info_from_a_request():
    proposal = Proposal(BLUFFER, "llm", "bluffer", parent="p0", rationale="why")
    request = ReviewRequest(
        proposal_id="i2.1",
        proposal=proposal,
        iteration=2,
        attempt=1,
        validation=ValidationResult(
            valid=False, issues=[{"line": 3, "col": 0, "message": "import os is not allowed"}]
        ),
        preview=None,
        parent_source="class Policy: pass\n",
    )
    info = review_info(request)
    assert not info.valid and info.failure == "invalid: line 3: import os is not allowed"
    assert info.validation == ["line 3:0: import os is not allowed"]
    assert info.parent_source == "class Policy: pass\n" and info.expected_payoff is None

    ok = dataclasses.replace(
        request,
        validation=ValidationResult(valid=True, smoke={"p0": 0.25}, smoke_episodes=2),
        preview=Preview(0.125, {"p0": 0.125}, {"AggScore": -0.5, "per_opponent": {"x": 1.0}}),
    )
    info = review_info(ok)
    assert info.valid and info.failure is None and info.expected_payoff == 0.125
    assert info.validation == ["ok: static checks", "ok: smoke run (2 episodes each): p0 +0.25"]
    assert info.population_metrics == {"AggScore": -0.5}  # nested values are left out

    slow = dataclasses.replace(ok, validation=dataclasses.replace(
        ok.validation, timing="slow: act: 11.0 ms per call on average, 40.0 ms at most (100 calls) "
                              "(the contract expects act well under 1 ms)"))
    assert review_info(slow).validation[-1].startswith("warning: timing: slow: act: 11.0 ms per call")
    fast = dataclasses.replace(ok, validation=dataclasses.replace(ok.validation, timing="act: 0.42 ms per call"))
    assert review_info(fast).validation[-1] == "ok: timing: act: 0.42 ms per call"


def test_decisions_for_the_engine():
    assert engine_decision(ReviewDecision("accept")) == Decision.accept()
    assert engine_decision(ReviewDecision("edit", source="x = 1\n")) == Decision.edit("x = 1\n")
    assert engine_decision(ReviewDecision("reject", reason="no")) == Decision.reject("no")
    assert engine_decision(ReviewDecision("regenerate")) == Decision.reject(REGENERATE_REASON)


def test_block_plot_rows():
    assert block_plot([0.0, 1.0], 2) == [" █", "▁█"]
    assert block_plot([1.0, 1.0], 1) == ["██"]
