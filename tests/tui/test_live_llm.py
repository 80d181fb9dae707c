"""An LLM oracle chosen on the start form, against a scripted local OpenAI-compatible server."""

from __future__ import annotations


import pytest
from textual.widgets import Input, Select, Static, TabbedContent

from csro_tui.sessions.state import fold
from csro_tui.tui.app import CsroApp
from csro_tui.tui.backend import Backend
from csro_tui.tui.screens.dashboard import DashboardScreen
from csro_tui.tui.screens.review import ReviewScreen
from tests.llm_server import llm_server  # noqa: F401 - fixture
from tests.tui.helpers import start_screen, wait_until
from tests.tui.sample import KUHN_POLICY

# The developer's own key, endpoint or LLM settings never leak in (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("no_llm_env")


async def test_llm_oracle_from_the_start_form_shows_its_exchange(tmp_path, llm_server):  # noqa: F811
    llm_server.script(f"Bet with the king, otherwise check or fold.\n\n```python\n{KUHN_POLICY}```\n")
    app = CsroApp(sessions_dir=tmp_path, backend=Backend(tmp_path))
    async with app.run_test(size=(160, 48)) as pilot:
        await start_screen(pilot, app)
        form = app.screen
        form.query_one("#oracle", Select).value = "llm"
        await pilot.pause()
        form.query_one("#model", Input).value = "scripted-model"
        form.query_one("#base-url", Input).value = llm_server.base_url
        await pilot.press("ctrl+n")
        await wait_until(pilot, lambda: app.live is not None and not app._busy(), "the seeds")
        await pilot.press("n")
        await wait_until(pilot, lambda: isinstance(app.screen, ReviewScreen), "the review")
        info = app.screen.info
        assert info.oracle == "llm" and info.valid
        assert info.source.strip() == KUHN_POLICY.strip()
        assert len(info.llm_calls) == 1
        await pilot.press("4")
        assert app.screen.query_one(TabbedContent).active == "tab-llm"
        exchange = str(app.screen.query_one("#review-llm", Static).render())
        assert "scripted-model" in exchange and "Bet with the king" in exchange
        assert "[system]" in exchange and "[user]" in exchange
        assert len(llm_server.chat_requests) == 1
        await pilot.press("a")
        await wait_until(pilot, lambda: isinstance(app.screen, DashboardScreen) and not app._busy(), "the engine")
        status = str(app.screen.query_one("#status", Static).render())
        assert "LLM calls 1" in status and "tokens 0" not in status
        session_id = app.live.session_id
    state = fold(Backend(tmp_path).read_events(session_id))
    assert state.started.model == "scripted-model" and state.started.oracle == "llm"
    assert state.population[-1].origin == "llm"
