"""Progress inside long work: the evaluator's matchup counts reach the status line with time left."""

from __future__ import annotations

from tests.tui.helpers import llm_session

import re

from tests.fakes import ToyEvaluator, best_member_solve, climbing_oracle, toy_policy
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


def _no_llm_env(monkeypatch) -> None:
    import os

    for name in list(os.environ):
        if name.startswith(("OPENAI_", "CSRO_LLM_")):
            monkeypatch.delenv(name, raising=False)


async def test_an_llm_call_in_flight_shows_its_state_and_its_reply_as_it_streams(tmp_path, llm_server, monkeypatch):  # noqa: F811
    from textual.widgets import Static

    from csro_tui.tui.app import CsroApp
    from csro_tui.tui.screens.review import ReviewScreen
    from tests.llm_server import ScriptedReply
    from tests.tui.helpers import wait_until
    from tests.tui.sample import KUHN_POLICY

    _no_llm_env(monkeypatch)
    # the model "reads the prompt" for 2 s, then writes 8 characters every 0.15 s
    llm_server.script(ScriptedReply(f"```python\n{KUHN_POLICY}```\n", delay_s=2.0, chunk_delay_s=0.15, chunk_chars=8))
    app = CsroApp(sessions_dir=tmp_path, backend=Backend(tmp_path))
    async with app.run_test(size=(80, 24)) as pilot:
        await llm_session(pilot, app, llm_server.base_url)
        await pilot.press("n")
        status = app.screen.query_one("#status", Static)
        reply = app.screen.query_one("#llm-reply", Static)
        await wait_until(pilot, lambda: "LLM call 1 of ≤3: reading ~" in str(status.render()), "the call, before its first token")
        assert reply.display and "nothing yet" in str(reply.render())
        assert app.screen.query_one("#panel-log").border_title == "LLM reply 1 · l: full view"
        await wait_until(pilot, lambda: re.search(r"LLM call 1 of ≤3: \d+ tokens", str(status.render())), "tokens counted as they stream")
        await wait_until(pilot, lambda: "class Policy:" in str(reply.render()), "the reply as it streams")
        assert "c cancels" in str(status.render())
        await wait_until(pilot, lambda: isinstance(app.screen, ReviewScreen), "the review")
        await pilot.press("c")
        await wait_until(pilot, lambda: not app._busy(), "the engine")
        await pilot.pause(0.6)  # the app's poll (0.5 s) hides the finished call
        assert not app.screen.query_one("#llm-reply", Static).display
        assert app.screen.query_one("#event-log").display
        assert app.screen.query_one("#panel-log").border_title == "Events"
        assert "LLM call 1" not in str(app.screen.query_one("#status", Static).render())


async def test_ctrl_c_stops_an_llm_call_that_is_still_reading_the_prompt(tmp_path, llm_server, monkeypatch):  # noqa: F811
    from textual.widgets import Static

    from csro_tui.sessions.state import fold
    from csro_tui.tui.app import CsroApp
    from tests.llm_server import ScriptedReply
    from tests.tui.helpers import notifications, wait_until

    _no_llm_env(monkeypatch)
    llm_server.script(ScriptedReply("never sent", delay_s=600.0))  # a model that would take ten minutes
    app = CsroApp(sessions_dir=tmp_path, backend=Backend(tmp_path))
    async with app.run_test(size=(160, 48)) as pilot:
        await llm_session(pilot, app, llm_server.base_url)
        await pilot.press("n")
        status = app.screen.query_one("#status", Static)
        await wait_until(pilot, lambda: "LLM call 1 of ≤3 (best response): reading the ~" in str(status.render()), "the call")
        await pilot.press("ctrl+c")
        # bounded well under the scripted 600 s: the call itself is stopped, not waited for
        await wait_until(pilot, lambda: any("stopped during iteration 1" in n for n in notifications(app)), "the engine stopped")
        assert app.live.llm_activity() is None
        session_id = app.live.session_id
    state = fold(Backend(tmp_path).read_events(session_id))
    assert len(state.population) == 1 and state.completed_iterations == 0


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
    from csro_tui.records import Bot, MatchJob, PolicyRecord
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


def test_the_llm_watch_follows_each_call_of_a_proposal_as_its_reply_streams():
    from csro_tui.oracles.base import LLMUse
    from csro_tui.tui.backend import LLMWatch

    class FakeBackend:
        def __init__(self) -> None:
            self.during: list = []

        def complete(self, messages, *, purpose, on_text=None, cancel=None):
            self.during.append(watch.activity())  # sent, nothing back yet
            for text in ("class", "class Policy", "class Policy:\n    pass"):
                on_text(text)
                self.during.append(watch.activity())
            return "call record"

    class FakeOracle:
        name = "llm-refine"

        def __init__(self) -> None:
            self.backend = FakeBackend()
            self.llm = LLMUse(self.backend, 10)  # the oracle contract's declaration

    oracle = FakeOracle()
    watch = LLMWatch.attach(oracle)
    assert watch is not None and watch.activity() is None
    messages = [{"role": "user", "content": "x" * 400}]
    assert oracle.backend.complete(messages, purpose="best_response") == "call record"
    before, *streaming = oracle.backend.during
    assert before.calls[0].number == 1 and before.calls[0].first_token is None
    assert before.calls[0].prompt_tokens == 100 and before.budget == 10
    assert "reading the ~100-token prompt, no reply yet" in before.line(before.calls[0].started + 3)
    assert [a.calls[0].tokens for a in streaming] == [1, 2, 3]
    assert streaming[-1].reply == "class Policy:\n    pass"
    assert watch.activity() is None  # the call ended
    oracle.backend.during.clear()
    oracle.backend.complete(messages, purpose="refine")
    assert oracle.backend.during[0].calls[0].number == 2  # the second call of the same proposal
    watch.new_proposal()  # an engine event: the next call starts a new proposal's count
    oracle.backend.during.clear()
    oracle.backend.complete(messages, purpose="refine")
    assert oracle.backend.during[0].calls[0].number == 1


def test_an_llm_call_line_counts_tokens_and_their_rate_once_writing_started():
    from csro_tui.tui.backend import CallInFlight, LLMActivity

    call = CallInFlight(number=2, purpose="refine", started=0.0, prompt_tokens=2000, streamed=True,
                        tokens=30, text="x", first_token=5.0)
    activity = LLMActivity("llm-refine", 10, (call,))
    assert activity.line(15.0) == "llm-refine: LLM call 2 of ≤10 (refinement): 30 tokens · 3.0/s · 15 s"
    assert activity.line(15.0, short=True) == "LLM call 2 of ≤10: 30 tokens · 3.0/s · 15 s"
    assert activity.line(6.0) == "llm-refine: LLM call 2 of ≤10 (refinement): 30 tokens · 6 s"  # no rate in the first 2 s
    from dataclasses import replace

    second = replace(activity, attempt=2, max_attempts=3)  # the oracle's second proposal of the iteration
    assert second.line(15.0) == "proposal 2 of 3, llm-refine: LLM call 2 of ≤10 (refinement): 30 tokens · 3.0/s · 15 s"
    assert second.line(15.0, short=True) == activity.line(15.0, short=True)
    waiting = CallInFlight(number=1, purpose="best_response", started=0.0, prompt_tokens=2000, streamed=False)
    assert LLMActivity("llm", None, (waiting,)).line(70.0) == \
        "llm: LLM call 1 (best response): waiting for the reply (not streamed) · 70 s"


def test_a_scored_reply_is_noted_by_payoff_copy_or_failure():
    from csro_tui.records import Preview
    from csro_tui.sandbox.failures import PolicyFailure
    from csro_tui.tui.backend import score_note

    assert score_note(Preview(expected_payoff=0.125, per_member={})) == "+0.125 vs meta"
    copy = Preview(expected_payoff=-0.0001, per_member={}, duplicate_of="p1")
    assert score_note(copy) == "+0.000 vs meta, a copy of p1"  # never -0.000
    failed = Preview(expected_payoff=float("nan"), per_member={},
                     failure=PolicyFailure.from_dict({"category": "crash", "message": "KeyError: 'card'"}))
    assert score_note(failed).startswith("failed: ") and "KeyError" in score_note(failed)


def test_the_reply_panel_keeps_each_line_on_one_row_under_the_newest_scores():
    from csro_tui.tui.widgets.dashboard_view import reply_tail

    scored = ("reply 1: +0.000 vs meta", "reply 2: failed: KeyError 'card'")
    shown = reply_tail("line one\nline two\nline three\x1b[2J", 3, 30, scored=scored)
    rows = shown.plain.split("\n")
    assert rows[0] == "reply 2: failed: KeyError 'ca…"  # the newest first, cut to the width
    assert rows[1:] == ["line two", "line three\\x1b[2J"]  # the last lines that fit, escapes shown visibly
    assert shown.no_wrap
    waiting = reply_tail("", 3, 30)
    assert "nothing yet" in waiting.plain and not waiting.no_wrap  # the note wraps in a narrow panel


async def test_a_refinement_chain_shows_the_step_and_the_scores_of_earlier_replies(tmp_path, llm_server, monkeypatch):  # noqa: F811
    from textual.widgets import Static

    from csro_tui.tui.app import CsroApp
    from tests.llm_server import ScriptedReply
    from tests.tui.helpers import notifications, wait_until
    from tests.tui.sample import KUHN_POLICY

    _no_llm_env(monkeypatch)
    # the first reply ties the seed (always_bet), so llm-refine asks again; the second never comes
    llm_server.script(f"```python\n{KUHN_POLICY}```\n", ScriptedReply("never sent", delay_s=600.0))
    app = CsroApp(sessions_dir=tmp_path, backend=Backend(tmp_path))
    async with app.run_test(size=(160, 48)) as pilot:
        await llm_session(pilot, app, llm_server.base_url, oracle="llm-refine")
        await pilot.press("n")
        status = app.screen.query_one("#status", Static)
        reply = app.screen.query_one("#llm-reply", Static)
        await wait_until(pilot, lambda: "llm-refine: LLM call 2 of ≤10 (refinement): reading the ~" in str(status.render()),
                         "the second step of the chain")
        await wait_until(pilot, lambda: "reply 1: +0.000 vs meta" in str(reply.render()), "the first reply's score")
        await pilot.press("ctrl+c")
        await wait_until(pilot, lambda: any("stopped during iteration 1" in n for n in notifications(app)), "the engine stopped")
        assert len(llm_server.chat_requests) == 2


async def test_f_ends_a_refinement_chain_with_its_best_reply_and_the_review_follows(tmp_path, llm_server, monkeypatch):  # noqa: F811
    from textual.widgets import Static

    from csro_tui.tui.app import CsroApp
    from csro_tui.tui.screens.review import ReviewScreen
    from tests.llm_server import ScriptedReply
    from tests.tui.helpers import notifications, wait_until
    from tests.tui.sample import KUHN_POLICY

    _no_llm_env(monkeypatch)
    # the first reply ties the seed, so llm-refine asks again; the second would take ten minutes
    llm_server.script(f"```python\n{KUHN_POLICY}```\n", ScriptedReply("never sent", delay_s=600.0))
    app = CsroApp(sessions_dir=tmp_path, backend=Backend(tmp_path))
    async with app.run_test(size=(160, 48)) as pilot:
        await llm_session(pilot, app, llm_server.base_url, oracle="llm-refine")
        await pilot.press("n")
        status = app.screen.query_one("#status", Static)
        await wait_until(pilot, lambda: "LLM call 2 of ≤10" in str(status.render()), "the second step of the chain")
        assert "f finishes" in str(status.render())
        await pilot.press("f")
        # the call in flight is dropped and the first reply goes to review; the session is not stopped
        await wait_until(pilot, lambda: isinstance(app.screen, ReviewScreen), "the review of the best reply so far")
        assert any("Finishing" in n for n in notifications(app)) and not app.live.cancelled
        assert len(llm_server.chat_requests) == 2


async def test_l_shows_the_call_whole_at_80_columns_and_c_there_cancels_it(tmp_path, llm_server, monkeypatch):  # noqa: F811
    from textual.widgets import Static

    from csro_tui.tui.app import CsroApp
    from csro_tui.tui.screens.dashboard import DashboardScreen
    from csro_tui.tui.screens.llm_call import LLMCallScreen
    from tests.llm_server import ScriptedReply
    from tests.tui.helpers import notifications, wait_until
    from tests.tui.sample import KUHN_POLICY

    _no_llm_env(monkeypatch)
    reply = f"Bet with the king.\n\n```python\n{KUHN_POLICY}```\n"
    # 4 characters every 0.4 s: the reply takes about 30 s, and the cancel comes well before its end
    llm_server.script(ScriptedReply(reply, chunk_delay_s=0.4, chunk_chars=4))
    app = CsroApp(sessions_dir=tmp_path, backend=Backend(tmp_path))
    async with app.run_test(size=(80, 24)) as pilot:
        await llm_session(pilot, app, llm_server.base_url)
        await pilot.press("l")
        assert any("No LLM call in flight" in n for n in notifications(app))  # nothing runs yet
        await pilot.press("n")
        await wait_until(pilot, lambda: app.live.llm_activity() is not None, "the call")
        await pilot.press("l")
        await wait_until(pilot, lambda: isinstance(app.screen, LLMCallScreen), "the call's screen")
        shown = app.screen.query_one("#llm-call-text", Static)
        await wait_until(pilot, lambda: "def act(self, obs):" in str(shown.render()), "the reply, whole")
        text = str(shown.render())
        assert text.startswith("llm: LLM call 1 of ≤3 (best response): ") and "Bet with the king." in text
        await pilot.press("c")
        await wait_until(pilot, lambda: "No LLM call in flight now" in str(shown.render()), "the call cancelled")
        assert "def act(self, obs):" in str(shown.render())  # the last reply seen stays readable
        await pilot.press("escape")
        assert isinstance(app.screen, DashboardScreen)


def test_each_reply_of_a_proposal_gets_its_score_or_says_why_it_has_none():
    from csro_tui.records import Preview
    from csro_tui.oracles.llm.client import LLMError
    from csro_tui.oracles.base import LLMUse
    from csro_tui.tui.backend import LLMWatch

    class FakeBackend:
        def __init__(self) -> None:
            self.fail = False

        def complete(self, messages, *, purpose, on_text=None, cancel=None):
            if self.fail:
                raise LLMError("server", "HTTP 500 from the server")
            on_text("```python\n...")
            return "call"

    class FakeOracle:
        name = "llm-refine"

        def __init__(self) -> None:
            self.backend = FakeBackend()
            self.llm = LLMUse(self.backend, 10)  # the oracle contract's declaration

    oracle = FakeOracle()
    watch = LLMWatch.attach(oracle)
    messages = [{"role": "user", "content": "x"}]
    notes = []

    def ask() -> None:
        oracle.backend.complete(messages, purpose="refine", on_text=lambda text: notes.append(watch.activity().scored))

    ask()
    watch.scored(Preview(expected_payoff=-0.25, per_member={}))  # reply 1 scored
    ask()  # reply 2: no preview (no usable code, or the same code again)
    ask()
    assert notes[-1] == ("reply 1: -0.250 vs meta", "reply 2: no new code to score (none usable, or scored before)")
    oracle.backend.fail = True
    try:
        ask()
    except LLMError:
        pass
    oracle.backend.fail = False
    ask()
    assert notes[-1][2:] == ("reply 3: no new code to score (none usable, or scored before)",
                             "reply 4: the call failed: HTTP 500 from the server")
    watch.new_proposal()  # an engine event: the next proposal starts with no replies
    ask()
    assert notes[-1] == ()


def test_after_a_rejection_the_status_says_the_oracle_works_again():
    from csro_tui.sessions.events import ProposalDecided

    def decided(action: str) -> str:
        return Backend.describe_activity(ProposalDecided(proposal_id="i1.1", action=action, decided_by="tui"))

    assert decided("reject") == "rejected: oracle working…"
    assert decided("edit") == "validating the edit (sandboxed smoke run)…"
    assert decided("accept") == "engine working…"


class StallingEvaluator(CountingEvaluator):
    """Once armed, reports half its batch played and then stalls (a slow policy's next move)."""

    def __init__(self) -> None:
        super().__init__()
        import threading

        self.armed = False
        self.stalled = threading.Event()
        self.release = threading.Event()

    def run(self, jobs):
        jobs = list(jobs)
        if not self.armed:
            return super().run(jobs)
        self.armed = False
        self.on_progress(len(jobs) / 2, len(jobs))
        self.stalled.set()
        self.release.wait(timeout=120)
        return super().run(jobs)


async def test_the_time_left_is_estimated_again_while_no_work_is_reported(tmp_path):
    """Issue 29, item 5: a slow policy's preview showed "~50 s left" for 100 s: the line was
    computed only when the evaluator reported, from the rate at that report."""
    from csro_tui.tui.app import CsroApp
    from tests.tui.helpers import engine_idle, start_screen, wait_until

    evaluator = StallingEvaluator()
    backend = Backend(tmp_path, engine_parts={"spec": ToySpec(), "oracle": climbing_oracle(0.1),
                                              "evaluator": evaluator, "meta_solve": best_member_solve})
    app = CsroApp(sessions_dir=tmp_path, backend=backend)
    async with app.run_test(size=(160, 48)) as pilot:
        await start_screen(pilot, app)
        await pilot.press("ctrl+n")
        await engine_idle(pilot, app)
        evaluator.armed = True
        await pilot.press("n")
        try:
            await wait_until(pilot, evaluator.stalled.is_set, "the stalled batch")
            # the batch's clock is moved back instead of waiting; the real seconds the test takes only add
            batch = app.live._batch  # noqa: SLF001

            def left() -> int | None:
                found = re.search(r" · (\d+)s left$", app._work_text)
                return int(found.group(1)) if found else None

            batch.started -= 10  # half done in 10 s: 10 s left
            await wait_until(pilot, lambda: (left() or 0) >= 10, "the time left")
            first = left()
            batch.started -= 30  # no work reported since: half done in 40 s, so 40 s left
            await wait_until(pilot, lambda: (left() or 0) >= 40, "the time left estimated again")
            assert left() > first
        finally:
            evaluator.release.set()
        from csro_tui.tui.screens.review import ReviewScreen

        await wait_until(pilot, lambda: isinstance(app.screen, ReviewScreen), "the review after the batch")
