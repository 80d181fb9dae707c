"""The engine's loop and review gate, with the toy game of `tests/fakes.py`."""

from __future__ import annotations

import threading

import pytest

from csro_tui.engine import Engine
from tests.fakes import (
    ScriptedOracle,
    ToyEvaluator,
    climbing_oracle,
    strength,
    toy_engine,
    toy_policy,
)
from csro_tui.errors import ConfigError, CsroError
from csro_tui.records import Decision, Proposal, ReviewRequest
from csro_tui.oracles.registry import OracleExhausted
from csro_tui.reviewers import AutoReviewer
from csro_tui.sessions.events import (
    GamePlayed,
    IterationFinished,
    MetricsComputed,
    OracleFailed,
    PayoffsEvaluated,
    PolicyAdded,
    ProposalDecided,
)


class ListReviewer:
    """Gives the listed decisions in order (then accepts); keeps every request."""

    name = "list"

    def __init__(self, *decisions: Decision) -> None:
        self.decisions = list(decisions)
        self.requests: list[ReviewRequest] = []

    def decide(self, review: ReviewRequest) -> Decision:
        self.requests.append(review)
        return self.decisions.pop(0) if self.decisions else Decision.accept()


def make_engine(oracle=None, reviewer=None, evaluator=None, **config) -> Engine:
    return toy_engine(oracle, reviewer, evaluator, **config)


def fixed_oracle(*sources: str) -> ScriptedOracle:
    """Proposes the given sources, one per call, in order."""
    queue = list(sources)

    def make(iteration, attempt, context):
        return Proposal(source=queue.pop(0), oracle="scripted", name=f"cand-{iteration}-{attempt}", parent="p0")

    return ScriptedOracle(make)


def test_accepted_proposals_join_and_every_iteration_is_measured():
    engine = make_engine()
    outcome = engine.run()
    state = outcome.state
    assert outcome.reason == "completed"
    assert [m.id for m in state.population] == ["p0", "p1", "p2", "p3"]
    assert [m.origin for m in state.population] == ["seed", "scripted", "scripted", "scripted"]
    assert [strength(m.source) for m in state.population] == [0.0, 0.1, 0.2, 0.3]
    assert [m.iteration for m in state.metrics] == [0, 1, 2, 3]
    last = state.metrics[-1]
    assert last.population_size == 4
    # the best-worst-case solver puts everything on the strongest member
    assert last.meta_strategy == {"p0": 0.0, "p1": 0.0, "p2": 0.0, "p3": 1.0}
    assert last.new_policy == "p3"
    assert last.new_policy_payoff == pytest.approx(0.1)  # 0.3 against the previous meta (all on 0.2)
    assert last.exploitability == pytest.approx(0.7)
    assert state.closed is not None and state.closed.reason == "completed"


def test_seed_policies_from_config_join_without_review():
    reviewer = ListReviewer()
    engine = make_engine(reviewer=reviewer, iterations=0, seed_policies=["weak", "zero"])
    state = engine.run().state
    assert [(m.name, m.origin) for m in state.population] == [("weak", "seed"), ("zero", "seed")]
    assert reviewer.requests == []
    assert state.payoff("p1", "p0") == pytest.approx(0.5)


def test_unknown_seed_policy_is_a_config_error():
    engine = make_engine(seed_policies=["nope"])
    with pytest.raises(ConfigError, match="no seed policy 'nope'"):
        engine.run()
    assert engine.state.closed.reason == "error"


def test_edited_code_is_validated_previewed_and_reviewed_again():
    edited = toy_policy(0.9)
    reviewer = ListReviewer(Decision.edit(edited, "stronger"), Decision.accept())
    engine = make_engine(oracle=fixed_oracle(toy_policy(0.2)), reviewer=reviewer, iterations=1)
    state = engine.run().state

    first, second = reviewer.requests
    assert first.proposal.source == toy_policy(0.2)
    assert first.preview.per_member == {"p0": pytest.approx(0.2)}
    assert second.proposal.source == edited
    assert second.validation.valid
    assert second.preview.per_member == {"p0": pytest.approx(0.9)}  # previewed again, on the edit
    edit_state = state.proposals[second.proposal_id]
    assert edit_state.edited_from == first.proposal_id and edit_state.edited_by == "list"
    assert edit_state.validation is not None and edit_state.preview is not None
    assert state.proposals[first.proposal_id].decision.edited_source == edited
    joined = state.population[-1]
    assert joined.source == edited and state.policy_proposal[joined.id] == second.proposal_id


def test_rejection_reason_reaches_the_oracles_next_attempt():
    oracle = fixed_oracle(toy_policy(0.1), toy_policy(0.4))
    reviewer = ListReviewer(Decision.reject("too timid, raise more"))
    engine = make_engine(oracle=oracle, reviewer=reviewer, iterations=1)
    state = engine.run().state
    assert len(oracle.contexts) == 2
    assert oracle.contexts[0].rejections == []
    (rejected, reason), = oracle.contexts[1].rejections
    assert reason == "too timid, raise more" and rejected.source == toy_policy(0.1)
    assert strength(state.population[-1].source) == 0.4


def test_rejections_persist_into_later_iterations():
    oracle = fixed_oracle(toy_policy(0.1), toy_policy(0.2), toy_policy(0.3))
    reviewer = ListReviewer(Decision.reject("no"), Decision.accept(), Decision.accept())
    make_engine(oracle=oracle, reviewer=reviewer, iterations=2).run()
    assert [r for _, r in oracle.contexts[2].rejections] == ["no"]


@pytest.mark.parametrize(
    "bad_source, expected",
    [
        ("def broken(:\n", "syntax error"),
        ("x = 1\n", "no class Policy"),
        (toy_policy(0.5, extra="CRASH = 1\n"), "crash"),
    ],
)
def test_invalid_code_never_enters_the_population(bad_source, expected):
    always_accept = ListReviewer(*[Decision.accept()] * 3)
    oracle = fixed_oracle(bad_source, bad_source, bad_source)
    engine = make_engine(oracle=oracle, reviewer=always_accept, iterations=1, max_attempts=3)
    state = engine.run().state
    assert [m.id for m in state.population] == ["p0"]
    decisions = [p.decision for p in state.proposals.values()]
    assert len(decisions) == 3
    for decision in decisions:
        assert decision.action == "reject" and decision.note.startswith("accept refused")
        assert expected in decision.reason
    assert all(not r.validation.valid and r.preview is None for r in always_accept.requests)
    finished = [e for e in state.events if isinstance(e, IterationFinished) and e.iteration == 1]
    assert finished[0].accepted is None and finished[0].attempts == 3


def test_auto_reviewer_rejects_invalid_with_the_failure_as_reason():
    crash = toy_policy(0.5, extra="CRASH = 1\n")
    engine = make_engine(oracle=fixed_oracle(crash, toy_policy(0.2)), iterations=1)
    state = engine.run().state
    first, second = state.proposals.values()
    assert first.decision.action == "reject" and first.decision.decided_by == "auto"
    assert first.decision.reason.startswith("crash: ZeroDivisionError")
    assert first.validation.failure.traceback == "Traceback ..."
    assert second.decision.action == "accept"
    assert len(state.population) == 2


def test_after_max_attempts_the_iteration_moves_on_without_a_policy():
    reviewer = ListReviewer(Decision.reject("a"), Decision.reject("b"))
    engine = make_engine(reviewer=reviewer, iterations=2, max_attempts=2)
    state = engine.run().state
    assert state.iterations[1].accepted is None and state.iterations[1].attempts == 2
    assert state.iterations[2].accepted == "p1"
    assert state.completed_iterations == 2


def test_only_new_payoff_entries_are_evaluated():
    evaluator = ToyEvaluator()
    engine = make_engine(evaluator=evaluator, iterations=4)
    state = engine.run().state
    pairs = evaluator.payoff_jobs()
    assert len(pairs) == len(set(pairs)) == 10  # 5 members: 4+3+2+1 new entries, none twice
    entries = [e for e in state.events if isinstance(e, PayoffsEvaluated)]
    assert [len(e.entries) for e in entries] == [1, 2, 3, 4]
    for batch in entries:
        assert len({entry.row for entry in batch.entries}) == 1  # all entries are the newcomer's row
    assert all(entry.exact for batch in entries for entry in batch.entries)


def test_sampled_games_use_configured_episodes_and_benchmark_scores():
    evaluator = ToyEvaluator(exact=False, bots=["ab", "abcd"])  # bot strengths 0.2, 0.4
    engine = make_engine(evaluator=evaluator, iterations=2, episodes=6, benchmark_episodes=3)
    state = engine.run().state
    payoff_jobs = [j for j in evaluator.jobs if j.a.id != "candidate" and hasattr(j.b, "source")]
    assert payoff_jobs and all(j.episodes == 6 and not j.exact for j in payoff_jobs)
    bench_jobs = [j for j in evaluator.jobs if not hasattr(j.b, "source") and j.a.id != "candidate"]
    assert len(bench_jobs) == 3 * 2  # each member once against each bot
    assert all(j.episodes == 3 for j in bench_jobs)
    last = state.metrics[-1]
    assert last.exploitability is None
    meta = last.benchmark["meta"]
    assert meta["per_bot"] == {"ab": pytest.approx(0.0), "abcd": pytest.approx(-0.2)}  # all weight on 0.2
    assert meta["agg_score"] == pytest.approx(-0.1 - 0.2)
    assert last.benchmark["best_member"]["id"] == "p2"
    # candidates are previewed against the bots too
    preview = state.proposals["i2.1"].preview.preview
    assert preview.population_metrics["pop_return"] == pytest.approx(-0.1)


def test_benchmark_can_be_switched_off():
    evaluator = ToyEvaluator(exact=False, bots=["ab"])
    state = make_engine(evaluator=evaluator, iterations=1, benchmark="off").run().state
    assert state.metrics[-1].benchmark is None
    assert all(hasattr(job.b, "source") for job in evaluator.jobs)


def test_subscribers_see_every_event_in_order_and_can_leave():
    engine = make_engine(iterations=2)
    seen, early = [], []

    def broken(event):
        raise RuntimeError("subscriber bug")

    engine.subscribe(seen.append)
    engine.subscribe(broken)  # must not break the run
    unsubscribe = engine.subscribe(lambda e: early.append(e) if len(early) < 3 else None)
    unsubscribe()
    state = engine.run().state
    assert [e.seq for e in seen] == list(range(1, state.step + 1))
    assert seen[0].TYPE == "session_started" and seen[-1].TYPE == "session_closed"
    assert early == []
    started = seen[0]
    assert started.versions == {"csro_tui": "test"} and "api_key" not in str(started.config).lower()


def test_stop_between_steps_then_continue():
    engine = make_engine(iterations=3)
    unsubscribe = engine.subscribe(lambda e: engine.request_stop() if isinstance(e, ProposalDecided) else None)
    outcome = engine.run()
    assert outcome.reason == "stopped"
    # the accept is recorded; the policy joins when the run continues
    assert engine.state.accepted_pending() is not None
    assert [m.id for m in engine.state.population] == ["p0"]
    unsubscribe()
    engine.clear_stop()
    outcome = engine.run()
    assert outcome.reason == "completed"
    assert [strength(m.source) for m in outcome.state.population] == [0.0, 0.1, 0.2, 0.3]
    assert [e.TYPE for e in outcome.state.events].count("session_resumed") == 1


def test_a_blocking_reviewer_is_released_by_request_stop():
    entered = threading.Event()

    class WaitingReviewer:
        name = "person"

        def decide(self, review: ReviewRequest) -> Decision:
            entered.set()
            review.cancel.wait(timeout=30)
            raise RuntimeError("review cancelled")

    engine = make_engine(reviewer=WaitingReviewer(), iterations=2)
    result = {}
    worker = threading.Thread(target=lambda: result.setdefault("outcome", engine.run()))
    worker.start()
    assert entered.wait(timeout=30)
    engine.request_stop()
    worker.join(timeout=30)
    assert not worker.is_alive()
    assert result["outcome"].reason == "stopped"
    assert [m.id for m in engine.state.population] == ["p0"]
    assert engine.state.open_iteration.number == 1


def test_record_game_from_another_thread():
    engine = make_engine(iterations=0)
    engine.run(close=False)
    got = []
    engine.subscribe(got.append)
    worker = threading.Thread(
        target=lambda: engine.record_game(
            policy_id="p0", opponent="human", seat=1, transcript=["deal", "bet"], returns=[1, -1], seed=7
        )
    )
    worker.start()
    worker.join()
    (event,) = got
    assert isinstance(event, GamePlayed) and event.seq == engine.state.step
    assert engine.state.games == [event]
    assert event.transcript == ["deal", "bet"] and event.returns == [1.0, -1.0]


def test_oracle_failures_are_recorded_and_retried():
    def make(iteration, attempt, context):
        if attempt == 1:
            return RuntimeError("rate limited")
        return Proposal(source=toy_policy(0.3), oracle="scripted", name="ok")

    engine = make_engine(oracle=ScriptedOracle(make), iterations=1)
    state = engine.run().state
    (failure,) = [e for e in state.events if isinstance(e, OracleFailed)]
    assert "rate limited" in failure.error and "Traceback" in failure.traceback
    assert len(state.population) == 2


def test_an_oracle_that_always_fails_ends_the_run_with_an_error():
    engine = make_engine(oracle=ScriptedOracle(lambda i, a, c: RuntimeError("down")), iterations=1)
    with pytest.raises(CsroError, match="failed 3 times"):
        engine.run()
    assert engine.state.closed.reason == "error"


def test_an_exhausted_oracle_ends_the_run_normally():
    def make(iteration, attempt, context):
        if iteration > 2:
            return OracleExhausted("no more ideas")
        return Proposal(source=toy_policy(iteration / 10), oracle="scripted", name=f"c{iteration}")

    outcome = make_engine(oracle=ScriptedOracle(make), iterations=5).run()
    assert outcome.reason == "completed" and "no more ideas" in outcome.message
    assert len(outcome.state.population) == 3


def test_oracle_context_carries_population_meta_strategy_and_a_preview():
    oracle = climbing_oracle()
    make_engine(oracle=oracle, iterations=2).run()
    context = oracle.contexts[1]
    assert [m.id for m in context.population] == ["p0", "p1"]
    assert context.meta_strategy == [0.0, 1.0]
    preview = context.preview(toy_policy(0.5))
    assert preview.failure is None and preview.per_member == {"p0": pytest.approx(0.5), "p1": pytest.approx(0.4)}
    assert preview.expected_payoff == pytest.approx(0.4)
    assert context.preview("nonsense(").failure is not None
    assert context.seed != oracle.contexts[0].seed


def test_a_member_that_fails_in_a_match_forfeits_the_entry():
    # A member that crashes only in long evaluations: smoke runs pass, the entry fails.
    class LateCrash(ToyEvaluator):
        def _one(self, job):
            result = super()._one(job)
            if job.a.id == "p1" and job.a.id != "candidate":
                from csro_tui.sandbox.failures import FailureCategory, PolicyFailure

                result.failure = PolicyFailure(FailureCategory.TIMEOUT, "slow", policy="p1")
            return result

    state = make_engine(evaluator=LateCrash(), iterations=1).run().state
    entry = state.payoffs[("p1", "p0")]
    assert entry.failure is not None and entry.mean == -1.0  # the forfeit value
    assert state.payoff("p0", "p1") == 1.0


def test_metrics_are_one_per_finished_iteration_with_an_accept():
    reviewer = ListReviewer(Decision.reject("x"), Decision.reject("y"), Decision.reject("z"))
    state = make_engine(reviewer=reviewer, iterations=2).run().state
    assert [m.iteration for m in state.events if isinstance(m, MetricsComputed)] == [0, 2]
    assert [e.policy.id for e in state.events if isinstance(e, PolicyAdded)] == ["p0", "p1"]


def test_secrets_never_reach_the_session_log():
    engine = make_engine(
        iterations=0,
        base_url="https://user:hunter2@llm.example/v1",
        oracle_options={"api_key": "sk-123", "temperature": 0.2, "headers": {"Authorization": "Bearer x"},
                        "api_key_env": "MY_KEY_VARIABLE"},
    )
    started = engine.run().state.started
    text = str(started)
    assert "sk-123" not in text and "hunter2" not in text and "Bearer x" not in text
    assert started.base_url == "https://llm.example/v1"
    assert started.config["oracle_options"]["temperature"] == 0.2
    assert started.config["oracle_options"]["api_key_env"] == "MY_KEY_VARIABLE"  # a name, not a secret


def test_oracle_previews_skip_the_benchmark_but_reviews_get_it():
    evaluator = ToyEvaluator(exact=False, bots=["ab"])
    oracle = climbing_oracle()
    reviewer = ListReviewer()
    make_engine(oracle=oracle, reviewer=reviewer, evaluator=evaluator, iterations=1).run()
    before = len(evaluator.jobs)
    preview = oracle.contexts[0].preview(toy_policy(0.5))
    assert preview.population_metrics is None
    assert all(hasattr(job.b, "source") for job in evaluator.jobs[before:])
    assert reviewer.requests[0].preview.population_metrics is not None


def test_smoke_and_preview_episodes_are_configurable_in_sampled_games():
    evaluator = ToyEvaluator(exact=False)
    engine = make_engine(evaluator=evaluator, iterations=1, smoke_episodes=3, preview_episodes=8, benchmark="off")
    state = engine.run().state
    candidate_jobs = [job for job in evaluator.jobs if job.a.id == "candidate"]
    assert sorted({job.episodes for job in candidate_jobs}) == [3, 8]
    validated = state.proposals["i1.1"]
    assert validated.validation.smoke_episodes == 3 and validated.preview.episodes == 8


def test_exact_games_validate_by_exact_evaluation():
    evaluator = ToyEvaluator(exact=True)
    make_engine(evaluator=evaluator, iterations=1).run()
    candidate_jobs = [job for job in evaluator.jobs if job.a.id == "candidate"]
    assert candidate_jobs and all(job.exact for job in candidate_jobs)
    assert len(candidate_jobs) == 1  # one member; the preview reuses the validation run


def test_oracle_registry_names_every_factory_and_refuses_unknown_names():
    from csro_tui.oracles.registry import ORACLES, finished_error_types, make_oracle, oracle_factory

    for name in ORACLES:
        assert callable(oracle_factory(name)), name
    with pytest.raises(ConfigError, match="unknown oracle 'nope'; known oracles: best-response, seed"):
        make_oracle("nope")
    assert make_oracle("best-response").name == "best-response"
    assert OracleExhausted in finished_error_types()
