"""Start: a new session (game string, oracle, meta-solver, budget, seeds, LLM) or a recorded one.

The game is a game string with parameters (`rrps(num_repetitions=100)`,
`goofspiel(num_cards=4)`), checked as it is typed by the games registry's own
parser in a worker; its error (with the registry's "did you mean") is shown
under the field.  The LLM fields list the server's models on request
(GET /models through the OpenAI client, in a worker).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.css.query import NoMatches
from textual.screen import Screen
from textual.suggester import SuggestFromList
from textual.widgets import Button, DataTable, Footer, Input, Label, Select, Static
from textual.worker import get_current_worker

from csro_tui.config import BACKENDS
from csro_tui.oracles.llm.keys import KeyTrust
from csro_tui.text import one_line
from csro_tui.tui.model import LaunchOptions, StartChoices
from csro_tui.tui.widgets.measured_table import MeasuredTable
from csro_tui.tui.widgets.ordered_input import OrderedInput
from csro_tui.tui.widgets.title_header import TitleHeader

NARROW_BELOW = 120  # terminal columns: the app's "-narrow" breakpoint
SESSIONS_TITLE = "Recorded sessions (enter opens)"
# Columns the form keeps beside the sessions list on a narrow terminal: at 80x24 a long
# session id took all but 23, and the Model field showed two characters.
FORM_MIN_WIDTH = 42
POPULATIONS = ("1", "2")  # RunConfig.populations: one population for both seats, or one per seat (issue 23)
GAME_EXAMPLES = ["rrps(num_repetitions=100)", "repeated_leduc(num_hands=10)", "goofspiel(num_cards=4)"]


@dataclass(frozen=True)
class OpenSession:
    session_id: str


def _select(options: list[str], value: str | None, id: str) -> Select:
    items = [(o, o) for o in options]
    if value is not None and value not in options:
        items.insert(0, (value, value))
    return Select(items, value=value if value is not None else Select.BLANK, allow_blank=value is None, id=id, compact=True)


def wrapped_id(session_id: str, width: int) -> list[str]:
    """A session id whole, in lines of at most `width`, broken after a `-` where it can be."""
    width = max(width, 1)
    lines: list[str] = []
    line = ""
    for piece in re.findall(r"[^-]*-|[^-]+$", session_id):  # each part with its dash
        if line and len(line) + len(piece) > width:
            lines.append(line)
            line = ""
        line += piece
        while len(line) > width:
            lines.append(line[:width])
            line = line[width:]
    return lines + ([line] if line else [])


def show_line(widget: Static, text: str, *, hide: bool = True) -> None:
    """A field's note or error: changed only when it changes (a Static's update, or a display
    set, re-lays out the whole form: once per keystroke in the Game field); `hide`: hidden
    while empty."""
    if str(widget.content) != text:
        widget.update(text)
    if hide and widget.display != bool(text):
        widget.display = bool(text)


def _backend():
    from csro_tui.tui.backend import Backend  # start-up time: importing it loads numpy

    return Backend


class StartScreen(Screen[LaunchOptions | OpenSession]):
    # Textual's first focus would go to the Game field and scroll the form before the
    # layout settles (Game then hidden at 80x24); the sessions list is where it belongs.
    AUTO_FOCUS = "#session-list"
    BINDINGS = [
        Binding("ctrl+n", "start", "Start session", id="start.start"),
        Binding("ctrl+o", "open", "Open selected", id="start.open"),
        Binding("ctrl+l", "list_models", "List models", id="start.models", show=False),
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
        self._base_url_typed = False  # the Base URL field typed into by the person (issue 35: theirs)
        # the engine's refusal of two populations, with the (populations, oracle, solver) it was given
        self.populations_error: tuple[tuple[int, str, str] | None, str] | None = None
        self.game_error: str | None = None  # the registry's reason, while the game string is wrong
        self.oracle_refusals: dict[str, str] = {}  # oracle -> why it cannot serve the game last checked
        self.checked_game: str | None = None  # the last game string checked (valid or not)
        self.seed_names: list[str] = []
        self._listed_narrow: bool | None = None  # how the sessions list was last laid out

    def _choose(self, result: LaunchOptions | OpenSession) -> None:
        if self.on_choice is None:
            self.dismiss(result)
        else:
            self.on_choice(result)

    def update_choices(self, choices: StartChoices) -> None:
        """New recorded sessions (e.g. after one was closed): refresh the list."""
        self.choices = choices
        try:
            self.query_one("#session-list", DataTable)
        except NoMatches:
            return  # not composed yet: on_mount lists self.choices
        self._list_sessions()

    def _list_sessions(self) -> None:
        """Every id whole: when it fits, the id then its summary (status first) on one row;
        otherwise (80 columns) one row of two lines per session, the id over its summary."""
        table = self.query_one("#session-list", DataTable)
        narrow = self.app.size.width < NARROW_BELOW
        rows = [(one_line(session_id), one_line(summary), session_id) for session_id, summary in self.choices.sessions]
        id_width = max([len("session · status"), *(len(i) for i, _, _ in rows)])
        summary_width = max([0, *(len(summary) for _, summary, _ in rows)])
        panel = self.app.size.width // 2 - 4  # the sessions panel's inside, beside the form
        if narrow:  # half the screen, or the longest id's width; the form keeps FORM_MIN_WIDTH columns
            panel = max(min(max(id_width + 4, panel), self.app.size.width - FORM_MIN_WIDTH - 8), 12)
            self.query_one("#open-session").styles.width = panel + 4
        # the title whole in its border (80 columns cut the long one to "Recorded sessions (enter op…")
        self.query_one("#open-session").border_title = SESSIONS_TITLE if len(SESSIONS_TITLE) <= panel else "Sessions (enter opens)"
        if not narrow:  # wide again after a resize: back to the stylesheet's half
            self.query_one("#open-session").styles.width = None
        two_lines = narrow or id_width + summary_width + 4 > panel
        selected = table.cursor_row
        table.clear(columns=True)
        self._listed_narrow = narrow
        if two_lines:
            width = max(panel - 2, len("session · status"))
            table.add_column("session · status", key="session", width=width)
            for shown_id, summary, key in rows:
                id_lines = wrapped_id(shown_id, width)  # whole, over as many lines as it needs
                table.add_row(Text("\n".join(id_lines), style="bold") + Text("\n" + one_line(summary, width), no_wrap=True),
                              key=key, height=len(id_lines) + 1)
        else:
            table.add_column("session", key="session")
            table.add_column("summary", key="summary")
            for shown_id, summary, key in rows:
                table.add_row(shown_id, summary, key=key)
        if table.row_count:
            table.move_cursor(row=min(selected, table.row_count - 1))

    def on_resize(self) -> None:
        if self._listed_narrow is not None:
            self._list_sessions()

    def compose(self) -> ComposeResult:
        d = self.defaults
        yield TitleHeader()
        with Horizontal(id="start"):
            with VerticalScroll(id="new-session", classes="panel") as new:
                new.border_title = "New session"
                new.can_focus = False  # a Tab stop that shows nothing and takes no keys; fields scroll it into view
                yield Label("Game: name or name(key=value,…)", classes="field-label")
                yield OrderedInput(
                    d.game,
                    placeholder="kuhn_poker, rrps(num_repetitions=100), …",
                    suggester=SuggestFromList([*self.choices.games, *GAME_EXAMPLES], case_sensitive=False),
                    id="game",
                    compact=True,
                )
                yield Static("", id="game-error", classes="field-error")
                yield Label("Oracle", classes="field-label")
                yield _select(self.choices.oracles, d.oracle, "oracle")
                yield Static("", id="oracle-error", classes="field-error")
                with Vertical(id="llm-fields"):
                    yield Label("LLM base URL (empty: OpenAI)", classes="field-label")
                    yield OrderedInput(d.base_url or "", placeholder="http://127.0.0.1:11434/v1", id="base-url", compact=True)
                    yield Label("Model", classes="field-label")
                    with Horizontal(classes="field-row"):
                        yield OrderedInput(d.model or "", placeholder="model name", id="model", compact=True)
                        yield Button("List models", id="list-models", compact=True)
                    yield Select([], prompt="models on the server", allow_blank=True, id="model-list", compact=True)
                    yield Static("", id="models-status", classes="field-note")
                with Vertical(id="human-fields"):
                    yield Label("Policy file (proposed each iteration)", classes="field-label")
                    yield OrderedInput(d.human_file or "", placeholder="path/to/my_policy.py", id="human-file", compact=True)
                    yield Static("", id="human-error", classes="field-error")
                yield Label("Meta-solver", classes="field-label")
                yield _select(self.choices.solvers, d.meta_solver, "solver")
                yield Label("Populations (2: one per seat)", classes="field-label")
                yield _select(list(POPULATIONS), str(d.populations), "populations")
                yield Static("", id="populations-error", classes="field-error")
                yield Label("Iterations now (empty: one by one)", classes="field-label")
                yield OrderedInput(str(d.iterations) if d.iterations else "", type="integer", id="iterations", compact=True)
                yield Label("Seed policies (comma-separated)", classes="field-label")
                yield OrderedInput(", ".join(d.seed_policies), placeholder="", id="seed-policies", compact=True)
                yield Static("", id="seed-note", classes="field-note")
                yield Label("Episodes per matchup (empty: auto)", classes="field-label")
                yield OrderedInput(str(d.episodes) if d.episodes else "", type="integer", id="episodes", compact=True)
                yield Label("Seed", classes="field-label")
                yield OrderedInput("" if d.seed is None else str(d.seed), placeholder="empty: a fresh secret seed", type="integer", id="seed", compact=True)
                for field_id, label, value in (
                    ("move-budget", "Time budget per decision, s (move_budget; empty: 0.02)", d.move_budget),
                    ("budget-reserve", "Time reserve, s (budget_reserve; empty: 2)", d.budget_reserve),
                    ("init-budget", "Set-up time per episode, s (init_budget; empty: 0.2)", d.init_budget),
                ):
                    yield Label(label, classes="field-label")
                    yield OrderedInput("" if value is None else f"{value:g}", type="number", id=field_id, compact=True)
                yield Label("Evaluation backend", classes="field-label")
                yield _select(list(BACKENDS), d.backend, "eval-backend")
                with Vertical(id="ray-fields"):
                    yield Label("Ray address (empty: $RAY_ADDRESS or a Ray started here)", classes="field-label")
                    yield OrderedInput(d.ray_address, placeholder="HEAD_IP:6379", id="ray-address", compact=True)
                with Horizontal(classes="start-buttons"):
                    yield Button("Start (ctrl+n)", variant="primary", id="start-button")
            with Vertical(id="open-session", classes="panel") as old:
                old.border_title = SESSIONS_TITLE
                table: DataTable = MeasuredTable(cursor_type="row", id="session-list")
                yield table
                with Horizontal(classes="start-buttons"):
                    yield Button("Open (ctrl+o)", id="open-button")
        yield Footer()

    def on_mount(self) -> None:
        self._list_sessions()
        self.query_one("#model-list", Select).display = False
        self.query_one("#populations-error", Static).display = False
        self.check_populations(self._populations_choice())
        self._toggle_oracle_fields()
        self._toggle_backend_fields()
        self._focus_sessions()
        self.check_game(self.query_one("#game", Input).value)
        # leaving before the form has settled trips textual's Select mid-mount
        self.call_after_refresh(setattr, self, "_ready", True)

    def on_screen_resume(self) -> None:
        self._focus_sessions()

    def _focus_sessions(self) -> None:
        """Shown or shown again: focus on the sessions list, not a text field (where `?` or `n` would be typed)."""
        self.query_one("#session-list", DataTable).focus()

    # ------------------------------------------------------------------ checks as you type
    def on_input_changed(self, event: Input.Changed) -> None:
        if event.input.id == "base-url" and event.input.has_focus:
            # typed by the person (the pre-fill happens before any focus): theirs, even when it is
            # the file's URL typed again - the way a refusal's "name it" is answered in the form
            self._base_url_typed = True
        if event.input.id == "game":
            self.check_game(event.value)
        elif event.input.id == "human-file":
            self.check_human_file(event.value)
        elif event.input.id == "seed-policies":
            self._show_seed_note()

    @work(thread=True, exclusive=True, group="check-game")
    def check_game(self, text: str) -> None:
        """The registry parses the string (an OpenSpiel load for other games): off the event loop."""
        refusals: dict[str, str] = {}
        try:
            spec = _backend().game_spec(text)
            names = _backend().seed_names(text)
            refusals = _backend().oracle_refusals(spec)
            error = None
        except Exception as failure:  # noqa: BLE001 - UnknownGameError, or OpenSpiel's own
            names, error = [], one_line(failure, 400)
        if not get_current_worker().is_cancelled:
            self.app.call_from_thread(self._game_checked, text, error, names, refusals)

    def _game_checked(self, text: str, error: str | None, names: list[str], refusals: dict[str, str]) -> None:
        if text != self.query_one("#game", Input).value:
            return  # typed on since
        self.checked_game, self.game_error = text, error
        self.oracle_refusals = refusals
        self._show_oracle_error()
        self.seed_names = names
        show_line(self.query_one("#game-error", Static), f"✗ {error}" if error else "")
        self.query_one("#game", Input).set_class(error is not None, "-invalid")
        self._show_seed_note()

    def _show_seed_note(self) -> None:
        note = self.query_one("#seed-note", Static)
        if not self.seed_names:
            show_line(note, "", hide=False)
            return
        wanted = [n.strip() for n in self.query_one("#seed-policies", Input).value.split(",") if n.strip()]
        unknown = [n for n in wanted if n not in self.seed_names]
        if unknown:
            show_line(note, f"✗ not a seed of this game: {', '.join(unknown)}. Seeds: {', '.join(self.seed_names)}")
        else:
            show_line(note, f"seeds: {', '.join(self.seed_names)}")
        note.set_class(bool(unknown), "field-error")

    @work(thread=True, exclusive=True, group="check-file")
    def check_human_file(self, text: str) -> None:
        path = Path(text.strip()).expanduser() if text.strip() else None
        error = None
        if path is None:
            error = "the human oracle needs a policy file"
        elif not path.is_file():
            error = f"no such file: {path}"
        self.app.call_from_thread(self._human_checked, text, error)

    def _human_checked(self, text: str, error: str | None) -> None:
        if text == self.query_one("#human-file", Input).value:
            show_line(self.query_one("#human-error", Static), f"✗ {error}" if error else "")

    def on_select_changed(self, event: Select.Changed) -> None:
        if event.select.id in ("populations", "oracle", "solver"):
            self.check_populations(self._populations_choice())
        if event.select.id == "oracle":
            self._toggle_oracle_fields()
        elif event.select.id == "eval-backend":
            self._toggle_backend_fields()
        elif event.select.id == "model-list" and event.value is not Select.BLANK:
            self.query_one("#model", Input).value = str(event.value)

    def _populations_choice(self) -> tuple[int, str, str] | None:
        """(populations, oracle, solver) as chosen, or None while one is blank."""
        values = [self.query_one(f"#{name}", Select).value for name in ("populations", "oracle", "solver")]
        if any(value is Select.BLANK for value in values):
            return None
        return int(values[0]), str(values[1]), str(values[2])

    @work(thread=True, exclusive=True, group="populations")
    def check_populations(self, choice: tuple[int, str, str] | None) -> None:
        """The engine's own refusal of two populations with this oracle and solver, under the field
        (in a worker: the check may load scipy)."""
        refusal = None
        if choice is not None and choice[0] == 2:
            try:
                refusal = _backend().populations_refusal(*choice)
            except Exception as error:  # noqa: BLE001 - the start says it again, as any start error
                refusal = one_line(error, 300)
        if not get_current_worker().is_cancelled:
            self.app.call_from_thread(self._populations_checked, choice, refusal)

    def _populations_checked(self, choice: tuple[int, str, str] | None, refusal: str | None) -> None:
        if choice != self._populations_choice():
            return  # changed meanwhile: its own check follows
        self.populations_error = (choice, refusal) if refusal else None
        show_line(self.query_one("#populations-error", Static), f"✗ {refusal}" if refusal else "")

    def _oracle_refusal(self) -> str | None:
        """Why the chosen oracle cannot serve the game last checked (its declared needs), or None."""
        oracle = self.query_one("#oracle", Select).value
        return self.oracle_refusals.get(str(oracle)) if oracle is not Select.BLANK else None

    def _show_oracle_error(self) -> None:
        refusal = self._oracle_refusal()
        show_line(self.query_one("#oracle-error", Static), f"✗ {refusal}" if refusal else "")

    def _toggle_oracle_fields(self) -> None:
        self._show_oracle_error()
        oracle = self.query_one("#oracle", Select).value
        self.query_one("#llm-fields").display = oracle in self.choices.llm_oracles
        human = oracle in self.choices.file_oracles
        self.query_one("#human-fields").display = human
        if human:
            self.check_human_file(self.query_one("#human-file", Input).value)

    def _toggle_backend_fields(self) -> None:
        self.query_one("#ray-fields").display = self.query_one("#eval-backend", Select).value == "ray"

    # ------------------------------------------------------------------ models on the server
    def action_list_models(self) -> None:
        if not self.query_one("#llm-fields").display:
            return
        self.query_one("#models-status", Static).update("asking the server for its models…")
        base_url = self.query_one("#base-url", Input).value.strip()
        self.list_models(base_url, self.query_one("#model", Input).value.strip(), self._key_trust(base_url))

    def _key_trust(self, base_url: str | None) -> KeyTrust:
        """Where the user lets a key go: the launch's trust, and the base URL if typed here (a
        value pre-filled from csro.toml is the file's, not the user's: issue 35)."""
        trust = self.defaults.key_trust or KeyTrust.of_user()
        prefilled = base_url == (self.defaults.base_url or None) and not self._base_url_typed
        return trust if prefilled else trust.naming(base_url)

    @work(thread=True, exclusive=True, group="models")
    def list_models(self, base_url: str, model: str, key_trust: KeyTrust) -> None:
        try:
            models = _backend().list_models(base_url or None, model or None, key_trust)
        except Exception as failure:  # noqa: BLE001 - LLMError / ConfigError: one line
            self.app.call_from_thread(self._models_listed, [], one_line(failure, 300))
            return
        self.app.call_from_thread(self._models_listed, models, None)

    def _models_listed(self, models: list[str], error: str | None) -> None:
        status = self.query_one("#models-status", Static)
        picker = self.query_one("#model-list", Select)
        if error:
            status.update(f"✗ {error}")
            picker.display = False
            return
        status.update(f"{len(models)} model{'s' if len(models) != 1 else ''} on the server: pick one below")
        picker.set_options([(m, m) for m in models])
        picker.display = bool(models)
        current = self.query_one("#model", Input).value.strip()
        if current in models:
            picker.value = current

    # ------------------------------------------------------------------ the result
    def options(self) -> LaunchOptions | None:
        """The form as LaunchOptions, or None (after a notification) if incomplete."""
        game = self.query_one("#game", Input).value.strip()
        if not game:
            self.notify("Enter a game.", severity="error")
            return None
        if self.game_error and self.checked_game == self.query_one("#game", Input).value:
            self.notify(f"The game: {self.game_error}", severity="error")
            return None
        refusal = self._oracle_refusal() if self.checked_game == self.query_one("#game", Input).value else None
        if refusal:
            self.notify(f"The oracle: {refusal}", severity="error")
            return None
        if self.populations_error is not None and self.populations_error[0] == self._populations_choice():
            self.notify(self.populations_error[1], severity="error")
            return None
        values = {}
        for name in ("oracle", "solver", "eval-backend", "populations"):
            value = self.query_one(f"#{name}", Select).value
            if value is Select.BLANK:
                self.notify(f"Choose a {name}.", severity="error")
                return None
            values[name] = str(value)
        numbers: dict[str, int | None] = {}
        for field, default in (("episodes", None), ("seed", None), ("iterations", None)):
            text = self.query_one(f"#{field}", Input).value.strip()
            try:
                numbers[field] = int(text) if text else default
            except ValueError:
                self.notify(f"{field.capitalize()} must be a whole number.", severity="error")
                return None
        if numbers["episodes"] is not None and numbers["episodes"] <= 0:
            self.notify("The evaluation budget must be at least one episode.", severity="error")
            return None
        if numbers["iterations"] is not None and numbers["iterations"] < 0:
            self.notify("Iterations cannot be negative.", severity="error")
            return None
        budgets: dict[str, float | None] = {}
        for field_id in ("move-budget", "budget-reserve", "init-budget"):
            text = self.query_one(f"#{field_id}", Input).value.strip()
            try:
                budgets[field_id] = float(text) if text else None
            except ValueError:
                budgets[field_id] = -1.0
            if budgets[field_id] is not None and not 0 < budgets[field_id] < float("inf"):
                self.notify(f"{field_id.replace('-', '_')} must be a positive number of seconds.", severity="error")
                return None
        seeds = [n.strip() for n in self.query_one("#seed-policies", Input).value.split(",") if n.strip()]
        unknown = [n for n in seeds if self.seed_names and n not in self.seed_names]
        if unknown:
            self.notify(f"Not a seed policy of {game}: {', '.join(unknown)}", severity="error")
            return None
        llm = values["oracle"] in self.choices.llm_oracles
        human_file = self.query_one("#human-file", Input).value.strip() or None
        needs_file = values["oracle"] in self.choices.file_oracles
        if needs_file and human_file is None:
            self.notify(f"The {values['oracle']} oracle needs its policy file.", severity="error")
            return None
        model = self.query_one("#model", Input).value.strip() or None
        base_url = self.query_one("#base-url", Input).value.strip() or None
        return LaunchOptions(
            game=game,
            oracle=values["oracle"],
            model=model if llm else None,
            base_url=base_url if llm else None,
            meta_solver=values["solver"],
            episodes=numbers["episodes"],
            seed=numbers["seed"],
            iterations=numbers["iterations"] or None,
            seed_policies=seeds,
            human_file=human_file if needs_file else None,
            backend=values["eval-backend"],
            ray_address=self.query_one("#ray-address", Input).value.strip() if values["eval-backend"] == "ray" else "",
            move_budget=budgets["move-budget"],
            budget_reserve=budgets["budget-reserve"],
            init_budget=budgets["init-budget"],
            populations=int(values["populations"]),
            key_trust=self._key_trust(base_url if llm else None),
            config_file=self.defaults.config_file,
        )

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "start-button":
            self.action_start()
        elif event.button.id == "open-button":
            self.action_open()
        elif event.button.id == "list-models":
            self.action_list_models()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        """Enter in a field starts the session (the form is one step)."""
        event.stop()
        self.action_start()

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

