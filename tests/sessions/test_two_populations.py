"""How a two-population session is recorded and folded (issue 23; docs/POP2 contract):
members with a seat, seat-0 x seat-1 payoff entries, the meta-strategies of both seats
in one `meta_solved`; and one-population lines with no new keys."""

from __future__ import annotations

import json

import pytest

from csro_tui.errors import SessionError
from csro_tui.records import PolicyRecord, Proposal
from csro_tui.sessions.events import (
    MetaSolved,
    OracleFailed,
    PayoffRecord,
    PayoffsEvaluated,
    PolicyAdded,
    ProposalCreated,
    SessionStarted,
    from_record,
    to_record,
)
from csro_tui.sessions.state import fold


def started(populations: int) -> SessionStarted:
    config = {"game": "kuhn_poker", "max_attempts": 3}
    if populations == 2:
        config["populations"] = 2
    return SessionStarted(session_id="s", game="kuhn_poker", oracle="best-response", solver="nash",
                          config=config, versions={})


def member(pid: str, seat: int | None) -> PolicyAdded:
    return PolicyAdded(policy=PolicyRecord(id=pid, name=pid, source="", origin="seed", seat=seat))


def numbered(events):
    for seq, event in enumerate(events, 1):
        event.seq = seq
    return events


def two_population_state():
    return fold(numbered([
        started(2),
        member("p0", 0), member("p1", 1), member("p2", 0), member("p3", 1),
        PayoffsEvaluated(entries=[PayoffRecord("p0", "p1", -0.5, exact=True), PayoffRecord("p0", "p3", 0.25, exact=True),
                                  PayoffRecord("p2", "p1", 1.0, exact=True), PayoffRecord("p2", "p3", -1.0, exact=True)]),
        MetaSolved(solver="nash", population=["p0", "p2", "p1", "p3"], strategy=[0.8, 0.2, 0.6, 0.4], value=-0.1),
    ]))


def test_a_two_population_session_folds_to_both_populations_and_their_matrix():
    state = two_population_state()
    assert state.populations == 2
    assert [m.id for m in state.seat_members(0)] == ["p0", "p2"]
    assert [m.id for m in state.seat_members(1)] == ["p1", "p3"]
    assert state.payoff("p0", "p3") == 0.25 and state.payoff("p3", "p0") == -0.25
    assert state.payoff("p0", "p2") is None  # same seat: never evaluated
    assert state.missing_payoffs() == []
    assert state.seat_matrix().tolist() == [[-0.5, 0.25], [1.0, -1.0]]
    assert state.meta_matrix(["p0", "p2", "p1", "p3"]).tolist() == [[-0.5, 0.25], [1.0, -1.0]]
    assert state.solver_ids() == ["p0", "p2", "p1", "p3"] and state.meta_is_current
    assert state.seat_strategy(0) == {"p0": 0.8, "p2": 0.2}
    assert state.seat_strategy(1) == {"p1": 0.6, "p3": 0.4}
    assert state.seat_value(0) == -0.1 and state.seat_value(1) == 0.1


def test_a_same_seat_payoff_entry_is_a_bad_event():
    events = numbered([started(2), member("p0", 0), member("p1", 0),
                       PayoffsEvaluated(entries=[PayoffRecord("p0", "p1", 0.5)])])
    with pytest.raises(SessionError, match="both in seat 0"):
        fold(events)


def test_seats_round_trip_and_one_population_lines_have_no_seat_key():
    seated = member("p1", 1)
    seated.seq = 2
    record = json.loads(json.dumps(to_record(seated)))
    assert record["policy"]["seat"] == 1 and from_record(record).policy.seat == 1
    proposal = ProposalCreated(proposal_id="i1.1", iteration=1, attempt=1,
                               proposal=Proposal(source="x", oracle="o", name="n", seat=0))
    assert from_record(to_record(proposal)).proposal.seat == 0
    assert to_record(OracleFailed(iteration=1, attempt=1, error="e", seat=1))["seat"] == 1
    # one population: exactly the keys the lines had before seats existed
    assert "seat" not in to_record(member("p0", None))["policy"]
    assert "seat" not in to_record(ProposalCreated(proposal_id="i1.1", iteration=1, attempt=1,
                                                   proposal=Proposal(source="x", oracle="o", name="n")))["proposal"]
    assert "seat" not in to_record(OracleFailed(iteration=1, attempt=1, error="e"))


def test_seat_attempts_count_each_seats_oracle_attempts():
    state = fold(numbered([
        started(2), member("p0", 0), member("p1", 1),
        ProposalCreated(proposal_id="i1.1", iteration=1, attempt=1, proposal=Proposal(source="a", oracle="o", name="a", seat=0)),
        ProposalCreated(proposal_id="i1.2", iteration=1, attempt=1, proposal=Proposal(source="b", oracle="o", name="b", seat=0),
                        edited_from="i1.1", edited_by="me"),
        OracleFailed(iteration=1, attempt=1, error="boom", seat=1),
    ]))
    assert state.seat_attempts(1, 0) == 1 and state.seat_attempts(1, 1) == 1
