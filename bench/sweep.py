"""Section 10: `csro sweep` throughput, and what running sessions through it costs.

The same S sessions (kuhn_poker, best-response, nash, a few iterations,
seeds 1..S) run
  (a) one after another in this process (`new_engine(...).run()`, imports
      warm: the sessions' own cost, nothing else),
  (b) as a sweep with 1 local worker, (c) with 2 local workers,
  (d) as a sweep on a Ray cluster ($CSRO_BENCH_RAY_ADDRESS; skipped without),
in turns, each into a fresh sessions directory.  Reported: sessions per
minute, and the overhead per session of (b) and (d) against (a): what the
sweep's machinery (a process or task per session, imports, the lock, the
log read-back) adds to each session.
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

from bench.common import Table

ITERATIONS = 4


def _sweep_file(directory: Path, sessions: int) -> Path:
    path = directory / "bench-sweep.toml"
    seeds = ", ".join(str(s) for s in range(1, sessions + 1))
    path.write_text(f'name = "bench"\niterations = {ITERATIONS}\nseeds = [{seeds}]\n'
                    f'[options]\ngame = "kuhn_poker"\noracle = "best-response"\nsolver = "nash"\n', encoding="utf-8")
    return path


def _one_after_another(sessions: int, root: Path) -> float:
    from csro_tui.config import RunConfig
    from csro_tui.engine import new_engine
    from csro_tui.sessions.store import SessionStore

    store = SessionStore(root)
    start = time.perf_counter()
    for seed in range(1, sessions + 1):
        config = RunConfig.from_dict({"game": "kuhn_poker", "oracle": "best-response", "solver": "nash",
                                      "iterations": ITERATIONS, "seed": seed, "workers": 1,
                                      "sessions_dir": str(root)})
        engine = new_engine(config, store=store, session_id=f"seq-{seed}")
        try:
            outcome = engine.run()
        finally:
            engine.writer.close()
        assert outcome.reason == "completed", outcome.message
    return time.perf_counter() - start


def _swept(path: Path, root: Path, **options) -> float:
    from csro_tui.experiments.scheduler import run_sweep
    from csro_tui.experiments.sweep_file import read_sweep

    sweep = read_sweep(path)
    start = time.perf_counter()
    result = run_sweep(sweep, root, **options)
    seconds = time.perf_counter() - start
    assert result.count("done") == len(sweep.cells), [(r.cell.session_id, r.state, r.reason) for r in result.runs]
    return seconds


def sweep_section(table: Table, quick: bool) -> None:
    sessions = 6 if quick else 12
    rounds = 1 if quick else 2
    address = os.environ.get("CSRO_BENCH_RAY_ADDRESS", "")
    runs: dict[str, list[float]] = {"sequential": [], "1 worker": [], "2 workers": [], "ray": []}
    with tempfile.TemporaryDirectory(prefix="csro-bench-sweep-") as tmp:
        base = Path(tmp)
        path = _sweep_file(base, sessions)
        for round_index in range(rounds):
            runs["sequential"].append(_one_after_another(sessions, base / f"seq{round_index}"))
            runs["1 worker"].append(_swept(path, base / f"w1-{round_index}", workers=1))
            runs["2 workers"].append(_swept(path, base / f"w2-{round_index}", workers=2))
            if address:
                runs["ray"].append(_swept(path, base / f"ray-{round_index}", backend="ray", ray_address=address))
    sequential = min(runs["sequential"])
    per_session = sequential / sessions
    table.add("10", f"{sessions} Kuhn sessions ({ITERATIONS} iterations) one after another, in-process",
              f"{sessions / sequential * 60:.1f} sessions/min", "", note=f"{per_session:.2f} s per session; "
              f"runs {', '.join(f'{s:.1f}' for s in runs['sequential'])} s")
    for name in ("1 worker", "2 workers", "ray"):
        if not runs[name]:
            table.add("10", f"sweep on Ray", "skipped", "", note="set CSRO_BENCH_RAY_ADDRESS to a Ray head")
            continue
        seconds = min(runs[name])
        overhead = (seconds - sequential) / sessions
        label = f"sweep, {name}" if name != "ray" else f"sweep on Ray ({address})"
        table.add("10", label, f"{sessions / seconds * 60:.1f} sessions/min", f"{sessions / sequential * 60:.1f}",
                  ratio=f"{sequential / seconds:.2f}x",
                  note=f"{seconds:.1f} s in all; {overhead:+.2f} s per session against one after another "
                       f"(runs {', '.join(f'{s:.1f}' for s in runs[name])} s)")
