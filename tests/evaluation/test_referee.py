"""The referee: seeds, seats, lockstep batching, sampling, failures.

These tests use small doubles so they pin down the referee's own logic: a
host that runs trusted test code in-process (PolicyHost's methods, no
sandbox), and game specs over raw OpenSpiel games with OpenSpiel's RRPS bots.
Integration with the real sandbox and games is tested in test_cli_eval.py.
"""

from __future__ import annotations

import random
import re
from pathlib import Path
from collections import Counter

import pytest

from csro_tui.evaluation.participants import BotPolicy, CodePolicy
from csro_tui.evaluation.referee import MatchJob, episode_seeds, play_match, play_matches, sample
from csro_tui.evaluation.results import MatchResult
from csro_tui.sandbox.failures import FailureCategory
from csro_tui.sandbox.sandbox import PolicyHost, SandboxLimits

from tests.evaluation.referee_doubles import AGGRESSIVE, PASSIVE, RANDOM, ROCK, UNIFORM, FakeHost, code, kuhn, rrps

# ---------------------------------------------------------------- doubles: tests/evaluation/referee_doubles.py


@pytest.fixture(autouse=True)
def _fresh_hosts():
    FakeHost.instances.clear()
    yield
    FakeHost.instances.clear()


def match(spec, a, b, **kwargs):
    kwargs.setdefault("episodes", 6)
    kwargs.setdefault("seed", 7)
    return play_match(spec, a, b, host_factory=FakeHost, **kwargs)


# ---------------------------------------------------------------- seeds


def test_identical_seeds_give_identical_results_code_vs_code():
    spec = rrps()
    first = match(spec, RANDOM, UNIFORM, episodes=8, seed=3)
    second = match(spec, RANDOM, UNIFORM, episodes=8, seed=3)
    assert first.returns == second.returns
    assert first.seeds == second.seeds
    assert (first.mean, first.stderr) == (second.mean, second.stderr)


def test_different_seeds_give_different_play():
    spec = rrps()
    first = match(spec, RANDOM, UNIFORM, episodes=8, seed=3)
    other = match(spec, RANDOM, UNIFORM, episodes=8, seed=4)
    assert first.seeds != other.seeds
    assert first.returns != other.returns


def test_bots_with_unseeded_randomness_are_reproducible():
    # randbot draws from libc random(); the referee seeds it per match.
    spec = rrps(throws=30, bots=("randbot",))
    runs = [play_match(spec, BotPolicy("randbot"), ROCK, episodes=4, seed=11, host_factory=FakeHost) for _ in range(2)]
    assert runs[0].returns == runs[1].returns
    assert len(set(runs[0].returns)) > 1  # it really is random play


def test_episode_seeds_are_recorded_per_episode_pairwise():
    result = match(rrps(), RANDOM, UNIFORM, episodes=6, seed=5)
    pair_seeds = episode_seeds(5, 3)
    assert result.seeds == [pair_seeds[0]] * 2 + [pair_seeds[1]] * 2 + [pair_seeds[2]] * 2
    assert len(set(pair_seeds)) == 3


# ---------------------------------------------------------------- seats


def test_seats_are_swapped_and_policies_get_their_seat():
    match(kuhn(), PASSIVE, AGGRESSIVE, episodes=6)
    host_a, host_b = FakeHost.instances
    assert [player for _, player, _ in host_a.episodes] == [0, 1] * 3
    assert [player for _, player, _ in host_b.episodes] == [1, 0] * 3
    # Every observation a policy receives is for its own seat.
    for host, seats in ((host_a, {0: 0, 1: 1}), (host_b, {0: 1, 1: 0})):
        for batch in host.batches:
            for episode_id, obs in batch:
                assert obs["seat"] == seats[episode_id % 2]


def test_duplicate_deals_cancel_luck_between_seats():
    # Both always check: the higher card wins 1 chip.  A pair deals the same
    # cards to the same seats, so a wins one episode of each pair and loses
    # the other: pair means are zero.
    result = match(kuhn(), PASSIVE, PASSIVE, episodes=10)
    assert sorted(set(result.returns)) == [-1.0, 1.0]
    for first, second in zip(result.returns[::2], result.returns[1::2]):
        assert first == -second
    assert result.mean == 0.0 and result.stderr == 0.0


def test_returns_are_those_of_a_in_its_seat():
    # Always bet against always fold: the bettor wins the 1-chip ante when it
    # moves first... and when second, after a check, it bets and the passive
    # player folds: a's return is +1 in every episode.
    result = match(kuhn(), AGGRESSIVE, PASSIVE, episodes=8)
    assert result.returns == [1.0] * 8
    mirrored = match(kuhn(), PASSIVE, AGGRESSIVE, episodes=8)
    assert mirrored.returns == [-1.0] * 8


def test_odd_episode_counts_round_up_to_whole_pairs():
    result = match(rrps(), RANDOM, UNIFORM, episodes=5)
    assert result.episodes == 6 and len(result.returns) == 6


# ---------------------------------------------------------------- lockstep


def test_one_batched_call_per_step_covers_every_live_episode():
    throws, episodes = 12, 10
    match(rrps(throws=throws), RANDOM, UNIFORM, episodes=episodes)
    for host in FakeHost.instances:
        assert len(host.batches) == throws
        assert all(sorted(e for e, _ in batch) == list(range(episodes)) for batch in host.batches)
        assert sorted(host.ended) == list(range(episodes))
        assert host.closed


def test_code_against_bot_asks_only_the_code_side():
    spec = rrps(throws=10)
    result = match(spec, RANDOM, BotPolicy("rotatebot"), episodes=4)
    assert len(FakeHost.instances) == 1
    assert len(FakeHost.instances[0].batches) == 10
    assert result.episodes == 4 and result.failure is None


def test_rotatebot_is_beaten_by_its_counter():
    # rotatebot plays 0,1,2,0,... ; the counter plays (t+1) % 3 and wins every throw.
    counter = code("counter", "return (len(obs['history']) // 2 + 1) % 3")
    result = match(rrps(throws=15), counter, BotPolicy("rotatebot"), episodes=4)
    assert result.returns == [15.0] * 4


def test_auto_actions_are_applied_without_asking_the_policy():
    # Seat 1 always has its move made for it: a policy in seat 1 is never asked.
    spec = kuhn(auto=lambda state: 0 if state.current_player() == 1 else None)
    match(spec, AGGRESSIVE, AGGRESSIVE, episodes=4)
    for host in FakeHost.instances:
        assert all(obs["seat"] == 0 for batch in host.batches for _, obs in batch)


def test_distributions_are_sampled_by_the_referee():
    throws = 300
    match(rrps(throws=throws), UNIFORM, ROCK, episodes=2)
    rock_host = FakeHost.instances[1]
    # The rock player's last observation holds every move of the match.
    final_obs = {episode_id: obs for episode_id, obs in rock_host.batches[-1]}
    uniform_moves = Counter()
    for episode_id, obs in final_obs.items():
        rock_seat = obs["seat"]
        uniform_moves.update(obs["history"][1 - rock_seat :: 2])
    total = sum(uniform_moves.values())
    assert total == 2 * (throws - 1)
    assert all(0.27 < uniform_moves[action] / total < 0.40 for action in (0, 1, 2))


def test_sample_follows_the_distribution_and_is_seeded():
    rng = random.Random(1)
    draws = Counter(sample({2: 0.25, 0: 0.75}, rng) for _ in range(4000))
    assert set(draws) == {0, 2}
    assert 0.70 < draws[0] / 4000 < 0.80
    first, second = random.Random(9), random.Random(9)
    assert [sample({0: 0.5, 1: 0.5}, first) for _ in range(30)] == [
        sample({1: 0.5, 0: 0.5}, second) for _ in range(30)
    ]


# ---------------------------------------------------------------- failures


@pytest.mark.parametrize(
    ("policy", "category"),
    [
        (code("crasher", "return 0 if len(obs['history']) < 6 else 1 // 0"), FailureCategory.CRASH),
        (code("cheater", "return 5"), FailureCategory.ILLEGAL_ACTION),
        (CodePolicy("broken", "class Policy(:\n"), FailureCategory.CRASH),
    ],
)
def test_a_failing_policy_ends_the_match_with_its_failure(policy, category):
    result = match(rrps(), UNIFORM, policy)
    assert isinstance(result, MatchResult)
    assert result.failure is not None
    assert result.failure.category == category
    assert result.failure.policy == policy.name
    assert all(host.closed for host in FakeHost.instances)


def test_a_failure_keeps_the_episodes_finished_before_it():
    # Kuhn: "second-guess" folds at its first decision and crashes at a second.
    # With the aggressive player in seat 0 it folds at once (those episodes
    # end); in seat 0 itself it checks, faces a bet and crashes a step later.
    second_guess = code(
        "second-guess",
        "self.n += 1\n        return min(obs['legal_actions']) if self.n == 1 else 1 // 0",
        "self.n = 0",
    )
    result = match(kuhn(), AGGRESSIVE, second_guess, episodes=8)
    assert result.failure is not None and result.failure.category == FailureCategory.CRASH
    assert result.episodes == 4
    assert result.returns == [1.0] * 4
    assert len(result.seeds) == 4


def test_the_match_wall_time_limit_blames_the_code_side():
    result = match(rrps(throws=50), BotPolicy("rotatebot"), RANDOM, episodes=2, match_seconds=0.0)
    assert result.failure is not None
    assert result.failure.category == FailureCategory.TIMEOUT
    assert result.failure.policy == RANDOM.name


def test_result_round_trips_through_a_dict():
    result = match(rrps(), RANDOM, code("cheater", "return 9"))
    again = MatchResult.from_dict(result.to_dict())
    assert again == result
    assert again.failure.category == FailureCategory.ILLEGAL_ACTION


# ---------------------------------------------------------------- many matches


def test_a_lockstep_of_matches_gives_each_the_result_it_gets_alone():
    # The real RRPS spec: its bots keep their own random() state, so a bot's
    # play does not depend on what else runs in the lockstep.
    from csro_tui.games.registry import get_game

    spec = get_game("rrps(num_repetitions=15)")
    jobs = [
        MatchJob(RANDOM, BotPolicy("rotatebot"), 4, 1),
        MatchJob(UNIFORM, RANDOM, 6, 2),
        MatchJob(RANDOM, BotPolicy("randbot"), 2, 3),
        MatchJob(RANDOM, RANDOM, 4, 4),
    ]
    together = play_matches(spec, jobs, host_factory=FakeHost)
    hosts_together = len(FakeHost.instances)
    alone = [match(spec, job.a, job.b, episodes=job.episodes, seed=job.seed) for job in jobs]
    assert [r.returns for r in together] == [r.returns for r in alone]
    assert [r.seeds for r in together] == [r.seeds for r in alone]
    assert hosts_together == 2  # one host per distinct code policy, not per match


def test_a_failing_host_ends_only_the_matches_it_served():
    spec = rrps(throws=10, bots=("rotatebot",))
    cheater = code("cheater", "return 0 if len(obs['history']) < 8 else 7")
    results = play_matches(
        spec,
        [MatchJob(cheater, BotPolicy("rotatebot"), 2, 0), MatchJob(RANDOM, BotPolicy("rotatebot"), 2, 0),
         MatchJob(UNIFORM, cheater, 2, 0)],
        host_factory=FakeHost,
    )
    assert [r.failure.category if r.failure else None for r in results] == [
        FailureCategory.ILLEGAL_ACTION, None, FailureCategory.ILLEGAL_ACTION,
    ]
    assert results[1].episodes == 2
    assert all(host.closed for host in FakeHost.instances)


def test_results_are_reported_as_matches_end():
    spec = kuhn()
    seen = []
    results = play_matches(
        spec,
        [MatchJob(PASSIVE, AGGRESSIVE, 4, 0), MatchJob(AGGRESSIVE, PASSIVE, 2, 0)],
        host_factory=FakeHost,
        on_result=lambda index, result: seen.append((index, result)),
    )
    assert sorted(index for index, _ in seen) == [0, 1]
    assert [result for _, result in sorted(seen, key=lambda pair: pair[0])] == results


class SplitFakeHost(FakeHost):
    """FakeHost with the split API, logging the order of calls."""

    log: list[tuple[str, str]] = []

    def send_act(self, requests):
        SplitFakeHost.log.append(("send", self.name))
        self.in_flight = self.act(requests)
        return True

    def receive_act(self):
        SplitFakeHost.log.append(("receive", self.name))
        answers, self.in_flight = self.in_flight, None
        return answers


def test_every_host_gets_its_batch_before_any_answer_is_read():
    SplitFakeHost.log.clear()
    split = play_match(rrps(throws=6), RANDOM, UNIFORM, episodes=4, seed=2, host_factory=SplitFakeHost)
    plain = match(rrps(throws=6), RANDOM, UNIFORM, episodes=4, seed=2)
    assert split.returns == plain.returns
    steps = [SplitFakeHost.log[i : i + 4] for i in range(0, len(SplitFakeHost.log), 4)]
    assert len(steps) == 6
    for step in steps:
        assert [kind for kind, _ in step] == ["send", "send", "receive", "receive"]
        assert {name for _, name in step} == {RANDOM.name, UNIFORM.name}


# ---------------------------------------------------------------- real sandbox


@pytest.mark.parametrize(
    ("act_body", "category"),
    [
        ("return 1 // 0", FailureCategory.CRASH),
        ("return 3", FailureCategory.ILLEGAL_ACTION),
        ("return {0: float('nan'), 1: 1.0}", FailureCategory.MALFORMED),
        ("return open('/etc/hostname').read() and 0", FailureCategory.FORBIDDEN),
        ("while True:\n            pass", FailureCategory.TIMEOUT),
    ],
    ids=["crash", "illegal", "malformed", "forbidden", "timeout"],
)
def test_real_sandbox_failures_reach_the_result(act_body, category):
    from csro_tui.games.registry import get_game
    from csro_tui.sandbox.sandbox import SandboxLimits

    spec = get_game("rrps(num_repetitions=5)")
    bad = code("bad", act_body)
    limits = SandboxLimits(move_timeout=0.2, batch_timeout=0.5)
    result = play_match(spec, bad, BotPolicy("rotatebot"), episodes=2, seed=0, limits=limits)
    assert result.failure is not None
    assert result.failure.category == category
    assert result.failure.policy == "bad"


# ---------------------------------------------------------------- runner


def test_chunks_cover_every_job_once_and_balance_the_load():
    from csro_tui.evaluation.runner import MAX_LOCKSTEP_EPISODES, plan_chunks

    jobs = [MatchJob(ROCK, BotPolicy(f"bot{i}"), episodes, 0) for i, episodes in enumerate([20, 20, 2, 2, 2, 40, 20])]
    chunks = plan_chunks(jobs, 3)
    assert sorted(i for chunk in chunks for i in chunk) == list(range(len(jobs)))
    loads = [sum(jobs[i].episodes for i in chunk) for chunk in chunks]
    assert len(chunks) == 3 and max(loads) == 40  # the biggest job alone; the rest share
    big = [MatchJob(ROCK, BotPolicy("b"), 1000, 0)] * 5
    assert all(sum(big[i].episodes for i in chunk) <= MAX_LOCKSTEP_EPISODES for chunk in plan_chunks(big, 1))


# -- memory per episode: hosts play in waves ---------------------------------------------


def _history_tables_jobs(throws: int = 20, bots: int = 4):
    from csro_tui.games.registry import get_game

    spec = get_game(f"rrps(num_repetitions={throws})")
    source = (Path(__file__).parents[1] / "sandbox_policies" / "history_tables.py").read_text()
    policy = CodePolicy("history_tables", source)
    names = [bot.name for bot in spec.benchmark()[:bots]]
    # 20 episodes per bot, the default of `csro eval` and the run's benchmark.
    return spec, [MatchJob(policy, BotPolicy(bot), 20, 100 + i) for i, bot in enumerate(names)]


def test_a_policy_keeping_megabytes_per_episode_plays_its_episodes_in_waves(monkeypatch):
    """~4 MB per episode by the end (20 throws); 80 episodes at once would
    need 320 MB beside the host in its 320.  At 12 MB per episode the host holds (320 - 128) / 12 =
    16 at a time, so the referee plays the 4 matches one after another on
    the same host, and every episode completes."""
    from csro_tui.evaluation import referee as referee_module
    from csro_tui.evaluation.lockstep import Lockstep

    monkeypatch.setenv("CSRO_SANDBOX", "rlimits")
    spec, jobs = _history_tables_jobs()
    limits = SandboxLimits(init_timeout=30.0, memory_mb=320, episode_memory_mb=12)
    assert limits.episodes_per_host() == 16
    assert referee_module.plan_waves(jobs, 16) == [[0], [1], [2], [3]]
    factories = []

    def factory(*args, **kwargs):
        factories.append(args)
        return PolicyHost(*args, **kwargs)

    waves = []
    original_start = Lockstep.start
    monkeypatch.setattr(Lockstep, "start", lambda self: (waves.append(len(self.matches)), original_start(self))[1])
    results = play_matches(spec, jobs, limits=limits, host_factory=factory)
    assert [r.failure for r in results] == [None] * 4, [r.failure.summary() for r in results if r.failure]
    assert [r.episodes for r in results] == [20] * 4
    assert waves == [1, 1, 1, 1] and len(factories) == 1  # one host, kept from wave to wave


def test_a_host_out_of_memory_says_how_many_episodes_were_live_and_what_each_held(monkeypatch):
    """The same policy with all 80 episodes on one host (1 MB per episode
    allowed, so no waves) runs out, and the message says why."""
    monkeypatch.setenv("CSRO_SANDBOX", "rlimits")
    spec, jobs = _history_tables_jobs()
    limits = SandboxLimits(init_timeout=30.0, memory_mb=320, episode_memory_mb=1)
    results = play_matches(spec, jobs, limits=limits)
    failure = results[0].failure
    assert failure is not None and failure.category is FailureCategory.MEMORY, results[0]
    assert re.search(r"ran out of memory in act \(episode \d+\).*, with 80 episodes live, about [\d.]+ MB each",
                     failure.message), failure.message
    assert "limit 320 MB for the host, which may play 192 episodes at once: 1 MB each" in failure.message
    assert all(r.failure is not None for r in results)  # the host is gone: every match it served failed


@pytest.mark.parametrize("waves", [True, False])
def test_a_policy_keeping_megabytes_per_episode_evaluates_at_the_default_limits(monkeypatch, waves):
    """Against 16 bots at the default 20 episodes each: 320 episodes of ~4 MB
    (like the Iocaine-style policy of issue 25 at 1000 throws) would need
    1.3 GB at once, more than the default 1024 MB; in waves of what the
    default 8 MB per episode allows (112), every match completes.
    (waves=False shows the test can fail: all at once, the host runs out.)"""
    from csro_tui.evaluation import referee as referee_module

    monkeypatch.setenv("CSRO_SANDBOX", "rlimits")
    if not waves:
        monkeypatch.setattr(referee_module, "episodes_per_host", lambda limits: 10_000)
    spec, jobs = _history_tables_jobs(bots=16)
    results = play_matches(spec, jobs, limits=SandboxLimits())
    failures = [r.failure for r in results if r.failure is not None]
    if waves:
        assert failures == [], [f.summary() for f in failures]
    else:
        assert failures and failures[0].category is FailureCategory.MEMORY


def test_a_lockstep_cut_short_with_a_batch_in_flight_ends_that_host_instead_of_raising():
    """A SIGTERM in a referee worker can land between send_act and receive_act; unwinding
    then ends the carried hosts' episodes, and asking a host with a batch in flight raised
    RuntimeError, which replaced the stop with a traceback (seen once in the suite)."""
    from csro_tui.evaluation.lockstep import Lockstep, _SharedHost

    spec = rrps(5)
    shared = _SharedHost(ROCK)
    shared.host = PolicyHost(ROCK.source, spec.game_info(), name="rock")
    shared.host.new_episodes([(1, 0, 7)])
    assert shared.host.send_act([(1, {"legal_actions": [0, 1, 2]})]) is not None
    assert shared.host.batch_in_flight
    lockstep = Lockstep.__new__(Lockstep)  # only what release_episodes reads
    lockstep.hosts = {"rock": shared}
    try:
        lockstep.release_episodes()
        assert shared.failure is None  # not the policy's doing
        with pytest.raises(Exception):
            shared.host.act([(1, {"legal_actions": [0, 1, 2]})])  # it ended with its episodes
    finally:
        shared.host.close()
