"""The UI-free adapters: session state -> dashboard, review request -> review info, decisions."""

from __future__ import annotations

import dataclasses

from csro_tui.records import Decision, Preview, Proposal, ReviewRequest, ValidationResult
from csro_tui.sandbox.failures import FailureCategory, PolicyFailure
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
    validated = ev.ProposalValidated(proposal_id="i1.2", validation=ValidationResult(valid=False, failure=failure), seq=8)
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


def test_the_metric_chart_starts_at_zero_and_a_single_value_is_not_a_chart():
    """Issue 29, item 10: Leduc's 1.4667 (after 4.7) drawn as ▁; one point drew eight identical rows."""
    from csro_tui.tui.model import DashboardData
    from csro_tui.tui.widgets.metric_curve import MetricCurve

    curve = MetricCurve()
    two = DashboardData(metric_name="exploitability", metric_history=[(0, 4.7), (1, 1.4667)])
    lines = curve.render_curve(two, width=40, height=11).plain.splitlines()
    chart = [line.split("┤", 1)[1] for line in lines if "┤" in line]
    assert lines[len(chart)].lstrip().startswith("0.0000 ┤")  # the bottom of the axis is 0
    last_column = [row[-1] for row in chart]
    assert last_column.count("█") == int(1.4667 / 4.7 * len(chart))  # a third of the height, not one eighth of a row
    one = curve.render_curve(DashboardData(metric_name="exploitability", metric_history=[(0, 0.3333)]), width=40, height=11)
    assert one.plain == "exploitability 0.3333 (it 0)\nthe chart starts with the next iteration"
    negative = DashboardData(metric_name="AggScore", metric_history=[(0, -0.5), (1, 0.25)])
    assert "-0.5000 ┤" in curve.render_curve(negative, width=40, height=8).plain  # spans 0: from its minimum


def test_sampled_scores_in_the_population_table_carry_their_standard_error(tmp_path):
    """Issue 29, item 10: the population table showed sampled figures without the review's ±."""
    from csro_tui.tui.widgets.population_table import PopulationTable

    events = record_sample_session(tmp_path)
    exact = dashboard_data(fold(events))
    assert exact.members[0].score_stderr == {}  # exact payoffs: no ±
    for event in events:
        if isinstance(event, ev.PayoffsEvaluated):
            event.entries = [dataclasses.replace(entry, stderr=0.1, episodes=40, exact=False) for entry in event.entries]
    sampled = dashboard_data(fold(events))
    p0 = sampled.members[0]
    assert p0.scores["vs meta"] == -0.5 and round(p0.score_stderr["vs meta"], 6) == 0.1  # all weight on p1
    for narrow, shown in ((False, "-0.500 ± 0.100"), (True, "-0.500~")):
        assert str(PopulationTable._cells(p0, ["vs meta"], narrow)[-1]) == shown


def test_event_lines_count_in_the_singular_too():
    """Found driving goofspiel: "benchmark_evaluated: p0 vs 1 bots"."""
    one_bot = ev.BenchmarkEvaluated(policy_id="p0", per_bot={"random": 0.2}, episodes=10, seed=1)
    assert event_line(one_bot).endswith("benchmark_evaluated: p0 vs 1 bot")
    one_matchup = ev.PayoffsEvaluated(entries=[ev.PayoffRecord("p1", "p0", 0.5, exact=True)])
    assert event_line(one_matchup).endswith("payoffs_evaluated: 1 matchup")
