"""Seat-fixed matches (two populations): `a` plays one seat only, `b` the other.

The referee's logic is pinned with the in-process doubles (referee_doubles.py);
the per-seat values against OpenSpiel's exact `expected_game_score.policy_value`
on the real Kuhn and Leduc specs, with the real sandbox.
"""

from __future__ import annotations

import math
import threading

import numpy as np
import pytest

from csro_tui.evaluation.participants import BotPolicy, CodePolicy
from csro_tui.evaluation.referee import MatchJob, play_match, play_matches
from csro_tui.evaluation.results import MatchResult
from csro_tui.evaluation.sampling import episode_seeds, seat_fixed_episode_seeds
from csro_tui.sandbox.failures import FailureCategory

from tests.evaluation.referee_doubles import AGGRESSIVE, PASSIVE, RANDOM, UNIFORM, FakeHost, code, kuhn, rrps


@pytest.fixture(autouse=True)
def _fresh_hosts():
    FakeHost.instances.clear()
    yield
    FakeHost.instances.clear()


def fixed(spec, a, b, seat, **kwargs):
    kwargs.setdefault("episodes", 6)
    kwargs.setdefault("seed", 7)
    return play_match(spec, a, b, seat=seat, host_factory=FakeHost, **kwargs)


# Kuhn, stochastic in every information state (HistoryView's "info" is the
# information state string): its sampled returns vary, so only the right seats
# and seeds make two matches agree.
CARDS = code(
    "cards",
    "card = obs['info'][0]\n"
    "        bet = {'0': 0.2, '1': 0.5, '2': 0.9}.get(card, 0.5)\n"
    "        return {0: 1 - bet, 1: bet}",
)


# ---------------------------------------------------------------- seeds and seats


def test_a_plays_only_its_seat_and_gets_only_its_own_observations():
    for seat in (0, 1):
        FakeHost.instances.clear()
        result = fixed(kuhn(), PASSIVE, AGGRESSIVE, seat, episodes=5)
        host_a, host_b = FakeHost.instances
        assert [player for _, player, _ in host_a.episodes] == [seat] * 5
        assert [player for _, player, _ in host_b.episodes] == [1 - seat] * 5
        for host, own in ((host_a, seat), (host_b, 1 - seat)):
            assert {obs["seat"] for batch in host.batches for _, obs in batch} == {own}
        assert result.seat == seat and result.episodes == 5 and len(result.returns) == 5  # no rounding to pairs


def test_episode_seeds_are_per_episode_and_apart_from_the_seat_swapped_ones():
    result = fixed(rrps(), RANDOM, UNIFORM, 0, episodes=4, seed=5)
    assert result.seeds == seat_fixed_episode_seeds(5, 4) and len(set(result.seeds)) == 4
    swapped = play_match(rrps(), RANDOM, UNIFORM, episodes=4, seed=5, host_factory=FakeHost)
    assert not set(result.seeds) & set(swapped.seeds)
    assert set(swapped.seeds) == set(episode_seeds(5, 2))
    # The participants' own seeds are not the seat-swapped ones either (hosts: fixed a, b; swapped a, b).
    own_seeds = [{seed for _, _, seed in host.episodes} for host in FakeHost.instances]
    assert len(own_seeds[0]) == 4 and not (own_seeds[0] | own_seeds[1]) & (own_seeds[2] | own_seeds[3])


def test_a_seat_fixed_job_is_deterministic_and_its_seat_and_seed_matter():
    spec = rrps()
    first = fixed(spec, RANDOM, UNIFORM, 1, episodes=8, seed=3)
    again = fixed(spec, RANDOM, UNIFORM, 1, episodes=8, seed=3)
    assert (first.returns, first.seeds, first.mean, first.stderr) == (again.returns, again.seeds, again.mean, again.stderr)
    assert fixed(spec, RANDOM, UNIFORM, 1, episodes=8, seed=4).returns != first.returns
    # The same seed in the other seat deals the same seeds, but a plays the other seat.
    other_seat = fixed(spec, RANDOM, UNIFORM, 0, episodes=8, seed=3)
    assert other_seat.seeds == first.seeds and other_seat.returns != first.returns


def test_the_result_is_as_return_in_its_seat_with_the_stderr_of_its_episodes():
    # Always bet against always check/fold wins the ante in either seat (by hand).
    for seat in (0, 1):
        assert fixed(kuhn(), AGGRESSIVE, PASSIVE, seat, episodes=5).returns == [1.0] * 5
        assert fixed(kuhn(), PASSIVE, AGGRESSIVE, seat, episodes=5).returns == [-1.0] * 5
    result = fixed(kuhn(), CARDS, AGGRESSIVE, 0, episodes=40)
    returns = np.array(result.returns)
    assert len(set(result.returns)) > 1
    assert result.mean == pytest.approx(returns.mean())
    assert result.stderr == pytest.approx(returns.std(ddof=1) / math.sqrt(40))
    assert (result.pairs, result.samples, result.stderr_measurable) == (0, 40, True)
    one = fixed(kuhn(), CARDS, AGGRESSIVE, 0, episodes=1)
    assert one.samples == 1 and not one.stderr_measurable and one.stderr == 0.0


@pytest.mark.parametrize("seat", [0, 1])
def test_a_seat_fixed_job_is_the_swapped_job_from_bs_side_negated(seat):
    spec = kuhn()
    jobs = [
        MatchJob(CARDS, UNIFORM, 30, 11, seat),
        MatchJob(UNIFORM, CARDS, 30, 11, 1 - seat),
        MatchJob(RANDOM, BotPolicy("rotatebot"), 4, 12, seat),
        MatchJob(BotPolicy("rotatebot"), RANDOM, 4, 12, 1 - seat),
    ]
    spec_jobs = [(spec, jobs[:2]), (rrps(throws=15, bots=("rotatebot",)), jobs[2:])]
    for game, (job, swapped) in spec_jobs:
        result, mirror = play_matches(game, [job, swapped], host_factory=FakeHost)
        assert len(set(result.returns)) > 1
        assert result.returns == [-value for value in mirror.returns]
        assert result.seeds == mirror.seeds and result.stderr == mirror.stderr
        assert result.mean == -mirror.mean
        # Alone it is the same match (a lockstep gives each job what it gets alone).
        assert play_matches(game, [job], host_factory=FakeHost)[0].returns == result.returns


def test_a_job_asks_for_a_real_seat():
    with pytest.raises(ValueError, match="seat is 0, 1 or None"):
        MatchJob(RANDOM, UNIFORM, 4, 1, 2)


# ---------------------------------------------------------------- failures


SEAT_ONE_CRASHER = code("seat-one-crasher", "return 1 // 0 if self.player == 1 else min(obs['legal_actions'])")


def test_a_failure_in_seat_fixed_play_is_charged_to_the_policy_that_failed():
    results = play_matches(
        kuhn(),
        [
            MatchJob(SEAT_ONE_CRASHER, PASSIVE, 4, 1, 0),  # never in seat 1: plays clean
            MatchJob(PASSIVE, SEAT_ONE_CRASHER, 4, 1, 1),  # the crasher in seat 0 again
        ],
        host_factory=FakeHost,
    )
    assert [r.failure for r in results] == [None, None] and [r.episodes for r in results] == [4, 4]
    for job in (MatchJob(SEAT_ONE_CRASHER, PASSIVE, 4, 1, 1), MatchJob(PASSIVE, SEAT_ONE_CRASHER, 4, 1, 0)):
        (result,) = play_matches(kuhn(), [job], host_factory=FakeHost)
        assert result.failure is not None and result.failure.category is FailureCategory.CRASH
        assert result.failure.policy == "seat-one-crasher" and result.seat == job.seat


def test_the_wall_time_limit_blames_the_code_side_in_either_seat():
    for seat in (0, 1):
        result = fixed(rrps(throws=50), BotPolicy("rotatebot"), RANDOM, seat, episodes=2, match_seconds=0.0)
        assert result.failure is not None and result.failure.category is FailureCategory.TIMEOUT
        assert result.failure.policy == RANDOM.name


def test_the_runner_charges_a_seat_fixed_failure_and_skips_the_failed_policys_later_jobs(monkeypatch):
    from csro_tui.evaluation import runner

    monkeypatch.setattr(runner, "play_matches", lambda *args, **kwargs: play_matches(*args, host_factory=FakeHost, **kwargs))
    jobs = [
        MatchJob(PASSIVE, SEAT_ONE_CRASHER, 4, 1, 0),
        MatchJob(AGGRESSIVE, PASSIVE, 3, 2, 1),
        MatchJob(SEAT_ONE_CRASHER, AGGRESSIVE, 4, 3, 0),  # would play clean, but its host failed
    ]
    results = runner._evaluate_here(kuhn(), jobs, [[0], [1], [2]], None, None)
    assert results[0].failure.policy == "seat-one-crasher" and results[0].seat == 0
    assert results[1].failure is None and results[1].returns == [1.0] * 3 and results[1].seat == 1
    assert results[2].failure is results[0].failure and results[2].episodes == 0 and results[2].seat == 0


# ---------------------------------------------------------------- records, waves, chunks


def test_a_seat_fixed_result_round_trips_and_a_seat_swapped_one_keeps_its_shape():
    result = fixed(rrps(), RANDOM, code("cheater", "return 9"), 1)
    data = result.to_dict()
    assert data["seat"] == 1 and MatchResult.from_dict(data) == result
    swapped = play_match(rrps(), RANDOM, UNIFORM, episodes=4, seed=1, host_factory=FakeHost)
    assert "seat" not in swapped.to_dict() and MatchResult.from_dict(swapped.to_dict()).seat is None


def test_waves_and_chunks_count_seat_fixed_episodes_as_asked():
    from csro_tui.evaluation.referee import plan_waves
    from csro_tui.evaluation.runner import plan_chunks

    jobs = [MatchJob(RANDOM, BotPolicy(f"bot{i}"), 5, i, 0) for i in range(4)]
    assert [job.played_episodes for job in jobs] == [5] * 4
    assert MatchJob(RANDOM, UNIFORM, 5, 0).played_episodes == 6
    assert plan_waves(jobs, 10) == [[0, 1], [2, 3]]  # 5 + 5 fit in 10; seat-swapped 6 + 6 would not
    assert plan_waves([MatchJob(j.a, j.b, 5, j.seed) for j in jobs], 10) == [[0], [1], [2], [3]]
    assert sorted(i for chunk in plan_chunks(jobs, 2) for i in chunk) == [0, 1, 2, 3]


def test_exact_evaluation_refuses_seat_fixed_jobs_rather_than_average_them():
    from csro_tui.evaluation.runner import evaluate_matchups

    with pytest.raises(ValueError, match="averaged over seats only"):
        evaluate_matchups(kuhn(), [MatchJob(PASSIVE, AGGRESSIVE, 0, 1, 0)], exact=True)


# ---------------------------------------------------------------- the exact per-seat payoff


def _exact_seat_values(spec, a, b) -> tuple[float, float]:
    """a's exact return in seat 0 and in seat 1 against b: OpenSpiel's policy_value
    on the two participants' tables (the project's sandboxed tabulariser)."""
    from open_spiel.python.algorithms.expected_game_score import policy_value

    from csro_tui.evaluation.exact import tabular_policy

    table_a, table_b = tabular_policy(spec, a), tabular_policy(spec, b)
    root = spec.load().new_initial_state()
    return float(policy_value(root, [table_a, table_b])[0]), float(policy_value(root, [table_b, table_a])[1])


@pytest.mark.parametrize(
    ("game", "a_name", "b_name", "episodes"),
    [("kuhn_poker", "card_rules", "bot:cfr_plus", 3000), ("leduc_poker", "card_rules", "uniform", 4000)],
)
def test_sampled_seat_fixed_means_converge_to_the_exact_per_seat_payoff(game, a_name, b_name, episodes):
    from csro_tui.games.registry import get_game

    spec = get_game(game)
    seeds = spec.seed_policies()

    def participant(name):
        return BotPolicy(name[4:]) if name.startswith("bot:") else CodePolicy(name, seeds[name])

    a, b = participant(a_name), participant(b_name)
    exact = _exact_seat_values(spec, a, b)
    assert abs(exact[0] - exact[1]) > 0.05  # the seats differ: a swapped seat would show
    results = play_matches(spec, [MatchJob(a, b, episodes, 41, 0), MatchJob(a, b, episodes, 42, 1)])
    for seat, result in enumerate(results):
        assert result.failure is None and result.episodes == episodes and result.seat == seat
        assert 0 < result.stderr < 0.1
        assert abs(result.mean - exact[seat]) < 3 * result.stderr, (seat, result.mean, exact)
        assert abs(result.mean - exact[1 - seat]) > 3 * result.stderr
    # The seat-swapped match of the same pair averages the two seats.
    swapped = play_match(spec, a, b, episodes=episodes, seed=43)
    assert abs(swapped.mean - (exact[0] + exact[1]) / 2) < 3 * swapped.stderr


# ---------------------------------------------------------------- the engine's evaluator and the process pool


def _rrps_members():
    from csro_tui.games.registry import get_game
    from csro_tui.records import PolicyRecord

    spec = get_game("rrps(num_repetitions=12)")
    seeds = spec.seed_policies()
    row = PolicyRecord(id="seed-0:frequency_counter", name="f", source=seeds["frequency_counter"], origin="seed", seat=0)
    col = PolicyRecord(id="seed-1:uniform_random", name="u", source=seeds["uniform_random"], origin="seed", seat=1)
    return spec, row, col


def _summary(result):
    return (result.a, result.b, result.mean, result.stderr, result.returns, result.seeds, result.seat, result.failure)


def test_the_engines_evaluator_plays_each_seat_as_its_own_job_and_remembers_it(monkeypatch):
    from csro_tui.engine.evaluator import GameEvaluator
    from csro_tui.evaluation import runner
    from csro_tui.records import Bot
    from csro_tui.records import MatchJob as EngineJob

    spec, row, col = _rrps_members()
    jobs = [
        EngineJob(row, col, 4, 9, seat=0),
        EngineJob(row, col, 4, 9, seat=1),
        EngineJob(row, col, 4, 9),
        EngineJob(col, Bot("copybot"), 4, 5, seat=1),  # a benchmark bot as b, a member in its seat
    ]
    evaluator = GameEvaluator(spec, workers=1)
    try:
        results = evaluator.run(jobs)
        direct = [
            play_match(spec, CodePolicy(job.a.id, job.a.source),
                       BotPolicy(job.b.name) if isinstance(job.b, Bot) else CodePolicy(job.b.id, job.b.source),
                       episodes=job.episodes, seed=job.seed, seat=job.seat)
            for job in jobs
        ]
        assert [_summary(r) for r in results] == [_summary(r) for r in direct]
        assert [r.seat for r in results] == [0, 1, None, 1] and [r.episodes for r in results] == [9, 9, 10, 5]
        assert len({tuple(r.returns) for r in results[:3]}) == 3  # the seat is part of the job
        assert evaluator._run_one(jobs[1]).returns == results[1].returns  # the path outside the runner too
        played = []
        real = runner.evaluate_matchups
        monkeypatch.setattr(runner, "evaluate_matchups", lambda *args, **kwargs: played.append(args[1]) or real(*args, **kwargs))
        again = evaluator.run(jobs + [EngineJob(row, col, 4, 10, seat=0)])
        assert len(played) == 1 and [job.seat for job in played[0]] == [0]  # only the new seed was played
        assert [_summary(r) for r in again[:4]] == [_summary(r) for r in results]
    finally:
        evaluator.close()


def test_the_process_pool_gives_seat_fixed_results_as_one_process():
    from csro_tui.evaluation.runner import RefereePool, evaluate_matchups, plan_chunks

    spec, row, col = _rrps_members()
    a, b = CodePolicy(row.id, row.source), CodePolicy(col.id, col.source)
    jobs = [MatchJob(a, b, 5, 20, 0), MatchJob(a, b, 5, 20, 1), MatchJob(b, BotPolicy("copybot"), 3, 21, 0),
            MatchJob(BotPolicy("pibot"), a, 3, 22, 1)]
    alone = evaluate_matchups(spec, jobs, workers=1)
    pool = RefereePool(spec, 2)
    try:
        pooled = pool.run(jobs, plan_chunks(jobs, 2), None, None)
    finally:
        pool.close()
    assert [r.failure for r in alone] == [None] * 4
    assert [_summary(r) for r in pooled] == [_summary(r) for r in alone]
    assert [r.seat for r in pooled] == [0, 1, 0, 1]


def test_progress_counts_seat_fixed_episodes_and_reaches_every_match():
    seen = []
    play_matches(
        kuhn(), [MatchJob(CARDS, UNIFORM, 3, 1, 0), MatchJob(UNIFORM, CARDS, 5, 2, 1), MatchJob(CARDS, PASSIVE, 3, 3)],
        host_factory=FakeHost, progress=lambda done, total: seen.append((done, total)),
    )
    assert seen[-1] == (3.0, 3) and all(total == 3 for _, total in seen)
    assert [done for done, _ in seen] == sorted(done for done, _ in seen)


def test_a_stop_abandons_a_seat_fixed_evaluation():
    from csro_tui.engine.evaluator import GameEvaluator
    from csro_tui.errors import EvaluationInterrupted
    from csro_tui.records import MatchJob as EngineJob

    spec, row, col = _rrps_members()
    evaluator = GameEvaluator(spec, workers=1)
    evaluator.cancel = threading.Event()
    reports = []

    def stop_at_first_report(done, total):
        reports.append(done)
        evaluator.cancel.set()

    evaluator.on_progress = stop_at_first_report
    try:
        with pytest.raises(EvaluationInterrupted):
            evaluator.run([EngineJob(row, col, 4, 1, seat=1), EngineJob(col, row, 4, 1, seat=0)])
    finally:
        evaluator.close()
    assert len(reports) == 1 and evaluator._results == {}  # nothing remembered from the abandoned batch
