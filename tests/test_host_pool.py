"""Warm sandbox hosts (csro_tui/policies/host_pool.py): each pre-started
process serves one policy and dies with it; the pool replaces dead ones
and leaves nothing running when it is closed."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from csro_tui.policies.failures import FailureCategory, PolicyFailure
from csro_tui.policies.host_pool import HostPool
from csro_tui.policies.sandbox import PolicyHost, SandboxLimits, bubblewrap_problem, start_host_process

LIMITS = SandboxLimits(init_timeout=30.0, move_timeout=10.0, batch_timeout=10.0, memory_mb=512)
GAME = {"name": "test", "num_players": 2, "num_actions": 3, "action_names": ["a", "b", "c"], "params": {}}
READY_TIMEOUT = 60.0  # how long a loaded machine may take to start a couple of hosts

FIRST = """
class Policy:
    def __init__(self, player, game):
        self.player = player

    def act(self, obs):
        return 0
"""
COUNTING = """
class Policy:
    def __init__(self, player, game):
        pass

    def act(self, obs):
        return len(obs["legal_actions"]) - 1
"""


@pytest.fixture(params=["rlimits", "bubblewrap"])
def mode(request, monkeypatch):
    if request.param == "bubblewrap" and bubblewrap_problem():
        pytest.skip(f"bubblewrap unavailable: {bubblewrap_problem()}")
    monkeypatch.setenv("CSRO_SANDBOX", request.param)
    return request.param


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def descendants() -> set[int]:
    """Every process below this one (the hosts, and bwrap's children inside them)."""
    parents = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            parents[int(entry.name)] = int(fields[1])
    found, frontier = set(), {os.getpid()}
    while frontier:
        frontier = {pid for pid, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return found


def play_one(host: PolicyHost) -> int:
    host.new_episodes([(1, 0, 0)])
    return host.act([(1, {"legal_actions": [0, 1, 2]})])[0]


def test_a_pooled_host_runs_its_policy_with_the_kernel_layers_confirmed(mode):
    with HostPool(2) as pool:
        assert pool.wait_ready(timeout=READY_TIMEOUT)
        waiting = set(pool.ready_pids())
        with pool(COUNTING, GAME, name="counting", limits=LIMITS) as host:
            assert host.pid is None  # adopted, not launched yet
            assert play_one(host) == 2
            assert host.pid in waiting  # it ran on a pre-started process
            assert host.mode == mode
            assert host.layers is not None  # start() checked them against kernel_layers()
        assert pool.handed_out == 1


def test_each_pre_started_process_serves_one_policy_and_dies_with_it(mode):
    with HostPool(2) as pool:
        assert pool.wait_ready(timeout=READY_TIMEOUT)
        first = pool(FIRST, GAME, name="first", limits=LIMITS)
        play_one(first)
        first_pid = first.pid
        first.close()
        assert not alive(first_pid)  # discarded, never handed back
        second = pool(COUNTING, GAME, name="second", limits=LIMITS)
        assert play_one(second) == 2
        assert second.pid != first_pid
        assert first_pid not in pool.ready_pids()
        second.close()


def test_a_process_cannot_be_adopted_twice(mode):
    started = start_host_process(mode)
    first = PolicyHost(COUNTING, GAME, name="first", limits=LIMITS)
    second = PolicyHost(COUNTING, GAME, name="second", limits=LIMITS)
    try:
        first.adopt(started)
        with pytest.raises(RuntimeError, match="already given"):
            second.adopt(started)
        assert play_one(first) == 2
        with pytest.raises(RuntimeError, match="already has a process"):
            first.adopt(start_host_process(mode))
    finally:
        first.close()
        second.close()
    assert not alive(started.process.pid)
    assert not os.path.exists(started.temp_dir)


def test_an_adopted_process_unused_is_killed_when_its_host_closes(mode):
    started = start_host_process(mode)
    host = PolicyHost(COUNTING, GAME, name="never-started", limits=LIMITS)
    host.adopt(started)
    host.close()
    assert not alive(started.process.pid)
    assert not os.path.exists(started.temp_dir)


def test_a_dead_pre_started_host_is_replaced(mode):
    with HostPool(1) as pool:
        assert pool.wait_ready(timeout=READY_TIMEOUT)
        [victim] = pool.ready_pids()
        os.killpg(victim, signal.SIGKILL)  # dies while waiting for a policy
        os.waitid(os.P_PID, victim, os.WEXITED | os.WNOWAIT)
        with pool(COUNTING, GAME, name="after", limits=LIMITS) as host:
            assert play_one(host) == 2  # not blamed on the policy: a fresh process served it
            assert host.pid != victim
        assert pool.replaced == 1
        assert pool.wait_ready(timeout=READY_TIMEOUT)
        assert victim not in pool.ready_pids()


def test_a_failing_policy_in_a_pooled_host_fails_as_in_a_fresh_one(mode):
    crashing = "class Policy:\n    def __init__(self, player, game):\n        raise ValueError('boom')\n"
    with HostPool(1) as pool:
        assert pool.wait_ready(timeout=READY_TIMEOUT)
        host = pool(crashing, GAME, name="crashing", limits=LIMITS)
        with pytest.raises(PolicyFailure) as failure:
            play_one(host)
        assert failure.value.category is FailureCategory.CRASH
        assert "boom" in failure.value.message
        assert not alive(host.pid)
        host.close()


def test_closing_the_pool_leaves_no_process_and_no_directory(mode):
    before = descendants()
    pool = HostPool(3)
    assert pool.wait_ready(timeout=READY_TIMEOUT)
    pids = pool.ready_pids()
    temp_dirs = [started.temp_dir for started in pool._state.ready]  # noqa: SLF001 - what close must remove
    assert len(temp_dirs) == 3 and all(os.path.isdir(path) for path in temp_dirs)
    assert len(pids) == 3 and all(alive(pid) for pid in pids)
    host = pool(COUNTING, GAME, name="in-use", limits=LIMITS)
    play_one(host)
    pool.close()
    pool.close()  # idempotent
    assert not any(alive(pid) for pid in pids if pid != host.pid)
    assert not any(os.path.exists(path) for path in temp_dirs if path != host._temp_dir)  # noqa: SLF001
    assert not pool._state.filler.is_alive()  # noqa: SLF001
    assert pool.take() is None  # closed: nothing handed out any more
    host.close()  # the host handed out is its owner's to close
    assert descendants() <= before


def test_the_evaluator_runs_exact_games_on_warm_hosts_and_closes_them(mode):
    from csro_tui.engine.evaluator import GameEvaluator, MatchJob
    from csro_tui.games.registry import get_game
    from csro_tui.oracles.base import PolicyRecord

    spec = get_game("kuhn_poker")
    seeds = spec.seed_policies()
    before = descendants()
    evaluator = GameEvaluator(spec, limits=LIMITS, workers=1)
    # Fresh comments: fresh code hashes, so the tables are not cached from elsewhere.
    a = PolicyRecord(id="p0", name="a", origin="seed", source=seeds["card_rules"] + f"\n# pool test {mode} a\n")
    b = PolicyRecord(id="p1", name="b", origin="seed", source=seeds["uniform"] + f"\n# pool test {mode} b\n")
    [result] = evaluator.run([MatchJob(a, b, seed=0, exact=True)])
    assert result.failure is None and result.exact
    pool = evaluator._hosts  # noqa: SLF001
    assert pool is not None and pool.wait_ready(timeout=READY_TIMEOUT)
    c = PolicyRecord(id="p2", name="c", origin="seed", source=seeds["always_bet"] + f"\n# pool test {mode} c\n")
    [again] = evaluator.run([MatchJob(c, a, seed=0, exact=True)])
    assert again.failure is None
    assert pool.handed_out >= 1
    evaluator.close()
    assert evaluator._hosts is None  # noqa: SLF001
    assert descendants() <= before


def test_a_retired_host_is_killed_at_once_and_reaped_by_the_pool(mode):
    pool = HostPool(1)
    assert pool.wait_ready(timeout=READY_TIMEOUT)
    host = pool(COUNTING, GAME, name="retired", limits=LIMITS)
    assert play_one(host) == 2
    pid, temp_dir = host.pid, host._temp_dir  # noqa: SLF001
    pool.retire(host)
    with pytest.raises(RuntimeError, match="closed"):
        play_one(host)  # nothing more reaches it
    pool.close()  # waits for the reaper
    assert not alive(pid)
    assert not os.path.exists(temp_dir)


def test_a_pool_nobody_closed_is_closed_when_it_is_collected(mode):
    import gc

    pool = HostPool(2)
    assert pool.wait_ready(timeout=READY_TIMEOUT)
    pids = pool.ready_pids()
    state = pool._state  # noqa: SLF001 - what the threads keep (not the pool)
    del pool
    gc.collect()
    assert state.closed and not state.filler.is_alive()
    assert not any(alive(pid) for pid in pids)
