"""The evaluation speed-ups keep results identical: message encoding, host
launch, the referee pool, the engine evaluator's reuse of results, the
preview's benchmark seeds, the exact evaluator's overlapped start-up and
the lockstep's GC setting.  (Speed itself is measured by `python -m bench`.)"""

from __future__ import annotations

import dataclasses
import datetime
import enum
import gc
import json

import pytest

from csro_tui.engine.evaluator import GameEvaluator, derive_seed
from csro_tui.records import Bot, MatchJob, PolicyRecord
from csro_tui.engine.gate import Gate, GateSettings
from csro_tui.engine.jobs import benchmark_jobs
from csro_tui.config import RunConfig
from csro_tui.evaluation import exact
from csro_tui.evaluation.participants import BotPolicy, CodePolicy
from csro_tui.evaluation.referee import play_match
from csro_tui.evaluation.runner import MatchJob as RunnerJob, RefereePool, evaluate_matchups, plan_chunks
from csro_tui.games.registry import get_game
from csro_tui.sandbox.sandbox import PolicyHost, _encode_message

SMALL_RRPS = "rrps(num_repetitions=10)"


class _Kind(enum.IntEnum):
    ONE = 1


@dataclasses.dataclass
class _Point:
    x: int = 1


@pytest.mark.parametrize(
    "message",
    [
        {"a": [1, 2.5, "x", True, {"b": [0, [1]]}]},
        {"a": None},
        {"a": float("nan"), "b": float("inf"), "c": -float("inf")},
        {"a": 2**70, "b": -(2**64)},
        {"a": _Kind.ONE},
        {1: 2},
        {"a": (1, 2)},
        {"a": "\ud800", "b": "é"},
        {"a": 1e-7, "b": -0.0, "c": 1e16},
    ],
)
def test_messages_mean_what_json_would(message):
    encoded = _encode_message(dict(message), "testing")
    expected = json.dumps(message, separators=(",", ":"))
    assert encoded.endswith(b"\n")
    assert repr(json.loads(encoded)) == repr(json.loads(expected))


@pytest.mark.parametrize("value", [object(), {1, 2}, _Point(), datetime.date(2020, 1, 1)])
def test_messages_json_cannot_carry_are_refused(value):
    with pytest.raises(ValueError, match="cannot send testing"):
        _encode_message({"a": value}, "testing")


def test_launch_then_start_then_play():
    spec = get_game(SMALL_RRPS)
    source = spec.seed_policies()["cycle"]
    with PolicyHost(source, spec.game_info(), name="cycle") as host:
        host.launch()
        host.launch()  # no-op once launched
        host.start()
        host.new_episodes([(1, 0, 0)])
        assert host.act([(1, {"round": 4, "legal_actions": [0, 1, 2]})]) == [1]
        assert host.send_act([(1, {"round": 5, "legal_actions": [0, 1, 2]})]) is True
        assert host.receive_act() == [2]
        assert host.send_act([]) is False


def test_referee_pool_is_reused_and_matches_one_process():
    spec = get_game(SMALL_RRPS)
    seeds = spec.seed_policies()
    code = CodePolicy("freq", seeds["frequency_counter"])
    jobs = [RunnerJob(code, BotPolicy(bot), 4, 10 + i) for i, bot in enumerate(["rockbot", "copybot", "pibot"])]
    alone = evaluate_matchups(spec, jobs, workers=1)
    pool = RefereePool(spec, 2)
    try:
        first = pool.run(jobs, plan_chunks(jobs, 2), None, None)
        workers = list(pool._pool._pool)  # noqa: SLF001 - the same worker processes serve the next call
        second = pool.run(jobs, plan_chunks(jobs, 2), None, None)
        assert list(pool._pool._pool) == workers  # noqa: SLF001
    finally:
        pool.close()
    for results in (first, second):
        assert [(r.mean, r.returns, r.seeds) for r in results] == [(r.mean, r.returns, r.seeds) for r in alone]


def test_engine_evaluator_plays_an_identical_job_once():
    spec = get_game(SMALL_RRPS)
    source = spec.seed_policies()["frequency_counter"]
    evaluator = GameEvaluator(spec, workers=1)
    candidate = PolicyRecord(id="candidate", name="x", source=source, origin="candidate")
    member = PolicyRecord(id="p3", name="x", source=source, origin="seed")
    first = evaluator.run([MatchJob(candidate, Bot("rockbot"), 5, 4)])[0]
    played = []
    import csro_tui.evaluation.runner as runner

    real = runner.evaluate_matchups

    def counting(*args, **kwargs):
        played.append(args[1])
        return real(*args, **kwargs)

    runner.evaluate_matchups = counting
    try:
        again = evaluator.run([MatchJob(member, Bot("rockbot"), 5, 4), MatchJob(member, Bot("rockbot"), 5, 6)])
    finally:
        runner.evaluate_matchups = real
    assert len(played) == 1 and len(played[0]) == 1  # only the job with new episodes was played
    assert (again[0].a, again[0].b) == ("p3", "rockbot")
    assert (again[0].mean, again[0].returns, again[0].seeds) == (first.mean, first.returns, first.seeds)
    direct = play_match(spec, CodePolicy("p3", source), BotPolicy("rockbot"), episodes=6, seed=5)
    assert (again[1].mean, again[1].returns) == (direct.mean, direct.returns)


def test_preview_benchmark_uses_the_members_benchmark_seeds():
    spec = get_game(SMALL_RRPS)
    config = RunConfig(game=SMALL_RRPS, seed=7, benchmark_episodes=2)
    seen = []

    class Recording:
        exact = False

        def bots(self):
            return ["rockbot", "copybot"]

        def run(self, jobs):
            seen.extend(jobs)
            return [type("R", (), {"mean": 0.0, "failure": None})() for _ in jobs]

    gate = Gate(Recording(), GateSettings(seed=7, benchmark=True, benchmark_episodes=2))
    source = spec.seed_policies()["cycle"]
    gate._benchmark("i1.1", PolicyRecord(id="candidate", name="c", source=source, origin="candidate"), "p4")  # noqa: SLF001
    member = PolicyRecord(id="p4", name="c", source=source, origin="seed")
    expected = benchmark_jobs(config, member, ["rockbot", "copybot"])
    assert [(j.b.name, j.seed, j.episodes) for j in seen] == [(j.b.name, j.seed, j.episodes) for j in expected]
    seen.clear()
    gate._benchmark("i1.1", PolicyRecord(id="candidate", name="c", source=source, origin="candidate"))  # noqa: SLF001
    assert [j.seed for j in seen] == [derive_seed(7, "preview-bench", "i1.1", bot) for bot in ["rockbot", "copybot"]]


def test_exact_entry_with_two_new_policies_matches_tables_asked_one_by_one():
    spec = get_game("kuhn_poker")
    seeds = spec.seed_policies()
    a = CodePolicy("a", seeds["card_rules"] + "\n# speedups test a\n")
    b = CodePolicy("b", seeds["uniform"] + "\n# speedups test b\n")
    together = exact.exact_payoff(spec, a, b)
    table_a, table_b = exact.tabular_policy(spec, a), exact.tabular_policy(spec, b)  # cached by now
    first = exact.policy_values(spec, table_a, table_b)[0]
    second = exact.policy_values(spec, table_b, table_a)[1]
    assert together.failure is None
    assert together.mean == pytest.approx((first + second) / 2, abs=1e-12)


def test_lockstep_restores_the_gc_threshold():
    spec = get_game(SMALL_RRPS)
    before = gc.get_threshold()
    play_match(spec, BotPolicy("rockbot"), BotPolicy("copybot"), episodes=2, seed=0)
    assert gc.get_threshold() == before
