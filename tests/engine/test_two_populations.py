"""Two populations (issue 23): one population per seat, as OpenSpiel's psro_v2 runs PSRO.

Real Kuhn poker with the exact best-response oracle, the Nash solver and the auto
reviewer: each iteration proposes for seat 0, then seat 1 (both against the
meta-strategies at the iteration's start), the accepted join, only the new
seat-0 x seat-1 entries are evaluated, and one meta-solve gives both mixtures.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from open_spiel.python.algorithms import exploitability as os_exploitability

from csro_tui.cli import main
from csro_tui.config import RunConfig
from csro_tui.engine import new_engine, resume_engine
from csro_tui.errors import ConfigError
from csro_tui.evaluation.exact import joint_policy, mixture_policy
from csro_tui.evaluation.participants import CodePolicy
from csro_tui.games.kuhn import KuhnSpec
from csro_tui.oracles.best_response import BestResponseOracle
from csro_tui.records import Decision, ReviewRequest
from csro_tui.reviewers import AutoReviewer
from csro_tui.sessions.events import MetaSolved, PayoffsEvaluated, ProposalCreated
from csro_tui.sessions.state import fold
from csro_tui.sessions.store import EVENTS_FILE, SessionStore

CONFIG = RunConfig(game="kuhn_poker", oracle="best-response", solver="nash", iterations=12, populations=2, seed=3)


class CountingOracle(BestResponseOracle):
    """The best-response oracle, remembering which (iteration, seat) it was asked for."""

    def __init__(self) -> None:
        super().__init__()
        self.asked: list[tuple[int, int | None]] = []

    def propose(self, context):
        self.asked.append((context.iteration, context.seat))
        return super().propose(context)


def record(root, session_id="two", **parts):
    store = SessionStore(root, fsync=False)
    engine = new_engine(CONFIG, store=store, session_id=session_id, reviewer=parts.pop("reviewer", AutoReviewer()), **parts)
    outcome = engine.run()
    engine.writer.close()
    return store, outcome


def joint_exploitability(spec, state) -> float:
    """OpenSpiel's own exploitability of the recorded meta-strategies' joint profile."""
    weights = state.meta_strategy
    mixtures = []
    for seat in (0, 1):
        members = [m for m in state.seat_members(seat) if weights[m.id] > 0]
        mixtures.append(mixture_policy(spec, [CodePolicy(m.id, m.source) for m in members],
                                       [weights[m.id] for m in members]))
    return os_exploitability.exploitability(spec.load(), joint_policy(spec, *mixtures))


def test_kuhn_with_two_populations_reaches_an_exact_equilibrium(tmp_path):
    store, outcome = record(tmp_path)
    state = outcome.state
    assert outcome.reason == "completed" and outcome.oracle_finished
    assert "seat 0" in outcome.message and "seat 1" in outcome.message
    final = state.latest_metrics.exploitability
    assert final < 1e-9
    assert joint_exploitability(KuhnSpec(), state) == pytest.approx(final, abs=1e-12)
    # exploitability falls from the seed's (always_bet in both seats: 1/3)
    assert state.metrics[0].exploitability == pytest.approx(1 / 3)
    # the seed joined both populations; every other member belongs to the seat it was proposed for
    seeds = [m for m in state.population if m.origin == "seed"]
    assert [(m.id, m.seat) for m in seeds] == [("p0", 0), ("p1", 1)]
    for member in state.population[2:]:
        proposal = state.proposals[state.policy_proposal[member.id]].proposal
        assert member.seat == proposal.seat and member.name.endswith(f"-s{member.seat}")
    # each iteration: seat 0's proposals, then seat 1's
    for number, iteration in state.iterations.items():
        seats = [state.proposals[pid].proposal.seat for pid in iteration.proposals]
        assert seats == sorted(seats), number
    # only seat-0 x seat-1 entries, each evaluated once, seat 0's member as the row
    entries = [e for event in state.events if isinstance(event, PayoffsEvaluated) for e in event.entries]
    assert all(state.member(e.row).seat == 0 and state.member(e.col).seat == 1 for e in entries)
    assert len(entries) == len({(e.row, e.col) for e in entries}) \
        == len(state.seat_members(0)) * len(state.seat_members(1))
    # the meta-solve: seat 0's ids then seat 1's, each mixture sums to 1; value is seat 0's
    meta = state.meta
    assert meta.population == [m.id for m in state.seat_members(0)] + [m.id for m in state.seat_members(1)]
    assert sum(state.seat_strategy(0).values()) == pytest.approx(1)
    assert sum(state.seat_strategy(1).values()) == pytest.approx(1)
    assert meta.value == pytest.approx(-1 / 18, abs=1e-9)  # Kuhn's value for seat 0
    row = np.array(list(state.seat_strategy(0).values()))
    col = np.array(list(state.seat_strategy(1).values()))
    assert row @ state.seat_matrix() @ col == pytest.approx(meta.value)


def test_a_replayed_two_population_session_rebuilds_it_and_verifies(tmp_path, capsys):
    store, outcome = record(tmp_path)
    replayed = fold(store.read("two").events)
    assert replayed == outcome.state
    assert [m.seat for m in replayed.population] == [m.seat for m in outcome.state.population]
    np.testing.assert_array_equal(replayed.seat_matrix(), outcome.state.seat_matrix())
    assert replayed.meta_strategy == outcome.state.meta_strategy
    assert main(["replay", "two", "--session-dir", str(tmp_path), "--verify"]) == 0
    out = capsys.readouterr().out
    assert "reproduced: all" in out and "seat 0" in out and "seat 1" in out


def test_the_gate_judges_each_seat_against_its_own_value():
    """Seat 1's bar is minus the meta-game value (Kuhn: +1/18 once solved), not 0."""
    seen: list[ReviewRequest] = []

    class Watching(AutoReviewer):
        def decide(self, review):
            seen.append(review)
            return super().decide(review)

    engine = new_engine(dataclasses.replace(CONFIG, iterations=3), reviewer=Watching())
    state = engine.run().state
    for review in seen:
        assert review.proposal.seat in (0, 1)
        assert {m.seat for m in review.population} == {1 - review.proposal.seat}  # judged against the other seat
        assert set(review.preview.per_member) == {m.id for m in review.population}
        assert review.seat_value is not None
    first = [r for r in seen if r.iteration == 1]
    value = state.meta_history[0].value  # the seeds' meta-game
    assert [r.seat_value for r in first] == [pytest.approx(value), pytest.approx(-value)]


class StopOnSeatOne(AutoReviewer):
    """Stops the engine when asked about iteration 4's seat-1 proposal (seat 0 decided)."""

    def __init__(self, engine_box):
        super().__init__()
        self.engine_box = engine_box

    def decide(self, review):
        if review.iteration == 4 and review.proposal.seat == 1:
            self.engine_box[0].request_stop()
            return None
        return super().decide(review)


def test_resume_mid_iteration_keeps_the_decided_seat_and_reviews_the_other_again(tmp_path):
    _, full = record(tmp_path, "full")
    box = []
    store = SessionStore(tmp_path, fsync=False)
    engine = new_engine(CONFIG, store=store, session_id="cut", reviewer=StopOnSeatOne(box))
    box.append(engine)
    stopped = engine.run()
    engine.writer.close()
    assert stopped.reason == "stopped"
    decided = [p for p in stopped.state.proposals.values() if p.iteration == 4 and p.decision is not None]
    assert [p.proposal.seat for p in decided] == [0]
    oracle = CountingOracle()
    resumed, _ = resume_engine("cut", store=store, reviewer=AutoReviewer(), oracle=oracle)
    outcome = resumed.run()
    resumed.writer.close()
    # the decided seat was not asked again, the undecided proposal was reviewed again, not re-proposed
    assert (4, 0) not in oracle.asked and (4, 1) not in oracle.asked
    iteration_4 = [e for e in outcome.state.events if isinstance(e, ProposalCreated) and e.iteration == 4]
    assert [e.proposal.seat for e in iteration_4] == [0, 1]
    assert [(m.name, m.seat) for m in outcome.state.population] == [(m.name, m.seat) for m in full.state.population]
    assert outcome.state.latest_metrics.exploitability == pytest.approx(full.state.latest_metrics.exploitability)


# Iteration 1 has a proposal for each seat (both join); in iteration 2 seat 0's oracle has nothing.
@pytest.mark.parametrize("iteration", [1, 2])
def test_a_session_cut_after_any_event_of_an_iteration_resumes_to_the_same_end(tmp_path, iteration):
    store, full = record(tmp_path, "full")
    lines = (store.session_dir("full") / EVENTS_FILE).read_bytes().splitlines(keepends=True)
    mark = f'"iteration": {iteration}'.encode()
    started = next(i for i, line in enumerate(lines) if b'"iteration_started"' in line and mark in line)
    finished = next(i for i, line in enumerate(lines) if b'"iteration_finished"' in line and mark in line)
    seats = {state.proposal.seat for state in full.state.proposals.values() if state.iteration == iteration}
    assert seats == ({0, 1} if iteration == 1 else {1})
    expected = [(m.name, m.seat, m.source) for m in full.state.population]
    for keep in range(started + 1, finished + 1):
        session_id = f"cut-{keep}"
        (store.session_dir(session_id)).mkdir()
        (store.session_dir(session_id) / EVENTS_FILE).write_bytes(b"".join(lines[:keep]))
        engine, _ = resume_engine(session_id, store=store, reviewer=AutoReviewer())
        outcome = engine.run()
        engine.writer.close()
        where = f"cut after event {keep}"
        assert outcome.reason == "completed", where
        assert [(m.name, m.seat, m.source) for m in outcome.state.population] == expected, where
        assert outcome.state.missing_payoffs() == [], where
        assert outcome.state.latest_metrics.exploitability < 1e-9, where


def test_populations_2_is_refused_in_one_line_before_a_session_is_recorded(tmp_path, monkeypatch, capsys):
    from csro_tui.meta import solvers
    from csro_tui.oracles import registry

    monkeypatch.setitem(registry.ORACLES, "seed", dataclasses.replace(registry.ORACLES["seed"], two_populations=False))
    code = main(["run", "--game", "kuhn_poker", "--oracle", "seed", "--populations", "2", "--iterations", "1",
                 "--session-dir", str(tmp_path)])
    err = capsys.readouterr().err.strip()
    assert code != 0 and len(err.splitlines()) == 1
    assert "--populations 2: oracle seed cannot propose for one seat" in err
    assert not list(tmp_path.iterdir())  # no session recorded

    def square_only(matrix):
        raise ValueError("needs a square matrix")

    monkeypatch.setitem(solvers.SOLVERS, "square-only", square_only)
    with pytest.raises(ConfigError, match="meta-solver square-only cannot solve the seat-0 x seat-1 meta-game"):
        new_engine(dataclasses.replace(CONFIG, solver="square-only"), store=SessionStore(tmp_path))
    assert not list(tmp_path.iterdir())


def test_populations_from_csro_toml_and_one_population_logs_without_the_new_keys(tmp_path):
    config = tmp_path / "csro.toml"
    config.write_text("[run]\npopulations = 2\n")
    assert main(["run", "--game", "kuhn_poker", "--iterations", "1", "--seed", "1", "--config", str(config),
                 "--session-dir", str(tmp_path / "two")]) == 0
    (session,) = (tmp_path / "two").iterdir()
    state = fold(SessionStore(tmp_path / "two").read(session.name).events)
    assert state.started.config["populations"] == 2 and {m.seat for m in state.population} == {0, 1}
    # --populations 1 over the file: recorded exactly as before issue 23 (no populations, no seat keys)
    assert main(["run", "--game", "kuhn_poker", "--iterations", "1", "--seed", "1", "--config", str(config),
                 "--populations", "1", "--session-dir", str(tmp_path / "one")]) == 0
    (session,) = (tmp_path / "one").iterdir()
    text = (session / EVENTS_FILE).read_text()
    assert '"populations"' not in text and '"seat"' not in text
    assert fold(SessionStore(tmp_path / "one").read(session.name).events).populations == 1


def test_a_sweep_cell_with_populations_2_is_refused_before_anything_runs(tmp_path, monkeypatch):
    from csro_tui.experiments.sweep_file import read_sweep
    from csro_tui.oracles import registry

    monkeypatch.setitem(registry.ORACLES, "seed", dataclasses.replace(registry.ORACLES["seed"], two_populations=False))
    path = tmp_path / "sweep.toml"
    path.write_text('name = "x"\n[grid]\noracle = ["best-response", "seed"]\n[options]\ngame = "kuhn_poker"\npopulations = 2\n')
    with pytest.raises(ConfigError, match="--populations 2: oracle seed cannot propose for one seat"):
        read_sweep(path)


def test_an_oracle_gets_its_seats_own_mixture_and_value(tmp_path):
    """llm-refine aims at the seat's value and starts from the seat's heaviest member: the
    engine fills both from the meta-game at the iteration's start."""
    seen = []

    class Watching(BestResponseOracle):
        def propose(self, context):
            seen.append((context.seat, [m.id for m in context.own_population], list(context.own_meta_strategy),
                         context.seat_value))
            return super().propose(context)

    store, outcome = record(tmp_path, oracle=Watching())
    assert seen and {seat for seat, *_ in seen} == {0, 1}
    for seat, own, weights, value in seen:
        assert len(own) == len(weights) and sum(weights) == pytest.approx(1.0)
        assert value is not None
    # the first iteration: the seed in each seat alone, and Kuhn's seat values of always_bet vs always_bet
    first = {seat: (weights, value) for seat, _, weights, value in seen[:2]}
    assert first[0][0] == [1.0] and first[1][0] == [1.0]
    assert first[0][1] == pytest.approx(-first[1][1])


def test_alpharank_with_two_populations_runs_and_verifies(tmp_path, capsys):
    """alpha-rank is the multi-population one with two populations: each seat's
    meta-strategy is its marginal of one chain, and replay --verify re-solves it."""
    store = SessionStore(tmp_path, fsync=False)
    engine = new_engine(dataclasses.replace(CONFIG, solver="alpharank", iterations=3), store=store, session_id="ar",
                        reviewer=AutoReviewer())
    outcome = engine.run()
    engine.writer.close()
    assert outcome.reason == "completed"
    state = outcome.state
    assert state.meta.solver == "alpharank"
    for seat in (0, 1):
        assert sum(state.seat_strategy(seat).values()) == pytest.approx(1.0)
    assert main(["replay", "ar", "--session-dir", str(tmp_path), "--verify"]) == 0
    assert "reproduced: all" in capsys.readouterr().out


def test_the_sessions_list_says_how_many_members_each_seat_has(tmp_path, capsys):
    from csro_tui.sessions.store import SessionStore as Store
    from csro_tui.tui.backend import session_summary

    store, outcome = record(tmp_path)
    seat_sizes = tuple(len(outcome.state.seat_members(seat)) for seat in (0, 1))
    info = next(info for info in Store(tmp_path).list_sessions() if info.id == "two")
    assert info.seat_sizes == seat_sizes and sum(seat_sizes) == info.population_size
    assert f"({seat_sizes[0]} in seat 0, {seat_sizes[1]} in seat 1)" in session_summary(info)
    assert main(["sessions", "--session-dir", str(tmp_path)]) == 0
    assert "{}+{}".format(*seat_sizes) in capsys.readouterr().out


def test_the_seed_oracles_members_are_evaluated_and_solved(tmp_path):
    """The seed oracle's accepted proposals (origin "seed", like the seed population's)
    join both seats and get their payoffs and a meta-solve: the iteration ends with them
    accepted (it was recorded "nothing accepted", the members left unevaluated)."""
    store = SessionStore(tmp_path, fsync=False)
    config = dataclasses.replace(CONFIG, oracle="seed", iterations=1)
    engine = new_engine(config, store=store, session_id="seeds", reviewer=AutoReviewer())
    engine.run()
    engine.writer.close()
    state = fold(store.read("seeds").events)
    joined = [m for m in state.population if m.iteration == 1]
    assert [(m.name, m.seat) for m in joined] == [("card_rules", 0), ("card_rules", 1)]
    assert state.iterations[1].accepted == joined[-1].id
    assert not state.missing_payoffs()
    assert set(state.meta_strategy) == {m.id for m in state.population}
    assert state.metrics_for(1) is not None


def test_replay_diversity_shows_each_seats_population_apart(tmp_path, capsys):
    """`csro replay --diversity` of two populations: a matrix per seat, so the seed's copy in
    each seat (same code, never in the same population) is not called "same strategy"."""
    record(tmp_path, reviewer=AutoReviewer())
    capsys.readouterr()
    assert main(["replay", "two", "--session-dir", str(tmp_path), "--diversity"]) == 0
    out = capsys.readouterr().out
    assert "seat 0's population" in out and "seat 1's population" in out
    assert "same strategy: p0, p1" not in out
    assert out.count("effective number of distinct strategies") == 2


def test_export_diversity_writes_each_seats_population_apart(tmp_path, capsys):
    """`csro export --diversity` of two populations: one heat map and report section per
    seat (one mixed both seats, as replay's did)."""
    record(tmp_path, reviewer=AutoReviewer())
    out = tmp_path / "out"
    assert main(["export", "two", "--session-dir", str(tmp_path), "--out", str(out), "--diversity"]) == 0
    assert (out / "diversity-seat0.svg").exists() and (out / "diversity-seat1.svg").exists()
    assert not (out / "diversity.svg").exists()
    report = (out / "report.md").read_text()
    assert "## Behaviour diversity, seat 0's population" in report
    assert "## Behaviour diversity, seat 1's population" in report
    assert "same strategy: p0, p1" not in report


def test_an_iteration_records_every_member_that_joined(tmp_path):
    """Both seats' members are named when both join (the event line said only the last);
    one-population logs keep their lines without the key."""
    from csro_tui.sessions.events import IterationFinished, to_record
    from csro_tui.tui.adapt import event_line

    store, outcome = record(tmp_path)
    finished = [e for e in outcome.state.events if isinstance(e, IterationFinished) and e.iteration == 1]
    joined = [m.id for m in outcome.state.population if m.iteration == 1]
    assert len(joined) == 2 and finished[0].joined == joined and finished[0].accepted == joined[-1]
    assert f"iteration 1: {joined[0]}, {joined[1]} joined" in event_line(finished[0])
    assert "joined" not in to_record(IterationFinished(iteration=1, accepted="p3"))
