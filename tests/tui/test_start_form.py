"""The start form: game strings checked as typed by the registry, seed policies,
the human oracle's file, and the LLM server's models listed on request."""

from __future__ import annotations

from textual.widgets import Input, Select, Static

from csro_tui.tui.model import LaunchOptions, StartChoices
from csro_tui.tui.screens.start import StartScreen
from tests.llm_server import ScriptedLLMServer, closed_port_url
from tests.tui.helpers import notifications, wait_until
from tests.tui.sample import ScreenApp

CHOICES = StartChoices(
    games=["kuhn_poker", "leduc_poker", "rrps", "repeated_leduc"],
    oracles=["best-response", "seed", "human", "llm"],
    llm_oracles={"llm"},
    solvers=["nash", "uniform"],
)


def _error(app, selector: str = "#game-error") -> str:
    return str(app.screen.query_one(selector, Static).render())


async def _type(pilot, app, field: str, text: str) -> None:
    app.screen.query_one(f"#{field}", Input).value = text
    await wait_until(pilot, lambda: app.screen.checked_game == text or field != "game", f"{field} checked")
    await pilot.pause()


async def test_game_string_with_parameters_is_checked_as_typed():
    app = ScreenApp(lambda: StartScreen(CHOICES, LaunchOptions()))
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_until(pilot, lambda: app.screen.checked_game == "kuhn_poker", "the default game checked")
        assert _error(app) == ""
        await _type(pilot, app, "game", "kuhn_pokr")
        assert "did you mean kuhn_poker" in _error(app)
        await _type(pilot, app, "game", "rrps(num_repetitions=0)")
        assert "num_repetitions must be a positive integer" in _error(app)
        await pilot.press("ctrl+n")
        await pilot.pause()
        assert app.results == [] and any("The game:" in n for n in notifications(app))
        await _type(pilot, app, "game", "rrps(num_repetitions=100)")
        assert _error(app) == ""
        # the game's seed policies are offered, and a wrong one is named
        assert "seeds:" in _error(app, "#seed-note")
        app.screen.query_one("#seed-policies", Input).value = "nonesuch"
        await pilot.pause()
        assert "not a seed of this game: nonesuch" in _error(app, "#seed-note")
        seed = app.screen.seed_names[0]
        app.screen.query_one("#seed-policies", Input).value = seed
        app.screen.query_one("#iterations", Input).value = "3"
        await pilot.pause()
        await pilot.press("ctrl+n")
        await pilot.pause()
    assert app.results == [
        LaunchOptions(game="rrps(num_repetitions=100)", oracle="best-response", iterations=3, seed_policies=[seed])
    ]


async def test_the_human_oracle_asks_for_its_file(tmp_path):
    policy = tmp_path / "mine.py"
    policy.write_text("class Policy:\n    def __init__(self, player, game): pass\n    def act(self, obs): return 0\n")
    app = ScreenApp(lambda: StartScreen(CHOICES, LaunchOptions()))
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_until(pilot, lambda: app.screen.checked_game == "kuhn_poker", "the form")
        assert not app.screen.query_one("#human-fields").display
        app.screen.query_one("#oracle", Select).value = "human"
        await pilot.pause()
        assert app.screen.query_one("#human-fields").display
        app.screen.query_one("#human-file", Input).value = str(tmp_path / "missing.py")
        await wait_until(pilot, lambda: "no such file" in _error(app, "#human-error"), "the file checked")
        app.screen.query_one("#human-file", Input).value = str(policy)
        await wait_until(pilot, lambda: _error(app, "#human-error") == "", "the file found")
        await pilot.press("ctrl+n")
        await pilot.pause()
    assert app.results[0].human_file == str(policy)
    assert app.results[0].flags()["oracle_options"] == {"path": str(policy)}


async def test_list_models_asks_the_server():
    with ScriptedLLMServer(models=("qwen-small", "qwen-large")) as server:
        app = ScreenApp(lambda: StartScreen(CHOICES, LaunchOptions(oracle="llm")))
        async with app.run_test(size=(80, 24)) as pilot:
            await wait_until(pilot, lambda: app.screen.checked_game == "kuhn_poker", "the form")
            app.screen.query_one("#base-url", Input).value = server.base_url
            app.screen.action_list_models()
            await wait_until(pilot, lambda: "2 models on the server" in _error(app, "#models-status"), "the models")
            picker = app.screen.query_one("#model-list", Select)
            assert picker.display
            picker.value = "qwen-large"
            await pilot.pause()
            assert app.screen.query_one("#model", Input).value == "qwen-large"
            # a server that is not there: one line, nothing else changes
            app.screen.query_one("#base-url", Input).value = closed_port_url()
            app.screen.action_list_models()
            await wait_until(pilot, lambda: _error(app, "#models-status").startswith("✗"), "the failure")
            assert app.screen.query_one("#model", Input).value == "qwen-large"
        assert any(r.path.rstrip("/").endswith("/models") for r in server.requests)


async def test_recorded_sessions_show_whole_ids_and_their_status_at_80_and_160_columns():
    from dataclasses import replace

    from textual.widgets import DataTable, Footer

    long_id = "20261202-203745-rrps_num_repetitions_100-best-response"
    choices = replace(CHOICES, sessions=[(long_id, "stopped · rrps(num_repetitions=100) · best-response · nash · 1 iteration")])
    for size in ((80, 24), (160, 48)):
        app = ScreenApp(lambda: StartScreen(choices, LaunchOptions()))
        async with app.run_test(size=size) as pilot:
            await pilot.pause()
            table = app.screen.query_one("#session-list", DataTable)
            cells = "\n".join(str(cell) for cell in table.get_row_at(0))
            assert long_id in cells and "stopped" in cells, size
            assert table.virtual_size.width <= table.content_region.width, (size, table.virtual_size, table.content_region)
            assert isinstance(app.focused, DataTable)  # so ? below is help, and the footer offers it
            footer = [(key.key, key.description) for key in app.screen.query_one(Footer).query("FooterKey")]
            assert ("question_mark", "Help") in footer, footer


async def test_the_ray_backend_is_chosen_on_the_form_with_its_address():
    app = ScreenApp(lambda: StartScreen(CHOICES, LaunchOptions()))
    async with app.run_test(size=(160, 48)) as pilot:
        await wait_until(pilot, lambda: app.screen.checked_game == "kuhn_poker", "the default game checked")
        assert not app.screen.query_one("#ray-fields").display  # local: no address to ask for
        app.screen.query_one("#eval-backend", Select).value = "ray"
        await pilot.pause()
        assert app.screen.query_one("#ray-fields").display
        app.screen.query_one("#ray-address", Input).value = "10.0.0.5:6379"
        await pilot.pause()
        await pilot.press("ctrl+n")
        await pilot.pause()
    assert app.results == [
        LaunchOptions(game="kuhn_poker", oracle="best-response", backend="ray", ray_address="10.0.0.5:6379")
    ]


async def test_the_time_budgets_are_set_on_the_form():
    app = ScreenApp(lambda: StartScreen(CHOICES, LaunchOptions(budget_reserve=3.0)))
    async with app.run_test(size=(160, 48)) as pilot:
        await wait_until(pilot, lambda: app.screen.checked_game == "kuhn_poker", "the default game checked")
        assert app.screen.query_one("#budget-reserve", Input).value == "3"  # the configured value shows
        app.screen.query_one("#move-budget", Input).value = "-1"
        await pilot.pause()
        await pilot.press("ctrl+n")
        await pilot.pause()
        assert app.results == [] and any("move_budget must be a positive number" in n for n in notifications(app))
        app.screen.query_one("#move-budget", Input).value = "0.05"
        await pilot.pause()
        await pilot.press("ctrl+n")
        await pilot.pause()
    assert app.results == [LaunchOptions(game="kuhn_poker", oracle="best-response", move_budget=0.05, budget_reserve=3.0)]
    assert app.results[0].flags()["move_budget"] == 0.05
