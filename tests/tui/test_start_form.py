"""The start form: game strings checked as typed by the registry, seed policies,
the human oracle's file, and the LLM server's models listed on request."""

from __future__ import annotations

from textual.widgets import Input, Select, Static

from csro_tui.tui.model import LaunchOptions, StartChoices
from csro_tui.tui.screens.start import StartScreen
from tests.llm_server import ScriptedLLMServer, closed_port_url
from tests.tui.helpers import notifications, wait_until
from tests.tui.sample import CHOICES, ScreenApp



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
        app.screen.query_one("#oracle", Select).value = "seed"  # best-response cannot serve rrps (the next test)
        await pilot.pause()
        await pilot.press("ctrl+n")
        await pilot.pause()
    assert app.results == [
        LaunchOptions(game="rrps(num_repetitions=100)", oracle="seed", iterations=3, seed_policies=[seed])
    ]


async def test_an_oracle_that_cannot_serve_the_game_is_refused_under_its_field():
    """The best-response oracle needs an exact game (its declared needs): on a
    sampled one the form says so under the oracle, with what to use instead,
    and does not start (it used to fail three attempts, then close)."""
    app = ScreenApp(lambda: StartScreen(CHOICES, LaunchOptions()))
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_until(pilot, lambda: app.screen.checked_game == "kuhn_poker", "the default game checked")
        assert _error(app, "#oracle-error") == "" and not app.screen.query_one("#oracle-error").display
        await _type(pilot, app, "game", "goofspiel(num_cards=3)")
        said = " ".join(_error(app, "#oracle-error").split())
        assert "needs a game with exact evaluation (kuhn_poker, leduc_poker)" in said, said
        assert "use another oracle (" in said and app.screen.query_one("#oracle-error").display
        await pilot.press("ctrl+n")
        await pilot.pause()
        assert app.results == [] and any("The oracle:" in n for n in notifications(app))
        app.screen.query_one("#oracle", Select).value = "seed"
        await pilot.pause()
        assert _error(app, "#oracle-error") == ""
        await pilot.press("ctrl+n")
        await pilot.pause()
    assert [(r.game, r.oracle) for r in app.results] == [("goofspiel(num_cards=3)", "seed")]


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
            assert long_id in cells.replace("\n", "") and "stopped" in cells, size  # whole, over lines at 80
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


def _burst(app, *keys: str) -> None:
    """Keys as a terminal delivers a quick burst: all queued before the app handles the first."""
    from textual import events
    from textual.keys import _character_to_key

    for key in keys:
        character = key if len(key) == 1 else None
        name = _character_to_key(key) if character is not None and not key.isalnum() else key
        event = events.Key(name, character)
        event.set_sender(app)
        app._driver.send_message(event)  # noqa: SLF001 - what the driver does with a terminal's keys


async def test_a_burst_of_keys_into_the_game_field_keeps_their_order():
    """Issue 29, item 2: a bound key (ctrl+u, backspace, home, end, enter) ran only after
    bubbling up to the app, so in a burst it took effect after the characters typed after
    it: ctrl+u then `kuhn_poker(bogus=1)` left an empty field."""
    chosen: list = []
    app = ScreenApp(lambda: StartScreen(CHOICES, LaunchOptions(game="rrps(num_repetitions=100)"), on_choice=chosen.append))
    async with app.run_test(size=(80, 24)) as pilot:
        checked = lambda: getattr(app.screen_stack[-1] if app.screen_stack else None, "checked_game", None)  # noqa: E731
        await wait_until(pilot, lambda: checked() == "rrps(num_repetitions=100)", "the default game checked")
        game = app.screen.query_one("#game", Input)
        game.focus()
        await pilot.pause()

        async def typed(*keys: str) -> str:
            _burst(app, *keys)
            for _ in range(len(keys) + 5):  # every key handled (each takes a few message hops)
                await pilot.pause()
            await wait_until(pilot, lambda: checked() == game.value, "the field checked")
            return game.value

        assert await typed("ctrl+u", *"kuhn_poker(bogus=1)") == "kuhn_poker(bogus=1)"
        assert "unknown parameter" in _error(app)
        assert await typed("backspace", "backspace", *"2)", "home", "x", "end", "backspace", ")") == "xkuhn_poker(bogus=2)"
        _burst(app, "ctrl+u", *"rrps(num_repetitions=100)", "enter")
        await wait_until(pilot, lambda: chosen, "the session started")
    assert chosen[0].game == "rrps(num_repetitions=100)"


async def test_the_sessions_panel_is_half_the_screen_again_after_a_narrow_resize():
    """Issue 29, item 6: 160x48 -> 80x24 -> 160x48 left the sessions panel 46 columns wide."""
    from dataclasses import replace

    sessions = [(f"20261203-0950{i:02d}-kuhn_poker-seed", "completed · kuhn_poker · seed · nash · 3 iterations · 4 policies")
                for i in range(3)]
    app = ScreenApp(lambda: StartScreen(replace(CHOICES, sessions=sessions), LaunchOptions()))
    async with app.run_test(size=(160, 48)) as pilot:
        await wait_until(pilot, lambda: getattr(app.screen, "checked_game", None) == "kuhn_poker", "the form")
        panel = app.screen.query_one("#open-session")
        wide = panel.size.width
        await pilot.resize_terminal(80, 24)
        await pilot.pause()
        assert panel.size.width < wide
        await pilot.resize_terminal(160, 48)
        await pilot.pause()
        await pilot.pause()
        assert panel.size.width == wide
        [column] = app.screen.query_one("#session-list").ordered_columns
        assert column.width >= len(sessions[0][1])  # summaries whole again, not cut at 46 columns


def test_a_one_letter_game_is_not_answered_with_names_that_merely_contain_it():
    """Issue 29, item 10: typing `x` suggested coop_box_pushing, dark_hex, dark_hex_ir."""
    import pytest

    from csro_tui.tui.backend import Backend

    with pytest.raises(Exception) as one_letter:
        Backend.game_spec("x")
    assert "did you mean" not in str(one_letter.value) and "built-in games: rrps" in str(one_letter.value)
    with pytest.raises(Exception) as near:
        Backend.game_spec("lduc_poker")
    assert "did you mean leduc_poker" in str(near.value)


async def test_keys_typed_right_after_tab_reach_the_field_tab_moved_to(tmp_path):
    """Issue 29, item 2: keys after a tab went to the widget focused before it, because
    Textual runs the tab binding only once the key has bubbled back to the app."""
    from csro_tui.tui.app import CsroApp
    from tests.tui.helpers import start_screen

    app = CsroApp(sessions_dir=tmp_path)
    async with app.run_test(size=(160, 48)) as pilot:
        await start_screen(pilot, app)
        assert app.focused.id == "session-list"
        _burst(app, "tab", "tab", *"leduc_poker", "tab")  # the list, its button, Game (the form's panel is no stop)
        for _ in range(40):
            await pilot.pause()
        game = app.screen.query_one("#game", Input)
        await wait_until(pilot, lambda: app.screen.checked_game == "leduc_poker", "the game typed")
        assert game.value == "leduc_poker" and app.focused.id == "oracle"


async def test_tab_from_the_open_button_reaches_the_game_field_at_once():
    """The form's scrolling panel is no Tab stop of its own: it showed nothing and took no
    keys, so a newcomer's typing went nowhere (found driving it at 80x24)."""
    app = ScreenApp(lambda: StartScreen(CHOICES, LaunchOptions()))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        app.screen.query_one("#open-button").focus()
        await pilot.pause()
        await pilot.press("tab")
        await pilot.pause()
        assert app.focused is not None and app.focused.id == "game"


async def test_the_form_opens_at_its_top_with_the_sessions_list_focused(tmp_path):
    """With the panel no Tab stop, Textual's first focus went to the Game field and
    scrolled the form before its layout settled: at 80x24 Game was out of view."""
    from csro_tui.tui.app import CsroApp
    from tests.tui.helpers import start_screen

    app = CsroApp(sessions_dir=tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await start_screen(pilot, app)
        for _ in range(10):
            await pilot.pause()
        assert app.focused.id == "session-list"
        assert app.screen.query_one("#new-session").scroll_y == 0


LONG_ID = "20261202-203745-rrps_num_repetitions_100-best-response"


async def test_at_80x24_the_form_keeps_room_for_the_model_and_ids_stay_whole_over_lines():
    """Issue 36: at 80x24 with a long session id the form was 23 columns wide and the Model
    field showed 2 characters."""
    from dataclasses import replace

    from textual.widgets import DataTable

    choices = replace(CHOICES, sessions=[(LONG_ID, "stopped · rrps(num_repetitions=100) · best-response · nash")])
    app = ScreenApp(lambda: StartScreen(choices, LaunchOptions(oracle="llm")))
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_until(pilot, lambda: app.screen.checked_game == "kuhn_poker", "the form")
        await pilot.pause()
        assert app.screen.query_one("#new-session").size.width >= 40
        assert app.screen.query_one("#model", Input).size.width >= 20  # was 2
        table = app.screen.query_one("#session-list", DataTable)
        cell = str(table.get_row_at(0)[0])
        assert LONG_ID in cell.replace("\n", "") and "stopped" in cell
        assert table.virtual_size.width <= table.content_region.width


async def test_typing_in_a_start_form_field_lays_out_nothing():
    """Issue 36: every character typed re-laid out the whole form (Textual's Input sets its
    virtual size, a layout reactive, to its text's width), ~20 ms a key, and keys typed
    quickly went into the next field clicked.  bench/keystrokes.py measures the cost."""
    from textual.widget import Widget

    app = ScreenApp(lambda: StartScreen(CHOICES, LaunchOptions(oracle="llm")))
    layouts: list[str] = []
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_until(pilot, lambda: app.screen.checked_game == "kuhn_poker", "the form")
        model = app.screen.query_one("#model", Input)
        model.focus()
        await pilot.pause()
        original = Widget.refresh

        def refresh(widget, *regions, layout=False, **kwargs):
            if layout:
                layouts.append(f"{type(widget).__name__}#{widget.id}")
            return original(widget, *regions, layout=layout, **kwargs)

        Widget.refresh = refresh
        try:
            for character in "scripted-model":
                await pilot.press(character)
        finally:
            Widget.refresh = original
        assert model.value == "scripted-model"
    assert layouts == []


async def test_keys_at_20_a_second_stay_in_their_field_when_the_next_one_is_clicked():
    """Issue 36: text typed into one field went partly into the next one clicked."""
    import asyncio

    app = ScreenApp(lambda: StartScreen(CHOICES, LaunchOptions(oracle="llm")))
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_until(pilot, lambda: app.screen.checked_game == "kuhn_poker", "the form")
        await pilot.click("#model")
        await pilot.pause()

        async def type_at_20_a_second(text: str) -> None:
            for character in text:
                _burst(app, character)
                await asyncio.sleep(0.05)

        await type_at_20_a_second("scripted-model")
        await pilot.click("#base-url")  # at once, as a person moves on
        await type_at_20_a_second("http://127.0.0.1:9/v1")
        await wait_until(pilot, lambda: len(app.screen.query_one("#base-url", Input).value) >= 21, "the keys")
        assert app.screen.query_one("#model", Input).value == "scripted-model"
        assert app.screen.query_one("#base-url", Input).value == "http://127.0.0.1:9/v1"


async def test_ctrl_l_never_names_a_model_nobody_typed():
    """Issue 36: with no model typed, a server without /models (a base URL missing /v1) was
    answered with "check the model name 'gpt-4o-mini'": the client's default, never typed."""
    with ScriptedLLMServer(models=("qwen-small",)) as server:
        app = ScreenApp(lambda: StartScreen(CHOICES, LaunchOptions(oracle="llm")))
        async with app.run_test(size=(80, 24)) as pilot:
            await wait_until(pilot, lambda: app.screen.checked_game == "kuhn_poker", "the form")
            app.screen.query_one("#base-url", Input).value = server.base_url.removesuffix("/v1")  # no /models there
            await pilot.press("ctrl+l")
            await wait_until(pilot, lambda: _error(app, "#models-status").startswith("✗"), "the failure")
            status = _error(app, "#models-status")
            assert "gpt-4o-mini" not in status and "did not list its models" in status and "/v1" in status
            app.screen.query_one("#model", Input).value = "my-model"  # typed: the advice may name it
            await pilot.press("ctrl+l")
            await wait_until(pilot, lambda: "my-model" in _error(app, "#models-status"), "the failure naming it")
            assert app.screen.query_one("#model", Input).value == "my-model"


async def test_the_recorded_sessions_title_is_whole_at_80_columns(tmp_path):
    """At 80x24 the panel's title was cut to "Recorded sessions (enter op…"."""
    from csro_tui.tui.app import CsroApp
    from tests.tui.helpers import start_screen

    for size in ((80, 24), (160, 48)):
        app = CsroApp(sessions_dir=tmp_path)
        async with app.run_test(size=size) as pilot:
            await start_screen(pilot, app)
            await pilot.pause()
            panel = app.screen.query_one("#open-session")
            title = str(panel.border_title)
            assert "enter opens" in title
            assert len(title) + 4 <= panel.outer_size.width, (size, title, panel.outer_size.width)
