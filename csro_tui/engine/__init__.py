"""The CSRO engine: the loop, its review gate, and how it is built.

- `loop.Engine`: runs iterations, emits events (see `csro_tui.sessions.events`).
- `gate`: validation and preview of candidates (`Gate`) and the review loop (`ReviewLoop`).
- `evaluator`: the `Evaluator` interface and the real `GameEvaluator`.
- `iteration_metrics`: per-iteration metrics from the folded state.
- `verify`: re-run a recorded session's evaluations and meta-solves (`csro replay --verify`).
- `setup`: `new_engine` / `resume_engine` from a `RunConfig`.
"""

from csro_tui.engine.evaluator import Evaluator, GameEvaluator, derive_seed
from csro_tui.engine.loop import Engine, RunOutcome
from csro_tui.engine.setup import new_engine, resume_engine, software_versions

__all__ = [
    "Engine",
    "Evaluator",
    "GameEvaluator",
    "RunOutcome",
    "derive_seed",
    "new_engine",
    "resume_engine",
    "software_versions",
]
