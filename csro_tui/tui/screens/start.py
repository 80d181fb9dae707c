"""Start: a new session (game, oracle, meta-solver, budget, seed) or a recorded one."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import Screen
from textual.widgets import Button, DataTable, Footer, Input, Label, Select

from csro_tui.tui.model import LaunchOptions, StartChoices
from csro_tui.tui.widgets.title_header import TitleHeader


@dataclass(frozen=True)
class OpenSession:
    session_id: str


def _select(options: list[str], value: str | None, id: str) -> Select:
    items = [(o, o) for o in options]
    if value is not None and value not in options:
        items.insert(0, (value, value))
    return Select(items, value=value if value is not None else Select.BLANK, allow_blank=value is None, id=id)


class StartScreen(Screen[LaunchOptions | OpenSession]):
    BINDINGS = [
        Binding("ctrl+n", "start", "Start session", id="start.start"),
        Binding("ctrl+o", "open", "Open selected", id="start.open"),
        Binding("question_mark", "app.help", "Help", id="start.help"),
    ]

    def __init__(
        self,
        choices: StartChoices,
        defaults: LaunchOptions | None = None,
        *,
        on_choice: Callable[[LaunchOptions | OpenSession], None] | None = None,
    ) -> None:
        super().__init__()
        self.choices = choices
        self.defaults = defaults or LaunchOptions()
        # with on_choice the screen stays (the app opens the choice over it); without, it is dismissed
        self.on_choice = on_choice
        self._ready = False

    def _choose(self, result: LaunchOptions | OpenSession) -> None:
        if self.on_choice is None:
            self.dismiss(result)
        else:
            self.on_choice(result)

    def update_choices(self, choices: StartChoices) -> None:
        """New recorded sessions (e.g. after one was closed): refresh the list."""
        self.choices = choices
        table = self.query_one("#session-list", DataTable)
        table.clear()
        for session_id, summary in choices.sessions:
            table.add_row(session_id, summary, key=session_id)

    def compose(self) -> ComposeResult:
        d = self.defaults
        yield TitleHeader()
        with Horizontal(id="start"):
            with VerticalScroll(id="new-session", classes="panel") as new:
                new.border_title = "New session"
                yield Label("Game", classes="field-label")
                yield _select(self.choices.games, d.game, "game")
                yield Label("Oracle", classes="field-label")
                yield _select(self.choices.oracles, d.oracle, "oracle")
                with Vertical(id="llm-fields"):
                    yield Label("Model", classes="field-label")
                    yield Input(d.model or "", placeholder="model name", id="model")
                    yield Label("Base URL (OpenAI-compatible; empty for the default)", classes="field-label")
                    yield Input(d.base_url or "", placeholder="https://…/v1", id="base-url")
                yield Label("Meta-solver", classes="field-label")
                yield _select(self.choices.solvers, d.meta_solver, "solver")
                yield Label("Evaluation budget (episodes per matchup; empty: the game's default)", classes="field-label")
                yield Input(str(d.episodes) if d.episodes else "", type="integer", id="episodes")
                yield Label("Seed", classes="field-label")
                yield Input(str(d.seed), type="integer", id="seed")
                with Horizontal(id="start-buttons"):
                    yield Button("Start", variant="primary", id="start-button")
            with Vertical(id="open-session", classes="panel") as old:
                old.border_title = "Recorded sessions"
                table: DataTable = DataTable(cursor_type="row", id="session-list")
                yield table
                with Horizontal(id="start-buttons"):
                    yield Button("Open", id="open-button")
        yield Footer()

    def on_mount(self) -> None:
        table = self.query_one("#session-list", DataTable)
        table.add_columns("session", "summary")
        for session_id, summary in self.choices.sessions:
            table.add_row(session_id, summary, key=session_id)
        self._toggle_llm_fields()
        self.query_one("#game", Select).focus()
        # leaving before the form has settled trips textual's Select mid-mount
        self.call_after_refresh(setattr, self, "_ready", True)

    def on_select_changed(self, event: Select.Changed) -> None:
        if event.select.id == "oracle":
            self._toggle_llm_fields()

    def _toggle_llm_fields(self) -> None:
        oracle = self.query_one("#oracle", Select).value
        self.query_one("#llm-fields").set_class(oracle not in self.choices.llm_oracles, "hidden")

    def options(self) -> LaunchOptions | None:
        """The form as LaunchOptions, or None (after a notification) if incomplete."""
        values = {}
        for name in ("game", "oracle", "solver"):
            value = self.query_one(f"#{name}", Select).value
            if value is Select.BLANK:
                self.notify(f"Choose a {name}.", severity="error")
                return None
            values[name] = str(value)
        episodes_text = self.query_one("#episodes", Input).value.strip()
        seed_text = self.query_one("#seed", Input).value.strip() or "0"
        try:
            episodes = int(episodes_text) if episodes_text else None
            seed = int(seed_text)
        except ValueError:
            self.notify("Episodes and seed must be whole numbers.", severity="error")
            return None
        if episodes is not None and episodes <= 0:
            self.notify("The evaluation budget must be at least one episode.", severity="error")
            return None
        llm = values["oracle"] in self.choices.llm_oracles
        model = self.query_one("#model", Input).value.strip() or None
        base_url = self.query_one("#base-url", Input).value.strip() or None
        return LaunchOptions(
            game=values["game"],
            oracle=values["oracle"],
            model=model if llm else None,
            base_url=base_url if llm else None,
            meta_solver=values["solver"],
            episodes=episodes,
            seed=seed,
        )

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "start-button":
            self.action_start()
        elif event.button.id == "open-button":
            self.action_open()

    def action_start(self) -> None:
        if not self._ready:
            return
        options = self.options()
        if options is not None:
            self._choose(options)

    def action_open(self) -> None:
        if not self._ready:
            return
        table = self.query_one("#session-list", DataTable)
        if not table.row_count:
            self.notify("No recorded sessions yet.", severity="warning")
            return
        key = table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value
        if key is not None:
            self._choose(OpenSession(key))

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        if self._ready and event.data_table.id == "session-list" and event.row_key.value is not None:
            self._choose(OpenSession(event.row_key.value))
