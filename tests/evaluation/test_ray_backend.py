"""The Ray backend: same seeds, same results as the local one; faults; refusals.

These tests need a Ray cluster.  `.ci/run` starts a head on 127.0.0.1
(`CSRO_TEST_RAY_ADDRESS`, default 127.0.0.1:6379); elsewhere the tests skip
with the reason when Ray is not installed or no cluster answers.  Under
CI=true both are failures: CI installs the extra and starts the head.
"""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from csro_tui.config import RunConfig, load_run_config
from csro_tui.errors import ConfigError
from csro_tui.sessions.state import fold
from csro_tui.sessions.store import EVENTS_FILE, SessionStore

RAY_ADDRESS = os.environ.get("CSRO_TEST_RAY_ADDRESS", "127.0.0.1:6379")
IN_CI = os.environ.get("CI", "").lower() == "true"
GAME = "rrps(num_repetitions=50)"


def _roomy_limits():
    """Sandbox limits a machine loaded by parallel tests cannot turn into timeouts
    (the same on both backends; limits never change a result that is not a failure)."""
    from csro_tui.sandbox.sandbox import SandboxLimits

    return SandboxLimits(init_timeout=60.0, move_timeout=10.0, batch_timeout=10.0)


def _unavailable(reason: str) -> None:
    if IN_CI:
        pytest.fail(f"{reason} (CI installs the ray extra and starts a Ray head on {RAY_ADDRESS})")
    pytest.skip(reason)


@pytest.fixture(scope="module")
def ray_address() -> str:
    from csro_tui.evaluation.ray_backend import connect, ray_available

    if not ray_available():
        _unavailable("ray is not installed (pip install -e '.[ray]')")
    host, _, port = RAY_ADDRESS.rpartition(":")
    try:
        socket.create_connection((host, int(port)), timeout=2).close()
    except OSError as error:
        _unavailable(f"no Ray cluster at {RAY_ADDRESS} ({error}); start one with `ray start --head`")
    connect(RAY_ADDRESS)
    return RAY_ADDRESS


def _spec():
    from csro_tui.games.registry import get_game

    return get_game(GAME)


def _jobs(spec, episodes: int):
    from csro_tui.evaluation.participants import BotPolicy, CodePolicy
    from csro_tui.evaluation.runner import MatchJob

    seeds = spec.seed_policies()
    members = [CodePolicy(f"seed:{name}", seeds[name]) for name in ("beat_last", "frequency_counter", "cycle")]
    members += [BotPolicy(name) for name in ("rockbot", "copybot", "randbot")]
    return [
        MatchJob(members[i], members[j], episodes, 100 + 7 * i + j)
        for i in range(len(members))
        for j in range(i + 1, len(members))
    ]


def _local(spec, jobs):
    from csro_tui.evaluation.runner import evaluate_matchups

    results = [result.to_dict() for result in evaluate_matchups(spec, jobs, workers=1, limits=_roomy_limits())]
    assert [r["failure"] for r in results if r["failure"]] == []
    return results


# ---------------------------------------------------------------- configuration (no cluster needed)


def test_backend_is_a_setting_checked_like_the_others(tmp_path):
    assert RunConfig().backend == "local" and RunConfig().ray_address == ""
    with pytest.raises(ConfigError, match="backend must be local or ray"):
        RunConfig.from_dict({"backend": "spark"})
    toml = tmp_path / "csro.toml"
    toml.write_text('backend = "ray"\nray_address = "10.0.0.5:6379"\n')
    config = load_run_config({}, config_file=toml, env={})
    assert (config.backend, config.ray_address) == ("ray", "10.0.0.5:6379")
    config = load_run_config({"backend": "local"}, config_file=toml, env={})
    assert config.backend == "local"


def test_the_evaluators_ray_pool_is_made_only_for_the_ray_backend():
    from csro_tui.engine.evaluator import GameEvaluator
    from csro_tui.evaluation.runner import RefereePool

    spec = _spec()
    local = GameEvaluator(spec, workers=2)
    assert isinstance(local._referee_pool(), RefereePool)
    assert GameEvaluator(spec, workers=1)._referee_pool() is None
    ray_evaluator = GameEvaluator(spec, workers=1, backend="ray", ray_address="127.0.0.1:1")
    pool = ray_evaluator._referee_pool()
    assert type(pool).__name__ == "RayRefereePool" and pool.remote and pool.address == "127.0.0.1:1"


# ---------------------------------------------------------------- on the cluster


def test_a_cross_table_is_identical_on_both_backends_and_reports_progress(ray_address):
    from csro_tui.evaluation.ray_backend import RayRefereePool
    from csro_tui.evaluation.runner import evaluate_matchups

    spec = _spec()
    jobs = _jobs(spec, episodes=4)
    statuses = []
    pool = RayRefereePool(spec, 2, address=ray_address, status=statuses.append)
    try:
        limits = _roomy_limits()
        on_ray = [result.to_dict() for result in evaluate_matchups(spec, jobs, pool=pool, limits=limits)]
        again = [result.to_dict() for result in evaluate_matchups(spec, jobs, pool=pool, limits=limits)]  # warm
    finally:
        pool.close()
    local = _local(spec, jobs)
    assert all(result["failure"] is None for result in local)
    assert on_ray == local and again == local
    # Both actors, unless a busy cluster (another test's actors) could place only one.
    assert statuses[-1].done == len(jobs) == statuses[-1].total and statuses[-1].workers_alive in (1, 2)
    first_call = statuses[: statuses.index(next(s for s in statuses if s.done == len(jobs))) + 1]
    assert [s.done for s in first_call] == sorted(s.done for s in first_call)


def test_seat_fixed_jobs_give_the_same_results_on_ray_as_locally(ray_address):
    # Two populations: every job plays a in one seat only (a code policy and a bot as b).
    from csro_tui.evaluation.ray_backend import RayRefereePool
    from csro_tui.evaluation.runner import evaluate_matchups

    spec = _spec()
    jobs = [dataclasses.replace(job, seat=number % 2) for number, job in enumerate(_jobs(spec, episodes=3))]
    pool = RayRefereePool(spec, 2, address=ray_address)
    try:
        on_ray = [result.to_dict() for result in evaluate_matchups(spec, jobs, pool=pool, limits=_roomy_limits())]
    finally:
        pool.close()
    local = _local(spec, jobs)
    assert [result["seat"] for result in local] == [number % 2 for number in range(len(jobs))]
    assert all(result["episodes"] == 3 for result in local)
    assert on_ray == local


def test_a_worker_killed_mid_evaluation_loses_and_duplicates_nothing(ray_address):
    from csro_tui.evaluation.ray_backend import RayRefereePool
    from csro_tui.evaluation.runner import evaluate_matchups

    spec = _spec()
    jobs = _jobs(spec, episodes=120)
    pool = RayRefereePool(spec, 2, address=ray_address)
    outcome: dict = {}

    def evaluate() -> None:
        try:
            outcome["results"] = [r.to_dict() for r in evaluate_matchups(spec, jobs, pool=pool, limits=_roomy_limits())]
        except BaseException as error:  # reported by the assertion below
            outcome["error"] = error

    try:
        worker = threading.Thread(target=evaluate)
        worker.start()
        deadline = time.monotonic() + 300
        while pool.last_status is None or pool.last_status.done < 1:
            assert time.monotonic() < deadline and worker.is_alive(), outcome
            time.sleep(0.02)
        victims = pool.actor_pids()
        os.kill(victims[0], signal.SIGKILL)
        killed_mid_run = worker.is_alive()
        worker.join(timeout=180)
        assert not worker.is_alive()
        survivors = pool.actor_pids()
    finally:
        pool.close()
    assert "error" not in outcome, outcome.get("error")
    assert killed_mid_run
    assert victims[0] not in survivors and len(survivors) == len(victims)  # restarted by Ray
    assert outcome["results"] == _local(spec, jobs)


def test_a_node_that_cannot_sandbox_as_this_machine_refuses_with_the_reason(ray_address):
    from csro_tui.evaluation.ray_backend import RayRefereePool, SandboxRefused, local_isolation
    from csro_tui.evaluation.runner import evaluate_matchups

    spec = _spec()
    jobs = _jobs(spec, episodes=2)[:1]
    pool = RayRefereePool(spec, 1, address=ray_address, runtime_env={"env_vars": {"CSRO_SANDBOX": "sometimes"}})
    with pytest.raises(SandboxRefused, match="cannot run the policy sandbox: CSRO_SANDBOX must be"):
        evaluate_matchups(spec, jobs, pool=pool)
    pool.close()
    if local_isolation() == "bubblewrap":
        weaker = RayRefereePool(spec, 1, address=ray_address, runtime_env={"env_vars": {"CSRO_SANDBOX": "rlimits"}})
        with pytest.raises(SandboxRefused, match="isolates policies with rlimits, weaker than this machine's bubblewrap"):
            evaluate_matchups(spec, jobs, pool=weaker)
        weaker.close()


def _cli(*args: str, cwd: Path) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "csro_tui.cli", *args],
        cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
    )


def test_the_cli_cross_table_is_identical_on_both_backends(ray_address, tmp_path):
    members = ["seed:beat_last", "seed:cycle", "rockbot", "copybot"]
    common = ["crosstable", "--game", GAME, "--episodes", "4", "--seed", "3", "--participants", *members]
    local = _cli(*common, "--out", "local.json", cwd=tmp_path)
    assert local.wait(timeout=300) == 0, local.stderr.read()
    ray = _cli(*common, "--backend", "ray", "--ray-address", ray_address, "--out", "ray.json", cwd=tmp_path)
    assert ray.wait(timeout=300) == 0, ray.stderr.read()
    table = json.loads((tmp_path / "local.json").read_text())
    assert None not in sum(table["matrix"], [])
    assert (tmp_path / "ray.json").read_text() == (tmp_path / "local.json").read_text()

    nowhere = _cli(*common, "--backend", "ray", "--ray-address", "127.0.0.1:1", cwd=tmp_path)
    assert nowhere.wait(timeout=120) != 0
    err = nowhere.stderr.read()
    assert "cannot reach the Ray cluster at 127.0.0.1:1" in err and err.count("\n") == 1, err


RUN = ["run", "--game", GAME, "--oracle", "seed", "--iterations", "3", "--episodes", "4", "--review", "valid",
       "--seeds", "beat_last", "--benchmark-episodes", "1", "--seed", "5"]


def _outcome(root: Path) -> dict:
    (directory,) = list(root.iterdir())
    state = fold(SessionStore(root).read(directory.name).events)
    assert state.closed is not None and state.closed.reason == "completed" and state.missing_payoffs() == []
    assert len(state.population) == 4 and len(state.metrics) == 4  # the seed and three accepted proposals
    return {
        "population": [(m.id, m.name, m.source) for m in state.population],
        "payoffs": {key: (p.mean, p.stderr, p.episodes) for key, p in state.payoffs.items()},
        "meta": dict(state.meta_strategy),
        "metrics": [{k: v for k, v in dataclasses.asdict(m).items() if k not in ("seq", "ts")} for m in state.metrics],
    }


def test_csro_run_is_identical_on_both_backends_and_resumes_after_the_driver_is_killed(ray_address, tmp_path):
    local_root, ray_root = tmp_path / "local", tmp_path / "ray"
    local = _cli(*RUN, "--session-dir", str(local_root), cwd=tmp_path)
    assert local.wait(timeout=600) == 0, local.stderr.read()

    # The ray run's driver is killed (SIGKILL, no chance to clean up) once the
    # first oracle iteration has started, then resumed on the cluster.
    driver = _cli(*RUN, "--backend", "ray", "--ray-address", ray_address, "--session-dir", str(ray_root), cwd=tmp_path)
    try:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and driver.poll() is None:
            logs = list(ray_root.glob(f"*/{EVENTS_FILE}")) if ray_root.exists() else []
            if logs and b'"type": "proposal_created"' in logs[0].read_bytes():
                break
            time.sleep(0.02)
        assert driver.poll() is None, f"the run ended before it could be killed: {driver.stderr.read()}"
        os.killpg(driver.pid, signal.SIGKILL)
    finally:
        if driver.poll() is None:
            os.killpg(driver.pid, signal.SIGKILL)
        driver.wait()
    (directory,) = list(ray_root.iterdir())
    before = fold(SessionStore(ray_root).read(directory.name).events)
    assert before.closed is None and before.config["backend"] == "ray"
    resumed = _cli("run", "--resume", directory.name, "--backend", "ray", "--ray-address", ray_address,
                   "--session-dir", str(ray_root), cwd=tmp_path)
    assert resumed.wait(timeout=600) == 0, resumed.stderr.read()
    assert _outcome(ray_root) == _outcome(local_root)
    # Each payoff entry and benchmark recorded once, across the kill and the resume.
    events = SessionStore(ray_root).read(directory.name).events
    entries = [(e.row, e.col) for event in events if event.TYPE == "payoffs_evaluated" for e in event.entries]
    benchmarked = [event.policy_id for event in events if event.TYPE == "benchmark_evaluated"]
    assert len(entries) == len(set(entries)) == 6 and len(benchmarked) == len(set(benchmarked)) == 4


def _reevaluation(evaluator=None) -> float:
    """Fitness.reevaluate of a seed policy: directly (no evaluator) or through the engine's hook."""
    from types import SimpleNamespace

    from csro_tui.engine.loop import Engine
    from csro_tui.oracles.base import OracleContext
    from csro_tui.records import PolicyRecord
    from csro_tui.oracles.evolve.fitness import Fitness

    spec = _spec()
    seeds = spec.seed_policies()
    population = [PolicyRecord(f"p{i}", name, seeds[name], "seed") for i, name in enumerate(("beat_last", "cycle"))]
    context = OracleContext(spec=spec, iteration=1, population=population, meta_strategy=[0.25, 0.75], seed=3,
                            preview=lambda source: pytest.fail("re-evaluation does not preview"))
    if evaluator is not None:
        engine = SimpleNamespace(evaluator=evaluator)
        context.play_candidate = lambda *args: Engine._play_candidate(engine, *args)
    value = Fitness(context, reevaluation_episodes=6).reevaluate(seeds["frequency_counter"])
    assert value is not None
    return value


def test_the_evolve_oracles_reevaluation_is_the_same_through_the_evaluator():
    from csro_tui.engine.evaluator import GameEvaluator

    evaluator = GameEvaluator(_spec(), workers=1, limits=_roomy_limits())
    assert _reevaluation(evaluator) == _reevaluation()


def test_the_evolve_oracles_reevaluation_is_the_same_on_ray(ray_address):
    from csro_tui.engine.evaluator import GameEvaluator

    evaluator = GameEvaluator(_spec(), workers=1, backend="ray", ray_address=ray_address, limits=_roomy_limits())
    progress = []
    evaluator.on_progress = lambda done, total: progress.append((done, total))  # what the TUI shows
    try:
        on_ray = _reevaluation(evaluator)
        assert evaluator.cluster_status().total == 2  # both members' matches went to the cluster
        assert progress[-1] == (2, 2)
    finally:
        evaluator.close()
    assert on_ray == _reevaluation()


def test_the_tui_launch_options_carry_the_backend_to_the_run_config():
    from csro_tui.tui.model import LaunchOptions

    config = RunConfig.from_dict({"game": "rrps", "backend": "ray", "ray_address": "10.0.0.5:6379"})
    options = LaunchOptions.from_config(config)
    assert (options.backend, options.ray_address) == ("ray", "10.0.0.5:6379")
    again = load_run_config(options.flags(), env={})
    assert (again.backend, again.ray_address) == ("ray", "10.0.0.5:6379")
    assert load_run_config(LaunchOptions().flags(), env={}).backend == "local"


def test_the_tui_status_line_names_the_ray_workers_alive():
    from types import SimpleNamespace

    from csro_tui.evaluation.ray_backend import ClusterStatus
    from csro_tui.tui.backend import LiveRun

    shown = []
    cluster = ClusterStatus(done=3, total=8, workers_alive=1, workers=2)
    run = SimpleNamespace(
        engine=SimpleNamespace(evaluator=SimpleNamespace(cluster_status=lambda: cluster)),
        _batch=None, _batch_what=("evaluating new payoff entries", "matchups"),
        _progress_shown=0.0, _activity="evaluating new payoff entries…",
        _on_event=lambda event, _dashboard: shown.append(event.text),
    )
    LiveRun._evaluation_progress(run, 3, 8)
    assert shown and shown[-1].startswith("evaluating new payoff entries: 3/8 matchups")
    assert shown[-1].endswith("1/2 Ray workers")
    run.engine.evaluator = SimpleNamespace()  # the local backend: no note
    LiveRun._evaluation_progress(run, 8, 8)
    assert "Ray" not in shown[-1]


EVOLVE = ["run", "--game", GAME, "--oracle", "evolve", "--iterations", "1", "--episodes", "4", "--review", "valid",
          "--seeds", "beat_last", "--benchmark", "off", "--llm-budget", "6", "--seed", "5"]


def test_the_evolve_oracles_candidates_are_evaluated_the_same_on_ray(ray_address, tmp_path):
    """Screening (previews) and the finalists' re-evaluation both go through the backend."""
    runs = {}
    for backend in ("local", "ray"):
        root = tmp_path / backend
        process = _cli(*EVOLVE, "--backend", backend, "--ray-address", ray_address, "--session-dir", str(root),
                       cwd=tmp_path)
        assert process.wait(timeout=600) == 0, process.stderr.read()
        (directory,) = list(root.iterdir())
        state = fold(SessionStore(root).read(directory.name).events)
        assert state.config["backend"] == backend
        proposal = next(iter(state.proposals.values())).proposal
        assert "re-evaluated over 10 episodes" in proposal.rationale  # the finalists' path ran
        runs[backend] = (
            proposal.source, proposal.rationale,
            [(m.id, m.source) for m in state.population],
            {key: (p.mean, p.stderr) for key, p in state.payoffs.items()},
        )
    assert runs["ray"] == runs["local"]
