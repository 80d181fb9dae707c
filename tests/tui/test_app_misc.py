"""Start form, help, command palette and the $EDITOR path."""

from __future__ import annotations

import contextlib
import sys

from textual.widgets import Input, Markdown, Select

from csro_tui.sandbox.contract import POLICY_CONTRACT
from csro_tui.tui.model import LaunchOptions, ReviewDecision, StartChoices
from csro_tui.tui.screens.dashboard import DashboardScreen
from csro_tui.tui.screens.help import HelpScreen
from csro_tui.tui.screens.review import ReviewScreen
from csro_tui.tui.screens.start import StartScreen
from tests.tui.helpers import notifications, start_screen
from tests.tui.sample import ScreenApp, sample_data, sample_review

CHOICES = StartChoices(
    games=["kuhn_poker", "rrps"], oracles=["best-response", "seed", "llm"], llm_oracles={"llm"}, solvers=["nash", "uniform"]
)


async def test_start_form_llm_fields_and_validation():
    app = ScreenApp(lambda: StartScreen(CHOICES, LaunchOptions()))
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        screen = app.screen
        llm_fields = screen.query_one("#llm-fields")
        assert not llm_fields.display  # best-response: no model or URL
        screen.query_one("#oracle", Select).value = "llm"
        await pilot.pause()
        assert llm_fields.display
        screen.query_one("#model", Input).value = "qwen-small"
        screen.query_one("#base-url", Input).value = "http://127.0.0.1:8000/v1"
        screen.query_one("#game", Input).value = "rrps"
        screen.query_one("#episodes", Input).value = "0"
        await pilot.press("ctrl+n")
        await pilot.pause()
        assert app.results == []
        assert "The evaluation budget must be at least one episode." in notifications(app)
        screen.query_one("#episodes", Input).value = "20"
        screen.query_one("#seed", Input).value = "7"
        await pilot.press("ctrl+n")
        await pilot.pause()
    assert app.results == [
        LaunchOptions(
            game="rrps",
            oracle="llm",
            model="qwen-small",
            base_url="http://127.0.0.1:8000/v1",
            meta_solver="nash",
            episodes=20,
            seed=7,
        )
    ]


async def test_help_shows_the_policy_contract_and_keys():
    app = ScreenApp(lambda: DashboardScreen(sample_data()))
    app.action_help = lambda: app.push_screen(HelpScreen(app.screen))  # what CsroApp does
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        source = app.screen.query_one(Markdown).source
        assert POLICY_CONTRACT in source
        assert "| review | `r` | reject it, with a reason (recorded; LLM oracles get it in their next prompt) |" in source
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(app.screen, DashboardScreen)


async def test_palette_offers_the_app_commands(tmp_path):
    from csro_tui.tui.app import CsroApp

    app = CsroApp(sessions_dir=tmp_path)
    async with app.run_test(size=(160, 48)) as pilot:
        await start_screen(pilot, app)
        titles = [c.title for c in app.get_system_commands(app.screen)]
        assert "Help" in titles and "Sessions" in titles
        assert "Next iteration" not in titles  # only once a session is live
        app.live = object()
        app.options = LaunchOptions(game="kuhn_poker")
        titles = [c.title for c in app.get_system_commands(app.screen)]
        assert {"Next iteration", "Run 5 iterations", "Cancel work", "Play", "Close session"} <= set(titles)
        app.live = None
        # every key of the screen is there by its name, and the screens' moves
        assert {"Start session", "Open selected", "Start screen", "Open session", "Export session"} <= set(titles)


async def test_edit_in_editor_sends_what_the_editor_saved(tmp_path, monkeypatch):
    script = tmp_path / "fake_editor.py"
    script.write_text("import sys\nopen(sys.argv[1], 'a').write('# edited outside\\n')\n")
    monkeypatch.setenv("EDITOR", f"{sys.executable} {script}")
    monkeypatch.delenv("VISUAL", raising=False)
    app = ScreenApp(lambda: ReviewScreen(sample_review()))
    app.suspend = contextlib.nullcontext  # the headless test driver cannot suspend
    async with app.run_test() as pilot:
        await pilot.press("E")
        await pilot.pause()
    assert app.results == [ReviewDecision("edit", source=sample_review().source + "# edited outside\n")]


async def test_edit_in_editor_without_editor_is_a_notification(monkeypatch):
    monkeypatch.delenv("EDITOR", raising=False)
    monkeypatch.delenv("VISUAL", raising=False)
    app = ScreenApp(lambda: ReviewScreen(sample_review()))
    async with app.run_test() as pilot:
        await pilot.press("E")
        await pilot.pause()
        assert isinstance(app.screen, ReviewScreen)
        assert any("Set $EDITOR" in n for n in notifications(app))


def test_tui_command_passes_flags_to_the_app(tmp_path, monkeypatch):
    from csro_tui import cli
    from csro_tui.tui.app import CsroApp

    seen = []
    monkeypatch.setattr(CsroApp, "run", lambda self: seen.append(self))
    for name in ("CSRO_GAME", "CSRO_ORACLE", "CSRO_CONFIG", "CSRO_SEED"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)  # no csro.toml here
    assert cli.main(["tui", "--game", "rrps(num_repetitions=5)", "--oracle", "seed", "--seed", "3",
                     "--sessions-dir", str(tmp_path)]) == 0
    assert cli.main([]) == 0  # `csro` alone opens the start screen
    from tests.tui.sample import record_sample_session

    record_sample_session(tmp_path, "some-session")  # `csro tui ID` now refuses an id it cannot find
    assert cli.main(["tui", "some-session", "--sessions-dir", str(tmp_path)]) == 0
    direct, plain, recorded = seen
    assert not direct.show_start
    assert (direct.options.game, direct.options.oracle, direct.options.seed) == ("rrps(num_repetitions=5)", "seed", 3)
    assert str(direct.backend.store.root) == str(tmp_path)
    assert plain.show_start and plain.options.game == "kuhn_poker" and plain.options.oracle == "best-response"
    assert recorded.open_session_id == "some-session"


async def test_a_session_that_cannot_start_returns_to_the_form(tmp_path):
    from csro_tui.tui.app import CsroApp
    from tests.tui.helpers import wait_until

    app = CsroApp(LaunchOptions(game="no_such_game"), sessions_dir=tmp_path, show_start=False)
    async with app.run_test(size=(160, 48)) as pilot:
        await wait_until(pilot, lambda: isinstance(app.screen, StartScreen), "the start form")
        assert any("no_such_game" in n for n in notifications(app))
        assert app.live is None
        await start_screen(pilot, app)


def _suspend_like_textual(restored: list):
    """App.suspend as Textual writes it: the terminal is given back to the app only
    when the block ends normally (an exception inside left the screen blank)."""

    @contextlib.contextmanager
    def suspend():
        yield
        restored.append(True)

    return suspend


async def test_an_editor_that_cannot_start_gives_the_screen_back_with_one_line(tmp_path, monkeypatch):
    """Issue 29, item 1: a missing $EDITOR raised inside app.suspend(): blank terminal, no exit."""
    monkeypatch.setenv("EDITOR", str(tmp_path / "no-such-editor") + " --wait")
    monkeypatch.delenv("VISUAL", raising=False)
    restored: list = []
    app = ScreenApp(lambda: ReviewScreen(sample_review()))
    app.suspend = _suspend_like_textual(restored)
    async with app.run_test() as pilot:
        await pilot.press("E")
        await pilot.pause()
        assert restored == [True]
        assert isinstance(app.screen, ReviewScreen) and app.results == []
        [message] = [n for n in notifications(app) if "editor" in n]
        assert "The editor could not run" in message and "no-such-editor" in message
        assert "$EDITOR" in message and "press e for the built-in one" in message
        # an editor that fails (exit status 3) leaves the proposal as it was, and says so
        script = tmp_path / "failing_editor.py"
        script.write_text("import sys\nopen(sys.argv[1], 'a').write('# half an edit\\n')\nsys.exit(3)\n")
        monkeypatch.setenv("EDITOR", f"{sys.executable} {script}")
        await pilot.press("E")
        await pilot.pause()
        assert restored == [True, True] and app.results == []
        assert any("exited with status 3" in n for n in notifications(app))
