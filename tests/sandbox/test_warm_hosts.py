"""Warm sandbox hosts (csro_tui/sandbox/host_pool.py): each pre-started
process serves one policy and dies with it; the pool replaces dead ones
and leaves nothing running when it is closed."""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

import pytest

from csro_tui.sandbox.failures import FailureCategory, PolicyFailure
from csro_tui.sandbox.host_pool import HostPool
from csro_tui.sandbox.sandbox import PolicyHost, SandboxLimits, start_host_process

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


def test_a_pooled_host_runs_its_policy_with_the_kernel_layers_confirmed(sandbox_mode):
    with HostPool(2) as pool:
        assert pool.wait_ready(timeout=READY_TIMEOUT)
        waiting = set(pool.ready_pids())
        with pool(COUNTING, GAME, name="counting", limits=LIMITS) as host:
            assert host.pid is None  # adopted, not launched yet
            assert play_one(host) == 2
            assert host.pid in waiting  # it ran on a pre-started process
            assert host.mode == sandbox_mode
            assert host.layers is not None  # start() checked them against kernel_layers()
        assert pool.handed_out == 1


def test_each_pre_started_process_serves_one_policy_and_dies_with_it(sandbox_mode):
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


def test_a_process_cannot_be_adopted_twice(sandbox_mode):
    started = start_host_process(sandbox_mode)
    first = PolicyHost(COUNTING, GAME, name="first", limits=LIMITS)
    second = PolicyHost(COUNTING, GAME, name="second", limits=LIMITS)
    try:
        first.adopt(started)
        with pytest.raises(RuntimeError, match="already given"):
            second.adopt(started)
        assert play_one(first) == 2
        spare = start_host_process(sandbox_mode)
        with pytest.raises(RuntimeError, match="already has a process"):
            first.adopt(spare)
    finally:
        first.close()
        second.close()
        if "spare" in locals():
            spare.discard()  # refused by the host: nobody else would end it
    assert not alive(started.process.pid)
    assert not os.path.exists(started.temp_dir)


def test_an_adopted_process_unused_is_killed_when_its_host_closes(sandbox_mode):
    started = start_host_process(sandbox_mode)
    host = PolicyHost(COUNTING, GAME, name="never-started", limits=LIMITS)
    host.adopt(started)
    host.close()
    assert not alive(started.process.pid)
    assert not os.path.exists(started.temp_dir)


def _wait_until_dead(pid: int) -> None:
    """Until `pid` is a zombie (or gone): a host forked by the zygote is the
    zygote's child, not ours, so os.waitid cannot wait for it."""
    import time

    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            return
        if state in ("Z", "X"):
            return
        time.sleep(0.01)
    raise AssertionError(f"process {pid} did not die")


def test_a_dead_pre_started_host_is_replaced(sandbox_mode):
    with HostPool(1) as pool:
        assert pool.wait_ready(timeout=READY_TIMEOUT)
        [victim] = pool.ready_pids()
        os.killpg(victim, signal.SIGKILL)  # dies while waiting for a policy
        _wait_until_dead(victim)
        with pool(COUNTING, GAME, name="after", limits=LIMITS) as host:
            assert play_one(host) == 2  # not blamed on the policy: a fresh process served it
            assert host.pid != victim
        assert pool.replaced == 1
        assert pool.wait_ready(timeout=READY_TIMEOUT)
        assert victim not in pool.ready_pids()


def test_a_failing_policy_in_a_pooled_host_fails_as_in_a_fresh_one(sandbox_mode):
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


def test_closing_the_pool_leaves_no_process_and_no_directory(sandbox_mode):
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


def test_the_evaluator_runs_exact_games_on_warm_hosts_and_closes_them(sandbox_mode):
    from csro_tui.engine.evaluator import GameEvaluator
    from csro_tui.records import MatchJob, PolicyRecord
    from csro_tui.games.registry import get_game

    spec = get_game("kuhn_poker")
    seeds = spec.seed_policies()
    before = descendants()
    evaluator = GameEvaluator(spec, limits=LIMITS, workers=1)
    # Fresh comments: fresh code hashes, so the tables are not cached from elsewhere.
    a = PolicyRecord(id="p0", name="a", origin="seed", source=seeds["card_rules"] + f"\n# pool test {sandbox_mode} a\n")
    b = PolicyRecord(id="p1", name="b", origin="seed", source=seeds["uniform"] + f"\n# pool test {sandbox_mode} b\n")
    [result] = evaluator.run([MatchJob(a, b, seed=0, exact=True)])
    assert result.failure is None and result.exact
    pool = evaluator._hosts  # noqa: SLF001
    assert pool is not None and pool.wait_ready(timeout=READY_TIMEOUT)
    c = PolicyRecord(id="p2", name="c", origin="seed", source=seeds["always_bet"] + f"\n# pool test {sandbox_mode} c\n")
    [again] = evaluator.run([MatchJob(c, a, seed=0, exact=True)])
    assert again.failure is None
    assert pool.handed_out >= 1
    evaluator.close()
    assert evaluator._hosts is None  # noqa: SLF001
    assert descendants() <= before


def test_a_retired_host_is_killed_at_once_and_reaped_by_the_pool(sandbox_mode):
    pool = HostPool(1)
    assert pool.wait_ready(timeout=READY_TIMEOUT)
    host = pool(COUNTING, GAME, name="retired", limits=LIMITS)
    assert play_one(host) == 2
    pid, temp_dir = host.pid, host._temp_dir  # noqa: SLF001
    pool.retire(host)
    with pytest.raises(RuntimeError, match="closed"):
        play_one(host)  # nothing more reaches it
    # The process is the reaper's alone: closing the host (as __del__ does) must not reap it here too.
    assert host.pid is None
    host.close()
    pool.close()  # waits for the reaper
    assert not alive(pid)
    assert not os.path.exists(temp_dir)


def test_a_pool_nobody_closed_is_closed_when_it_is_collected(sandbox_mode):
    import gc

    pool = HostPool(2)
    assert pool.wait_ready(timeout=READY_TIMEOUT)
    pids = pool.ready_pids()
    state = pool._state  # noqa: SLF001 - what the threads keep (not the pool)
    del pool
    gc.collect()
    assert state.closed and not state.filler.is_alive()
    assert not any(alive(pid) for pid in pids)


def host_process_pid(started) -> int:
    """The interpreter's pid: the process itself, or under bubblewrap the
    descendant of bwrap that runs the interpreter."""
    if started.mode != "bubblewrap":
        return started.process.pid
    import time

    deadline = time.monotonic() + READY_TIMEOUT
    while time.monotonic() < deadline:  # bwrap may not have started the interpreter yet
        pid = _interpreter_below(started.process.pid)
        if pid is not None:
            return pid
        time.sleep(0.02)
    raise AssertionError("no interpreter below the host's bwrap")


def _interpreter_below(bwrap_pid: int) -> int | None:
    for pid in sorted(descendants()):
        try:
            argv0 = (Path("/proc") / str(pid) / "cmdline").read_bytes().split(b"\0")[0]
            if argv0.decode() == sys.executable and pid != os.getpid():
                ancestors = pid
                # below this host's bwrap, not another one
                while ancestors > 1 and ancestors != bwrap_pid:
                    ancestors = int((Path("/proc") / str(ancestors) / "stat").read_text().rsplit(")", 1)[1].split()[1])
                if ancestors == bwrap_pid:
                    return pid
        except (OSError, ValueError, IndexError):
            continue
    return None


def process_status(pid: int) -> dict:
    fields = {}
    for line in (Path("/proc") / str(pid) / "status").read_text().splitlines():
        name, _, value = line.partition(":")
        fields[name] = value.split()
    return fields


def test_a_started_host_has_its_kernel_layers_before_any_policy_arrives(sandbox_mode):
    """The host's set-up comes in two parts: the kernel layers are applied as
    soon as it starts (a pooled host waits with them in place), the policy's
    own limits and the drop of root when its module arrives; the module's
    top-level code, the first time it runs, meets every layer."""
    import time

    from csro_tui.sandbox.sandbox import kernel_layers

    layers = kernel_layers()
    started = start_host_process(sandbox_mode)
    host = PolicyHost(source_of_fixture("load_facts.py"), GAME, name="facts", limits=LIMITS)
    host.adopt(started)
    try:
        pid = host_process_pid(started)
        deadline = time.monotonic() + READY_TIMEOUT
        while time.monotonic() < deadline:
            status = process_status(pid)
            if not layers["seccomp"] or status.get("Seccomp") == ["2"]:
                break
            time.sleep(0.02)
        assert status.get("NoNewPrivs") == ["1"]
        if layers["seccomp"]:
            assert status.get("Seccomp") == ["2"], status.get("Seccomp")
        host.new_episodes([(1, 0, 0)])
        from csro_tui.sandbox.isolation import host_uid

        nobody = host_uid(started.process.pid) if os.geteuid() == 0 else os.geteuid()
        expected = {
            "uid": nobody, "euid": nobody, "memory": LIMITS.memory_mb << 20, "cpu": LIMITS.cpu_seconds,
            "processes": LIMITS.max_processes, "file_bytes": LIMITS.max_file_bytes,
            "open_files": LIMITS.max_open_files, "core": 0, "recursion": LIMITS.recursion_limit,
            "stdout_captured": True,
        }
        if os.geteuid() == 0:
            expected["gid"] = nobody
        for fact, value in expected.items():
            answer = host.act([(1, {"legal_actions": [0, 1], "fact": fact, "expected": value})])[0]
            assert answer == 1, (fact, value)
        assert process_status(pid)["Uid"][:2] == [str(nobody)] * 2
        assert bool(host.layers["landlock"]) == bool(layers["landlock"])
    finally:
        host.close()


def source_of_fixture(name: str) -> str:
    return (Path(__file__).parents[1] / "sandbox_policies" / name).read_text()


@pytest.mark.parametrize("part", ["prepare", "load"])
def test_a_host_whose_set_up_fails_says_so_in_one_line(sandbox_mode, monkeypatch, part):
    """A failure in either part of the host's set-up reaches the caller of
    `start` as one line plus the host's traceback, and the host is gone."""
    from csro_tui.sandbox import host_process

    real = host_process._prepare_message  # noqa: SLF001

    def broken(mode_name, *rest):
        message = real(mode_name, *rest)
        if part == "prepare":
            message["site_dirs"] = 7  # sys.path.extend(7): TypeError while preparing
        else:
            message["drop_to"] = ["nobody", "nogroup"]  # int("nobody"): ValueError when the module arrives
        return message

    monkeypatch.setattr(host_process, "_prepare_message", broken)
    if part == "load" and os.geteuid() != 0:
        pytest.skip("root is only dropped when running as root")
    host = PolicyHost(COUNTING, GAME, name="broken", limits=LIMITS)
    with pytest.raises(PolicyFailure) as caught:
        host.start()
    failure = caught.value
    assert failure.category is FailureCategory.CRASH
    expected = "TypeError" if part == "prepare" else "ValueError"
    assert failure.message.startswith(f"sandbox setup failed: {expected}"), failure.message
    assert "\n" not in failure.message
    assert "Traceback" in failure.traceback and ("_prepare" if part == "prepare" else "_load_limits") in failure.traceback
    assert host.pid is None or not alive(host.pid)
    host.close()


def test_a_host_that_cannot_be_started_fails_in_one_line_and_stays_failed(sandbox_mode, monkeypatch):
    """No process (fork refused, no memory, ...): a crash naming why, the host
    closed, and the same failure from every later call."""
    from csro_tui.sandbox import policy_host

    def refused(*_args, **_kwargs):
        raise OSError(11, "Resource temporarily unavailable")

    monkeypatch.setattr(policy_host, "start_host_process", refused)
    host = PolicyHost(COUNTING, GAME, name="unstartable", limits=LIMITS)
    with pytest.raises(PolicyFailure) as caught:
        host.start()
    failure = caught.value
    assert failure.category is FailureCategory.CRASH
    assert failure.message == "could not start the policy host: [Errno 11] Resource temporarily unavailable"
    assert host.failure is failure and host.pid is None
    with pytest.raises(PolicyFailure) as again:
        host.new_episodes([(1, 0, 1)])
    assert again.value is failure


def test_host_modules_start_from_bytecode_that_matches_their_source(tmp_path, monkeypatch):
    """The host's modules are imported from bytecode the parent keeps current
    (a script would be compiled at every start); a stale file is compiled
    again, and a module whose bytecode cannot be written is left to the host."""
    import importlib.util

    from csro_tui.sandbox import isolation

    isolation.host_bytecode.cache_clear()
    found = isolation.host_bytecode()
    assert set(found) == {str(module) for module in isolation.HOST_MODULES}
    assert all(isolation._bytecode_current(Path(module), bytecode) for module, bytecode in found.items())  # noqa: SLF001
    args = isolation._bubblewrap_command("/usr/bin/bwrap", "/tmp/host-work")  # noqa: SLF001
    for module, bytecode in found.items():
        at = args.index(bytecode)
        assert args[at - 1] == "--ro-bind-try"  # a speed-up only: a file removed since is skipped
        assert args[at + 1] == f"/csro-host/__pycache__/{Path(bytecode).name}"
        assert Path(bytecode).name.startswith(Path(module).stem + ".")

    writable, blocked = tmp_path / "writable", tmp_path / "blocked"
    writable.mkdir()
    blocked.mkdir()
    (blocked / "__pycache__").write_text("not a directory")  # bytecode cannot be written here
    good, bad = writable / "host_main.py", blocked / "host_kernel.py"
    good.write_text("VALUE = 1\n")
    bad.write_text("VALUE = 2\n")
    monkeypatch.setattr(isolation, "HOST_MODULES", (good, bad))
    isolation.host_bytecode.cache_clear()
    try:
        assert isolation.host_bytecode() == {str(good): importlib.util.cache_from_source(str(good))}
        good.write_text("VALUE = 100\n")  # a new size: the bytecode no longer matches
        assert not isolation._bytecode_current(good, importlib.util.cache_from_source(str(good)))  # noqa: SLF001
        isolation.host_bytecode.cache_clear()
        assert str(good) in isolation.host_bytecode()
        assert isolation._bytecode_current(good, importlib.util.cache_from_source(str(good)))  # noqa: SLF001
    finally:
        isolation.host_bytecode.cache_clear()


def test_a_host_starts_when_its_bytecode_was_removed_after_the_list_was_made(sandbox_mode, monkeypatch, tmp_path):
    """The bytecode list is made once per process; a __pycache__ removed since (a reinstall, a
    clean) must not make bwrap refuse every later host, whose failure would be charged to
    whichever policy it was to run (found in review)."""
    from csro_tui.sandbox import isolation

    gone = {str(module): str(tmp_path / f"{module.stem}.removed.pyc") for module in isolation.HOST_MODULES}
    monkeypatch.setattr(isolation, "host_bytecode", lambda: gone)
    host = PolicyHost(COUNTING, GAME, name="no-bytecode", limits=LIMITS)
    try:
        assert play_one(host) == 2
    finally:
        host.close()


def test_replacements_wait_for_a_lull_unless_the_pool_is_empty(sandbox_mode, monkeypatch):
    """Hosts taken in quick succession come from the stock; replacements
    start once takes pause (REFILL_AFTER_SECONDS) or at once when none is left."""
    import time

    from csro_tui.sandbox import host_pool

    monkeypatch.setattr(host_pool, "REFILL_AFTER_SECONDS", 60.0)
    with HostPool(2) as pool:
        assert pool.wait_ready(timeout=READY_TIMEOUT)
        first = pool.take()
        time.sleep(0.5)  # a replacement would have been spawned by now (a Popen: milliseconds)
        assert pool.started == 2 and len(pool.ready_pids()) == 1
        second = pool.take()  # the last one: the pool refills at once (one, then waits for the lull)
        assert pool.wait_ready(1, timeout=READY_TIMEOUT)
        time.sleep(0.5)
        assert pool.started == 3
        for started in (first, second):
            started.discard()


def test_the_pool_tries_again_after_a_host_failed_to_start(sandbox_mode, monkeypatch):
    """A passing shortage (EAGAIN, too many open files) must not leave the rest of the session
    without warm hosts (found in review: the filler thread gave up after one failure)."""
    from csro_tui.sandbox import host_pool

    failures = []
    real_start = host_pool.start_host_process

    def start_once_failing(isolation):
        if not failures:
            failures.append(isolation)
            raise OSError(11, "Resource temporarily unavailable")
        return real_start(isolation)

    monkeypatch.setattr(host_pool, "start_host_process", start_once_failing)
    pool = HostPool(1)
    try:
        assert pool.wait_ready(timeout=READY_TIMEOUT), "the pool started a host after the failure"
        assert failures == [sandbox_mode]
        host = pool(COUNTING, GAME, name="after-a-failure", limits=LIMITS)
        assert play_one(host) == 2
        pool.retire(host)
    finally:
        pool.close()
