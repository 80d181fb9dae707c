"""A progressive review (issue 36): in sampled games a person reads the proposal while its
preview plays, the figures refining as rounds of matches end, and may decide before the end;
what is recorded is the same whenever the decision came."""

from __future__ import annotations

import threading
import time

from csro_tui.engine.gate import LivePreview, first_and_rest
from csro_tui.records import Bot, Decision, ReviewRequest
from csro_tui.reviewers import AutoReviewer
from csro_tui.sessions.events import (
    BenchmarkEvaluated,
    PayoffsEvaluated,
    ProposalDecided,
    ProposalPreviewed,
    to_record,
)
from tests.fakes import ToyEvaluator, toy_engine as make_engine

# Bots of the toy game: a bot's strength is its name's length / 10.
BOTS = [name * 1 for name in ("a", "bb", "ccc", "dddd", "eeeee", "ffffff", "ggggggg", "hhhhhhhh", "iiiiiiiii")]


class HeldEvaluator(ToyEvaluator):
    """The toy evaluator, whose candidate-against-bot batch waits for `release`: a preview
    that is still playing when the reviewer is asked."""

    def __init__(self) -> None:
        super().__init__(exact=False, bots=BOTS)
        self.release = threading.Event()
        self.candidate_bot_batches = 0

    def run(self, jobs):
        jobs = list(jobs)
        if jobs and all(isinstance(j.b, Bot) for j in jobs) and jobs[0].a.id == "candidate":
            self.candidate_bot_batches += 1
            assert self.release.wait(10), "the preview was never released"
        return super().run(jobs)

    def candidate_bot_jobs(self) -> int:
        return sum(1 for j in self.jobs if isinstance(j.b, Bot) and j.a.id == "candidate")


class ProgressiveReviewer:
    """Reads the live preview, then decides: at once (`early`) or once it has ended."""

    name = "person"
    progressive = True

    def __init__(self, evaluator: HeldEvaluator, *, early: bool) -> None:
        self.evaluator = evaluator
        self.early = early
        self.requests: list[ReviewRequest] = []
        self.bot_jobs_when_asked: list[int] = []
        self.seen: list = []  # every estimate read, in order

    def decide(self, review: ReviewRequest) -> Decision:
        self.requests.append(review)
        self.bot_jobs_when_asked.append(self.evaluator.candidate_bot_jobs())
        live: LivePreview = review.live_preview
        self._wait_for(live, lambda estimate: estimate.members_measured > 0)
        if not self.early:
            self.evaluator.release.set()
            self._wait_for(live, lambda estimate: estimate.done)
        else:
            self.evaluator.release.set()  # the rest plays after the decision
        return Decision.accept("looks good")

    def _wait_for(self, live: LivePreview, condition) -> None:
        deadline = time.monotonic() + 10
        version = -1
        while time.monotonic() < deadline:
            newer, estimate = live.latest()
            if newer != version and estimate is not None:
                version = newer
                self.seen.append(estimate)
                if condition(estimate):
                    return
            time.sleep(0.005)
        raise AssertionError("the live preview never got there")


def _run(early: bool):
    evaluator = HeldEvaluator()
    reviewer = ProgressiveReviewer(evaluator, early=early)
    engine = make_engine(evaluator=evaluator, reviewer=reviewer, iterations=1, benchmark="on")
    state = engine.run().state
    return evaluator, reviewer, state


def _recorded(state, kind):
    """The events' log lines, without their times and sequence numbers."""
    lines = [to_record(event) for event in state.events if isinstance(event, kind)]
    return [{k: v for k, v in line.items() if k not in ("ts", "seq")} for line in lines]


def test_the_review_opens_while_the_preview_plays_and_its_figures_refine():
    evaluator, reviewer, state = _run(early=False)
    request = reviewer.requests[0]
    assert request.preview is None and request.live_preview is not None
    # asked before the bots had played: not at the end
    assert reviewer.bot_jobs_when_asked[0] == 0
    # the figures refine: the members measured, then the bots' scores with the final preview
    assert reviewer.seen[0].preview.population_metrics is None and not reviewer.seen[0].done
    assert reviewer.seen[-1].done and reviewer.seen[-1].bots_scored == len(BOTS)
    assert set(reviewer.seen[-1].preview.population_metrics) == {"pop_return", "pop_expl", "agg_score"}
    assert evaluator.candidate_bot_batches == 1  # the bots in one batch, as the one-batch preview plays them
    measured = [estimate for estimate in reviewer.seen if not estimate.smoke]
    assert measured[0].members_measured == measured[0].members == 1
    assert measured[0].preview.expected_stderr > 0  # the preview's first figures come with their noise
    assert measured[-1].done and not measured[0].done
    assert "measuring: 1 of 1 members measured" in measured[0].describe()
    # before them, the smoke run's figures, which say they cannot measure their noise
    smoke = [estimate for estimate in reviewer.seen if estimate.smoke]
    assert all(e.preview.pairs == 1 and "smoke-run figures" in e.describe() for e in smoke)
    # the proposal's events keep their order: previewed, then decided
    kinds = [e.TYPE for e in state.events if getattr(e, "proposal_id", None) == "i1.1"]
    assert kinds[:4] == ["proposal_created", "proposal_validated", "proposal_previewed", "proposal_decided"]


def test_an_early_accept_records_the_same_preview_and_entries_as_a_late_one():
    _, early_reviewer, early = _run(early=True)
    _, late_reviewer, late = _run(early=False)
    # the early decision came before the preview had its final figures
    assert not early_reviewer.seen[-1].done and late_reviewer.seen[-1].done
    for kind in (ProposalPreviewed, PayoffsEvaluated, BenchmarkEvaluated, ProposalDecided):
        assert _recorded(early, kind) == _recorded(late, kind), kind.TYPE
    preview = early.proposals["i1.1"].preview.preview
    assert set(preview.population_metrics) == {"pop_return", "pop_expl", "agg_score"}
    assert preview.population_metrics == late_reviewer.seen[-1].preview.population_metrics


def test_a_streamed_preview_equals_the_one_batch_preview_of_a_headless_reviewer():
    _, _, streamed = _run(early=True)
    evaluator = ToyEvaluator(exact=False, bots=BOTS)
    headless = make_engine(evaluator=evaluator, reviewer=AutoReviewer(threshold=None), iterations=1, benchmark="on")
    state = headless.run().state
    assert _recorded(streamed, ProposalPreviewed)[0]["preview"] == _recorded(state, ProposalPreviewed)[0]["preview"]
    # headless: one batch of bots, as before
    assert sum(1 for j in evaluator.jobs if isinstance(j.b, Bot) and j.a.id == "candidate") == len(BOTS)


def test_a_stop_during_a_progressive_review_records_no_decision():
    evaluator = HeldEvaluator()

    class Stopper:
        name = "person"
        progressive = True

        def decide(self, review):
            engine.request_stop()
            evaluator.release.set()
            return None

    engine = make_engine(evaluator=evaluator, reviewer=Stopper(), iterations=1, benchmark="on")
    state = engine.run().state
    assert state.proposals["i1.1"].decision is None
    assert state.closed is not None and state.closed.reason == "stopped"


def test_rounds_are_a_first_few_then_the_rest_and_keep_every_item_once():
    assert first_and_rest(list(range(10)), 2) == [[0, 1], [2, 3, 4, 5, 6, 7, 8, 9]]
    assert first_and_rest([0, 1], 4) == [[0, 1]] and first_and_rest([], 4) == []


def test_the_gate_streams_the_smoke_figures_then_each_round_then_the_final_preview():
    from csro_tui.engine.gate import Gate, GateSettings
    from csro_tui.records import PolicyRecord
    from tests.fakes import toy_policy

    evaluator = ToyEvaluator(exact=False, bots=BOTS)
    gate = Gate(evaluator, GateSettings(seed=3, benchmark=True, benchmark_episodes=2))
    members = [PolicyRecord(id=f"p{n}", name=f"m{n}", source=toy_policy(n / 10), origin="seed") for n in range(5)]
    weights = {"p3": 0.75, "p1": 0.25}
    validation = gate.validate("k", toy_policy(0.9), members)
    estimates = []
    final, _, _ = gate.preview("k", toy_policy(0.9), members, weights, validation, on_estimate=estimates.append)
    assert estimates[0].smoke and estimates[0].preview.pairs == 1 and estimates[0].members_measured == 0
    rounds = [(e.members_measured, e.bots_scored, e.done) for e in estimates[1:]]
    assert rounds == [(2, 0, False), (5, 0, False), (5, 9, True)]  # members (the weighted first), then the bots
    assert set(estimates[1].preview.per_member) == {"p3", "p1"}  # the meta-strategy's members come first
    assert estimates[-1].done and estimates[-1].preview is final
    assert list(final.per_member) == [m.id for m in members]  # the record keeps the population's order
    unwatched, _, _ = Gate(ToyEvaluator(exact=False, bots=BOTS), gate.settings).preview(
        "k", toy_policy(0.9), members, weights, validation)
    assert unwatched == final
