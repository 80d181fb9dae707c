"""The workbench when things fail (issue 36): failed proposals reach the person, server
errors in one line, the keys around an error and an LLM wait, and input that must not be lost.

LLM cases run the real client against tests/llm_server.py's scripted server: its replies
are test fixtures, not model output.
"""

from __future__ import annotations

import pytest
from textual.widgets import Static, TextArea

from csro_tui.sessions.state import fold
from csro_tui.tui.app import CsroApp
from csro_tui.tui.backend import Backend
from csro_tui.tui.screens.editor import EditorScreen
from csro_tui.tui.screens.review import ReviewScreen
from tests.llm_server import llm_server  # noqa: F401 - fixture
from tests.tui.helpers import engine_idle, llm_session, wait_until
from tests.tui.sample import KUHN_POLICY

pytestmark = pytest.mark.usefixtures("no_llm_env")

# A Kuhn policy that answers with an action the game never offers (test text, not model output).
ILLEGAL = KUHN_POLICY.replace("return obs[\"legal_actions\"][0]", "return 7")


async def test_a_failed_proposal_reaches_review_with_its_code_and_reason_and_one_edit_fixes_it(tmp_path, llm_server):  # noqa: F811
    assert ILLEGAL != KUHN_POLICY
    reply = f"Here it is.\n\n```python\n{ILLEGAL}```\n"
    llm_server.script(reply, reply, reply)  # the candidate's budget: 3 calls, each returning an illegal action
    app = CsroApp(sessions_dir=tmp_path, backend=Backend(tmp_path))
    async with app.run_test(size=(80, 24)) as pilot:
        await llm_session(pilot, app, llm_server.base_url)
        await pilot.press("n")
        await wait_until(pilot, lambda: isinstance(app.screen, ReviewScreen), "the review of the failed code")
        info = app.screen.info
        assert "return 7" in info.source and not info.valid
        assert info.oracle_failure.startswith("illegal_action")
        header = str(app.screen.query_one("#review-summary", Static).render())
        assert "the oracle's code failed" in header and "e edits it" in header
        assert len(llm_server.chat_requests) == 3  # one attempt's calls, not 3 attempts x 3
        await pilot.press("e")
        await wait_until(pilot, lambda: isinstance(app.screen, EditorScreen), "the editor")
        app.screen.query_one(TextArea).text = KUHN_POLICY  # the person's one-line fix
        await pilot.press("ctrl+s")
        await wait_until(pilot, lambda: isinstance(app.screen, ReviewScreen) and app.screen.info.valid,
                         "the edit validated and previewed")
        assert app.screen.info.history and "return 7" in app.screen.info.history[0][1]
        await pilot.press("a")
        await engine_idle(pilot, app)
        session_id = app.live.session_id
    state = fold(Backend(tmp_path).read_events(session_id))
    assert state.population[-1].source.strip() == KUHN_POLICY.strip()
    assert len(llm_server.chat_requests) == 3


async def test_a_server_that_is_down_is_said_at_once_then_in_one_line_naming_it_without_a_traceback(tmp_path):
    from csro_tui.tui.widgets.error_panel import ErrorPanel
    from tests.llm_server import closed_port_url
    from tests.tui.helpers import notifications

    base_url = closed_port_url()
    address = base_url.split("//")[1].split("/")[0]
    app = CsroApp(sessions_dir=tmp_path, backend=Backend(tmp_path))
    async with app.run_test(size=(160, 48)) as pilot:
        await llm_session(pilot, app, base_url)
        await pilot.press("n")
        status = app.screen.query_one("#status", Static)
        # while the client still retries: where it connects and why it cannot, not "reading the prompt"
        await wait_until(pilot, lambda: f"connecting to {address}: connection refused" in str(status.render()),
                         "the connection failure on the status line")
        assert "reading" not in str(status.render())
        await engine_idle(pilot, app)
        panel = app.screen.query_one(ErrorPanel)
        await wait_until(pilot, lambda: panel.has_class("-shown"), "the error panel")
        text = str(panel.render())
        assert f"LLM server at http://{address}/v1 refused the connection" in text
        assert "Traceback" not in text and "CsroError" not in text
        assert any(f"http://{address}/v1 refused" in n and "Error:" not in n for n in notifications(app))
        # n goes on after the error: the panel goes and a line says what happens
        await pilot.press("n")
        await pilot.pause()
        assert not panel.has_class("-shown")
        assert any("Resuming after the error" in n for n in notifications(app))
        app.action_cancel_work()
        await engine_idle(pilot, app)


async def test_f_before_any_reply_cancels_the_proposal_instead_of_asking_again(tmp_path, llm_server):  # noqa: F811
    from tests.llm_server import ScriptedReply
    from tests.tui.helpers import notifications

    llm_server.script(ScriptedReply("never sent", delay_s=600.0), ScriptedReply("never sent", delay_s=600.0))
    app = CsroApp(sessions_dir=tmp_path, backend=Backend(tmp_path))
    async with app.run_test(size=(80, 24)) as pilot:
        await llm_session(pilot, app, llm_server.base_url)
        await pilot.press("n")
        await wait_until(pilot, lambda: app.live.llm_activity() is not None and llm_server.chat_requests,
                         "the call")
        await pilot.press("f")
        await engine_idle(pilot, app)
        assert any("f cancelled the proposal" in n for n in notifications(app))
        assert len(llm_server.chat_requests) == 1  # no second call was started
        session_id = app.live.session_id
    state = fold(Backend(tmp_path).read_events(session_id))
    assert not state.proposals and state.completed_iterations == 0


async def test_csro_tui_config_takes_its_oracle_options_as_csro_run_does(tmp_path, llm_server, monkeypatch):  # noqa: F811
    """Issue 36: `csro tui --config F` ignored F's [oracle_options] (`csro run` honours them)."""
    import argparse

    from csro_tui.commands import tui as tui_command
    from tests.tui.helpers import start_screen

    config = tmp_path / "mine.toml"
    config.write_text(f'oracle = "llm"\nmodel = "scripted-model"\nbase_url = "{llm_server.base_url}"\n'
                      f'sessions_dir = "{tmp_path / "sessions"}"\n\n[oracle_options]\nbudget = 1\n')
    reply = f"Here it is.\n\n```python\n{ILLEGAL}```\n"
    llm_server.script(reply, reply, reply)
    made: list[CsroApp] = []
    # the command's app, driven below with run_test instead of on the terminal
    monkeypatch.setattr(CsroApp, "run", lambda self, *a, **k: made.append(self))
    args = argparse.Namespace(game=None, oracle=None, model=None, base_url=None, solver=None, episodes=None, seed=None,
                              populations=None, sessions_dir=None, iterations=None, session=None, config=str(config),
                              trust_base_url=False)
    tui_command.run(args)
    app = made[0]
    async with app.run_test(size=(80, 24)) as pilot:
        await start_screen(pilot, app)
        await pilot.press("ctrl+n")
        await wait_until(pilot, lambda: app.live is not None and not app._busy(), "the seeds")
        assert app.live.engine.config.oracle_options.get("budget") == 1
        await pilot.press("n")
        await wait_until(pilot, lambda: isinstance(app.screen, ReviewScreen), "the failed code's review")
        assert len(llm_server.chat_requests) == 1  # the file's budget of one call, not the default three


async def test_events_that_came_during_an_llm_reply_keep_whole_lines_at_80x24():
    """Issue 36: the Events panel printed one character per line after an LLM reply: the log
    was hidden behind the reply (no width) when the events came, and wrapped them at one column."""
    from textual.screen import Screen

    from csro_tui.tui.backend import CallInFlight, LLMActivity
    from csro_tui.tui.widgets.dashboard_view import DashboardView
    from csro_tui.tui.widgets.event_log import EventLog
    from tests.tui.sample import ScreenApp, sample_data

    data = sample_data()
    view = DashboardView(id="dashboard")

    class Holder(Screen):
        def compose(self):
            yield view

    app = ScreenApp(Holder)
    async with app.run_test(size=(80, 24)) as pilot:
        view.show(data)
        await pilot.pause()
        call = CallInFlight(1, "best_response", 0.0, 100, True, tokens=3, text="class Policy: ...", first_token=1.0)
        view.show_llm(LLMActivity("llm", 3, (call,)))  # the reply takes the panel
        await pilot.pause()
        data.log = [*data.log, "#9 proposal_created: i1.1 llm-1 by llm"]
        view.show(data)
        await pilot.pause()
        view.show_llm(None)  # the reply is done: the events come back
        for _ in range(3):
            await pilot.pause()
        lines = [line.text for line in view.query_one(EventLog).lines]
    assert "#9 proposal_created: i1.1 llm-1 by llm" in " ".join(line.strip() for line in lines)
    assert sum(len(line) == 1 for line in lines) == 0


async def test_n_typed_while_a_new_llm_session_starts_is_kept_and_runs_once_it_is_ready(tmp_path, llm_server):  # noqa: F811
    """Issue 36: the first `n` ~1 s after an LLM dashboard appeared was ignored (its seeds were
    still being evaluated)."""
    from textual.widgets import Input, Select

    from csro_tui.tui.screens.dashboard import DashboardScreen
    from tests.tui.helpers import notifications, start_screen

    import threading

    release = threading.Event()

    class SlowStart(Backend):
        def start_run(self, *args, **kwargs):
            release.wait(30)  # the seeds take their time (as an LLM session's first second does)
            return super().start_run(*args, **kwargs)

    llm_server.script(f"Here it is.\n\n```python\n{KUHN_POLICY}```\n")
    app = CsroApp(sessions_dir=tmp_path, backend=SlowStart(tmp_path))
    async with app.run_test(size=(160, 48)) as pilot:
        await start_screen(pilot, app)
        app.screen.query_one("#oracle", Select).value = "llm"
        await pilot.pause()
        app.screen.query_one("#model", Input).value = "scripted-model"
        app.screen.query_one("#base-url", Input).value = llm_server.base_url
        await pilot.press("ctrl+n")
        await wait_until(pilot, lambda: isinstance(app.screen, DashboardScreen), "the dashboard")
        assert app._busy()  # the seeds are still being evaluated
        await pilot.press("n")
        await pilot.pause()
        assert any("will start once the session is ready" in n for n in notifications(app)), notifications(app)
        release.set()
        await wait_until(pilot, lambda: isinstance(app.screen, ReviewScreen), "the proposal of the n typed early")
        assert len(llm_server.chat_requests) == 1


async def test_the_live_dashboards_error_panel_says_n_resumes_here(tmp_path):
    """On the live dashboard `n` goes on after an error, so the panel says so (not "R on its
    timeline", the way from a recorded session); the CLI's way stays."""
    from csro_tui.tui.app import CsroApp
    from csro_tui.tui.backend import Backend
    from tests.fakes import ToyEvaluator, best_member_solve
    from csro_tui.tui.widgets.error_panel import ErrorPanel
    from tests.tui.helpers import start_screen
    from tests.tui.toy import ToySpec

    class Exploding:
        name = "scripted"

        def propose(self, context):
            raise RuntimeError("the oracle fell over")

    parts = {"spec": ToySpec(), "oracle": Exploding(), "evaluator": ToyEvaluator(), "meta_solve": best_member_solve}
    app = CsroApp(sessions_dir=tmp_path, backend=Backend(tmp_path, engine_parts=parts))
    async with app.run_test(size=(160, 48)) as pilot:
        await start_screen(pilot, app)
        await pilot.press("ctrl+n")
        await wait_until(pilot, lambda: app.live is not None and not app._busy(), "the session")
        await pilot.press("n")
        panel = app.dashboard.query_one(ErrorPanel)
        await wait_until(pilot, lambda: panel.display and "Resume" in str(panel.render()), "the error panel with its resume line")
        text = str(panel.render())
        assert "Resume: n here" in text and "csro run --resume" in text
        assert "R on its timeline" not in text
