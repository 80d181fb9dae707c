"""Issue 35 in the TUI: the start form pre-filled from a csro.toml, its model list and a
resumed session send the key only to a base URL the user named (typed, or `csro tui --base-url`)."""

from __future__ import annotations

import pytest
from textual.widgets import Input, Select, Static

from csro_tui.cli import main
from csro_tui.config import load_run_config
from csro_tui.tui.app import CsroApp
from csro_tui.tui.backend import Backend
from csro_tui.tui.model import LaunchOptions
from tests.llm_server import ScriptedLLMServer
from tests.tui.helpers import notifications, start_screen, wait_until

pytestmark = pytest.mark.usefixtures("no_llm_env")
SECRET = "sk-issue35-tui"
ALWAYS_PAPER = ("Always paper.\n\n```python\nclass Policy:\n    def __init__(self, player, game):\n        pass\n\n"
                "    def act(self, obs):\n        return 1\n```\n")


@pytest.fixture
def server(monkeypatch, tmp_path):
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    with ScriptedLLMServer(api_key=SECRET) as scripted:
        yield scripted


def launch_from_file(tmp_path, monkeypatch, url: str) -> LaunchOptions:
    """What `csro tui` pre-fills the form with when ./csro.toml names `url`."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "csro.toml").write_text(f'oracle = "llm"\nmodel = "scripted-model"\nbase_url = "{url}"\n')
    return LaunchOptions.from_config(load_run_config({}))


async def test_a_prefilled_base_url_from_csro_toml_gets_no_key(tmp_path, monkeypatch, server):
    options = launch_from_file(tmp_path, monkeypatch, server.base_url)
    app = CsroApp(options, sessions_dir=tmp_path / "s", backend=Backend(tmp_path / "s"))
    async with app.run_test(size=(160, 48)) as pilot:
        await start_screen(pilot, app)
        form = app.screen
        assert form.query_one("#base-url", Input).value == server.base_url
        assert form.query_one("#oracle", Select).value == "llm"
        form.action_list_models()
        await wait_until(pilot, lambda: "not sending" in str(form.query_one("#models-status", Static).render()),
                         "the model list's refusal")
        await pilot.press("ctrl+n")
        await wait_until(pilot, lambda: any("not sending OPENAI_API_KEY" in n for n in notifications(app)),
                         "the start's refusal")
        refusal = next(n for n in notifications(app) if "not sending" in n)
        assert f"127.0.0.1:{server.port}" in refusal and "--trust-base-url" in refusal and "\n" not in refusal
    assert not any(request.authorized for request in server.requests)


async def test_a_base_url_typed_into_the_form_is_the_users(tmp_path, monkeypatch, server):
    options = launch_from_file(tmp_path, monkeypatch, "http://127.0.0.1:9/v1")
    app = CsroApp(options, sessions_dir=tmp_path / "s", backend=Backend(tmp_path / "s"))
    async with app.run_test(size=(160, 48)) as pilot:
        await start_screen(pilot, app)
        form = app.screen
        form.query_one("#base-url", Input).value = server.base_url
        form.action_list_models()
        await wait_until(pilot, lambda: "1 model" in str(form.query_one("#models-status", Static).render()),
                         "the model list")
    assert server.requests and all(request.authorized for request in server.requests)


async def test_the_files_base_url_typed_again_in_the_form_is_the_users(tmp_path, monkeypatch, server):
    """The refusal says "name it": in the form that is typing the URL, even the same one the
    file pre-filled (found by the newcomer: only quitting and relaunching with a flag helped)."""
    options = launch_from_file(tmp_path, monkeypatch, server.base_url)
    app = CsroApp(options, sessions_dir=tmp_path / "s", backend=Backend(tmp_path / "s"))
    async with app.run_test(size=(160, 48)) as pilot:
        await start_screen(pilot, app)
        form = app.screen
        field = form.query_one("#base-url", Input)
        field.focus()
        await pilot.pause()
        field.value = ""
        await pilot.press(*server.base_url)
        assert field.value == server.base_url
        form.action_list_models()
        await wait_until(pilot, lambda: "1 model" in str(form.query_one("#models-status", Static).render()),
                         "the model list")
    assert server.requests and all(request.authorized for request in server.requests)


def test_resuming_a_received_session_in_the_tui_needs_the_users_word(tmp_path, monkeypatch, server, capsys):
    monkeypatch.chdir(tmp_path)
    server.script(ALWAYS_PAPER)
    assert main(["run", "--game", "rrps(num_repetitions=50)", "--oracle", "llm", "--seeds", "constant_rock",
                 "--benchmark", "off", "--episodes", "2", "--smoke-episodes", "1", "--model", "scripted-model",
                 "--iterations", "1", "--review", "valid", "--base-url", server.base_url,
                 "--session-dir", str(tmp_path / "s")]) == 0, capsys.readouterr().err
    (session,) = [p.name for p in (tmp_path / "s").iterdir() if p.is_dir()]
    before = len(server.requests)
    with pytest.raises(Exception, match=f"not sending OPENAI_API_KEY to 127.0.0.1:{server.port}"):
        Backend(tmp_path / "s").resume_run(session, reviewer=None, on_event=lambda *a: None)
    assert len(server.requests) == before
