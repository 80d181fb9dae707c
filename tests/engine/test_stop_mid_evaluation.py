"""A stop abandons a sampled evaluation mid-way; resume evaluates it again, with the same results.

Before, a stop (ctrl+q in the TUI, a closed terminal) waited for the whole
batch: about 40 s for an RRPS benchmark of 43 bots.
"""

from __future__ import annotations

import tempfile

import pytest

from csro_tui.config import RunConfig
from csro_tui.engine.evaluator import GameEvaluator
from csro_tui.engine.setup import new_engine, resume_engine
from csro_tui.games.registry import get_game
from csro_tui.reviewers import AutoReviewer
from csro_tui.sessions.state import fold
from csro_tui.sessions.store import SessionStore

GAME = "rrps"  # 1000 throws: a benchmark batch outlasts a few progress reports (every 0.25 s)


def _config(tmp_path, workers: int, iterations: int) -> RunConfig:
    return RunConfig(game=GAME, oracle="seed", iterations=iterations, seed=11, workers=workers, benchmark="on",
                     benchmark_episodes=2, seed_policies=["beat_last"], sessions_dir=str(tmp_path))


def _figures(state):
    payoffs = {key: (entry.mean, entry.episodes) for key, entry in state.payoffs.items()}
    benchmarks = sorted((e.policy_id, sorted(e.per_bot.items())) for e in state.events if e.TYPE == "benchmark_evaluated")
    return payoffs, benchmarks, [p.name for p in state.population]


@pytest.mark.parametrize("workers", [1, 2])  # played in this process / in the referee pool
def test_a_stop_abandons_a_benchmark_mid_way_and_resume_finishes_it_identically(tmp_path, workers, monkeypatch):
    # Hosts keep their temporary directories here (this process, and the pool's spawned workers).
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    monkeypatch.setenv("TMPDIR", str(temporary))
    monkeypatch.setattr(tempfile, "tempdir", None)
    spec = get_game(GAME)
    store = SessionStore(tmp_path / "stopped")
    evaluator = GameEvaluator(spec, workers=workers)
    # The seed member's benchmark (iteration 0) is the batch that is stopped.
    engine = new_engine(_config(tmp_path / "stopped", workers, iterations=1), store=store, reviewer=AutoReviewer(), spec=spec,
                        evaluator=evaluator, session_id="stopped")
    reports: list[tuple[float, int]] = []

    def on_progress(done: float, total: int) -> None:
        reports.append((done, total))
        if total >= 40 and done > 0:  # the first report of a benchmark batch (43 bots)
            engine.request_stop()

    evaluator.on_progress = on_progress
    outcome = engine.run()
    assert outcome.reason == "stopped"
    big = [(done, total) for done, total in reports if total >= 40]
    assert big and max(done for done, _ in big) < big[0][1], "the benchmark batch was abandoned, not played out"
    assert fold(store.read("stopped").events).closed.reason == "stopped"
    # The abandoned matches' hosts are gone with their directories (a pool worker is ended with SIGTERM).
    assert not list(temporary.glob("csro-host-*"))

    assert not [e for e in store.read("stopped").events if e.TYPE == "benchmark_evaluated"]
    # Resumed for iteration 0 only (a whole iteration would cost more benchmarks).
    resumed, warnings = resume_engine("stopped", store=store, reviewer=AutoReviewer(), spec=spec,
                                      evaluator=GameEvaluator(spec, workers=workers), overrides={"iterations": 0})
    assert not warnings
    assert resumed.run().reason == "completed"

    straight_store = SessionStore(tmp_path / "straight")
    straight = new_engine(_config(tmp_path / "straight", workers, iterations=0), store=straight_store, reviewer=AutoReviewer(),
                          spec=spec, evaluator=GameEvaluator(spec, workers=workers), session_id="straight")
    assert straight.run().reason == "completed"
    assert _figures(fold(store.read("stopped").events)) == _figures(fold(straight_store.read("straight").events))
