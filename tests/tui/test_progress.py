"""Progress inside long work: the evaluator's matchup counts reach the status line with time left."""

from __future__ import annotations

import re

from csro_tui.engine.fakes import ToyEvaluator, best_member_solve, climbing_oracle, toy_policy
from csro_tui.tui.backend import Backend, EvaluationProgress
from csro_tui.tui.model import LaunchOptions


class ToySpec:
    name = "toy"

    def seed_policies(self) -> dict[str, str]:
        return {"weak": toy_policy(0.1), "strong": toy_policy(0.2)}


class CountingEvaluator(ToyEvaluator):
    """The toy evaluator, reporting each job as the real one's runner does."""

    def __init__(self) -> None:
        super().__init__()
        self.on_progress = None

    def run(self, jobs):
        results = []
        for done, job in enumerate(jobs, start=1):
            results.append(super().run([job])[0])
            if self.on_progress is not None:
                self.on_progress(done, len(jobs))
        return results


def test_evaluation_progress_reaches_the_app_with_counts(tmp_path):
    evaluator = CountingEvaluator()
    backend = Backend(tmp_path, engine_parts={"spec": ToySpec(), "oracle": climbing_oracle(0.1),
                                              "evaluator": evaluator, "meta_solve": best_member_solve})
    seen: list[tuple[object, object]] = []
    live = backend.start_run(LaunchOptions(game="toy", oracle="seed", seed_policies=["weak", "strong"]), None,
                             lambda event, data: seen.append((event, data)))
    try:
        progress = [event for event, data in seen if isinstance(event, EvaluationProgress)]
        assert progress, "no progress reported"
        assert all(data is None for event, data in seen if isinstance(event, EvaluationProgress))
        last = progress[-1].text
        # the last report of a batch is its end: every matchup counted
        assert re.search(r"(\d+)/\1 matchups", last), last
        assert Backend.describe_activity(progress[-1]) == last
    finally:
        live.close()
