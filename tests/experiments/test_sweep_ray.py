"""`csro sweep --backend ray`: sessions as Ray tasks, logs on the sessions directory the driver reads.

Needs a Ray cluster, reached as tests/test_ray_backend.py reaches it
(`CSRO_TEST_RAY_ADDRESS`, default 127.0.0.1:6379, which `.ci/run` starts with
2 CPUs); elsewhere the tests skip with the reason, and under CI=true that is a
failure.  Every session task asks for one CPU, so on the 2-CPU head two
sessions run and the others queue in Ray.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from csro_tui.sessions.state import fold
from csro_tui.sessions.store import EVENTS_FILE, SessionStore

RAY_ADDRESS = os.environ.get("CSRO_TEST_RAY_ADDRESS", "127.0.0.1:6379")
IN_CI = os.environ.get("CI", "").lower() == "true"

SWEEP = """
name = "{name}"
iterations = {iterations}
seeds = [1, 2, 3]
[grid]
oracle = ["best-response", "seed"]
[options]
game = "kuhn_poker"
"""

KILLED = """
name = "killed"
iterations = 8
seeds = [1, 2, 3, 4]
[options]
game = "kuhn_poker"
oracle = "best-response"
solver = "prd"
"""


@pytest.fixture(scope="module")
def ray_address() -> str:
    from csro_tui.evaluation.ray_backend import ray_available

    def unavailable(reason: str) -> None:
        if IN_CI:
            pytest.fail(f"{reason} (CI installs the ray extra and starts a Ray head on {RAY_ADDRESS})")
        pytest.skip(reason)

    if not ray_available():
        unavailable("ray is not installed (pip install -e '.[ray]')")
    host, _, port = RAY_ADDRESS.rpartition(":")
    try:
        socket.create_connection((host, int(port)), timeout=2).close()
    except OSError as error:
        unavailable(f"no Ray cluster at {RAY_ADDRESS} ({error}); start one with `ray start --head`")
    return RAY_ADDRESS


def sweep(path: Path, root: Path, *extra: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "csro_tui.cli", "sweep", str(path), "--sessions-dir", str(root),
                             *extra], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)


def finished_states(root: Path) -> dict[str, object]:
    store = SessionStore(root)
    return {d.name: fold(store.read(d.name).events) for d in sorted(root.iterdir()) if (d / EVENTS_FILE).exists()}


def figures(state) -> tuple:
    return (state.completed_iterations, [m.source for m in state.population],
            [(m.iteration, m.exploitability) for m in state.metrics])


def test_a_sweep_on_ray_gives_the_local_sweeps_figures(tmp_path, ray_address):
    path = tmp_path / "sweep.toml"
    path.write_text(SWEEP.format(name="same", iterations=2), encoding="utf-8")
    local, remote = tmp_path / "local", tmp_path / "ray"
    process = sweep(path, local, "--workers", "2")
    out, err = process.communicate(timeout=300)
    assert process.returncode == 0, err
    process = sweep(path, remote, "--backend", "ray", "--ray-address", ray_address)
    out, err = process.communicate(timeout=300)
    assert process.returncode == 0, err
    assert "6 done" in out
    here, there = finished_states(local), finished_states(remote)
    assert sorted(here) == sorted(there) and len(here) == 6
    for session_id, state in here.items():
        assert there[session_id].closed.reason == "completed"
        assert figures(there[session_id]) == figures(state)


def test_a_killed_ray_driver_then_a_rerun_finishes_every_session_exactly_once(tmp_path, ray_address):
    path = tmp_path / "sweep.toml"
    # PRD sessions take seconds each here, so the driver dies with sessions running and queued.
    path.write_text(KILLED, encoding="utf-8")
    root = tmp_path / "sessions"
    process = sweep(path, root, "--backend", "ray", "--ray-address", ray_address)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if root.exists() and any((d / EVENTS_FILE).exists() for d in root.iterdir()):
            break
        time.sleep(0.1)
    time.sleep(1.0)
    os.killpg(process.pid, signal.SIGKILL)  # the driver and nothing else of ours: Ray ends its tasks
    process.communicate(timeout=30)
    interrupted = finished_states(root)
    assert any(state.closed is None or state.closed.reason != "completed" for state in interrupted.values()) \
        or len(interrupted) < 4, "the driver was killed after every session had finished"
    process = sweep(path, root, "--backend", "ray", "--ray-address", ray_address)
    out, err = process.communicate(timeout=300)
    assert process.returncode == 0, err
    found = finished_states(root)
    assert len(found) == 4
    for state in found.values():
        types = [e.TYPE for e in state.events]
        assert types.count("session_started") == 1
        assert state.closed.reason == "completed" and state.completed_iterations == 8
        finished = [e.iteration for e in state.events if e.TYPE == "iteration_finished"]
        assert finished == sorted(set(finished)), finished


PAPER = """Paper beats the rock-only population.

```python
class Policy:
    def __init__(self, player, game):
        self.player = player

    def act(self, obs):
        return 1
```
"""


def test_llm_sessions_run_as_ray_tasks_with_their_calls_counted(tmp_path, ray_address):
    from tests.llm_server import ScriptedLLMServer
    from csro_tui.experiments.compare import llm_totals

    root = tmp_path / "sessions"
    with ScriptedLLMServer([PAPER, PAPER]) as server:
        path = tmp_path / "llm.toml"
        path.write_text(f"""
name = "llm-ray"
iterations = 1
repeats = 2
[options]
game = "rrps(num_repetitions=50)"
oracle = "llm"
seed_policies = ["constant_rock"]
benchmark = "off"
episodes = 2
smoke_episodes = 1
model = "scripted-model"
base_url = "{server.base_url}"
""", encoding="utf-8")
        process = sweep(path, root, "--backend", "ray", "--ray-address", ray_address)
        out, err = process.communicate(timeout=300)
    assert process.returncode == 0, err
    found = finished_states(root)
    assert len(found) == 2
    assert all(state.closed.reason == "completed" and llm_totals(state.events).calls == 1 for state in found.values())
    assert "LLM calls 2," in out


def test_ctrl_c_stops_a_ray_sweep_resumable_and_a_rerun_finishes_it(tmp_path, ray_address):
    path = tmp_path / "sweep.toml"
    path.write_text(KILLED.replace('"killed"', '"interrupted"'), encoding="utf-8")
    root = tmp_path / "sessions"
    process = sweep(path, root, "--backend", "ray", "--ray-address", ray_address)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if root.exists() and any((d / EVENTS_FILE).exists() for d in root.iterdir()):
            break
        time.sleep(0.1)
    os.killpg(process.pid, signal.SIGINT)
    out, err = process.communicate(timeout=120)
    assert process.returncode == 130, err
    assert "every session is resumable" in out and "failed" not in out.split("sweep sessions")[-1].split("\n")[-2]
    from csro_tui.experiments.manifest import session_status
    from csro_tui.experiments.sweep_file import read_sweep

    kinds = [session_status(root, c.session_id).kind for c in read_sweep(path).cells]
    assert set(kinds) <= {"new", "stopped", "done"} and "stopped" in kinds, kinds
    process = sweep(path, root, "--backend", "ray", "--ray-address", ray_address)
    out, err = process.communicate(timeout=300)
    assert process.returncode == 0, err
    for state in finished_states(root).values():
        assert [e.TYPE for e in state.events].count("session_started") == 1
        assert state.closed.reason == "completed" and state.completed_iterations == 8
