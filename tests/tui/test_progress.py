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


async def test_llm_calls_show_while_the_oracle_works(tmp_path, llm_server, monkeypatch):  # noqa: F811
    import os

    from textual.widgets import Input, Select

    from csro_tui.tui.app import CsroApp
    from csro_tui.tui.screens.review import ReviewScreen
    from tests.llm_server import ScriptedReply
    from tests.tui.helpers import start_screen, wait_until
    from tests.tui.test_live_llm import KUHN_POLICY

    for name in list(os.environ):
        if name.startswith(("OPENAI_", "CSRO_LLM_")):
            monkeypatch.delenv(name, raising=False)
    llm_server.script(ScriptedReply(f"```python\n{KUHN_POLICY}```\n", delay_s=3.0))
    app = CsroApp(sessions_dir=tmp_path, backend=Backend(tmp_path))
    async with app.run_test(size=(80, 24)) as pilot:
        await start_screen(pilot, app)
        app.screen.query_one("#oracle", Select).value = "llm"
        await pilot.pause()
        app.screen.query_one("#model", Input).value = "scripted-model"
        app.screen.query_one("#base-url", Input).value = llm_server.base_url
        await pilot.press("ctrl+n")
        await wait_until(pilot, lambda: app.live is not None and not app._busy(), "the seeds")
        await pilot.press("n")
        await wait_until(pilot, lambda: "LLM calls 0 · tokens 0" in app._work_text, "the oracle's activity")
        await wait_until(pilot, lambda: isinstance(app.screen, ReviewScreen), "the review")
        await pilot.press("c")


from tests.llm_server import llm_server  # noqa: E402,F401 - fixture


def test_batch_progress_counts_whole_matchups_and_waits_for_a_rate():
    from csro_tui.tui.backend import RATE_AFTER, BatchProgress

    batch = BatchProgress("oracle working", "matchups", total=2, started=100.0)
    batch.done = 2
    # a batch done in a blink: no absurd rate, no time (the status line shows the elapsed time)
    assert batch.line(100.001) == "oracle working: 2/2 matchups"
    batch = BatchProgress("previewing against the benchmark bots", "bots", total=43, started=0.0)
    batch.done = 33.8
    assert batch.line(1.0) == "previewing against the benchmark bots: 33/43 bots"
    batch.done = 30.0
    line = batch.line(RATE_AFTER * 5)  # 30 in 10 s: 3/s, 13 left: 4 s
    assert line == "previewing against the benchmark bots: 30/43 bots · 3/s · 4s left"


def test_a_preview_against_bots_is_counted_in_bots_and_against_members_in_members():
    from csro_tui.engine.evaluator import Bot, MatchJob
    from csro_tui.oracles.base import PolicyRecord
    from csro_tui.tui.backend import batch_description

    member = PolicyRecord(id="p1", name="one", source="", origin="seed")
    bots = [MatchJob(member, Bot("rock"), seed=1), MatchJob(member, Bot("paper"), seed=2)]
    members = [MatchJob(member, member, seed=3)]
    assert batch_description("previewing against the population…", bots) == ("previewing against the benchmark bots", "bots")
    assert batch_description("previewing against the population…", members) == ("previewing against the population", "members")
    assert batch_description("evaluating new payoff entries…", members) == ("evaluating new payoff entries", "matchups")
    assert batch_description("evaluating new payoff entries…", bots) == ("playing the benchmark bots", "bots")


def test_the_status_line_gives_one_time_figure():
    from csro_tui.tui.widgets.status_line import work_heading

    assert work_heading("⠋", "previewing: 30/43 bots · 3/s · 4s left", 10) == "⠋ previewing: 30/43 bots · 3/s · 4s left (c cancels)"
    assert work_heading("⠋", "oracle working: 2/2 matchups", 3) == "⠋ oracle working: 2/2 matchups · 3 s (c cancels)"
