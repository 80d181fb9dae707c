"""Play the game against a population member (sandboxed) or a benchmark bot."""

from __future__ import annotations

import json
from typing import Any

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import Screen
from textual.widgets import Button, Footer, OptionList, Static
from textual.widgets.option_list import Option

from csro_tui.tui.model import DashboardData
from csro_tui.play import PlaySession, opponent_for
from csro_tui.tui.widgets.title_header import TitleHeader

MAX_LIST_ITEMS = 12


def _short(value: Any) -> str:
    if isinstance(value, list) and all(isinstance(v, (str, int, float)) for v in value):
        if len(value) > MAX_LIST_ITEMS:
            return f"[… {len(value) - MAX_LIST_ITEMS} earlier, " + ", ".join(map(str, value[-MAX_LIST_ITEMS:])) + "]"
        return "[" + ", ".join(map(str, value)) + "]"
    if isinstance(value, (dict, list)):
        text = json.dumps(value)
        return text if len(text) < 200 else text[:197] + "…"
    return str(value)


def observation_text(obs: dict[str, Any], names: list[str] | None = None) -> Text:
    """A policy's observation, one key a line; move lists shown by action name."""
    text = Text()
    for key, value in obs.items():
        if key == "legal_actions":
            continue
        if names and key.endswith("moves") and isinstance(value, list) and all(isinstance(v, int) for v in value):
            value = [names[v] if 0 <= v < len(names) else v for v in value]
        text.append(f"{key}: ", style="bold")
        text.append(_short(value) + "\n")
    return text


class PlayScreen(Screen[None]):
    BINDINGS = [
        Binding("escape", "back", "Back", id="play.back"),
        Binding("t", "toggle_seat", "Switch seat", id="play.seat"),
        Binding("n", "new_game", "New game", id="play.new"),
        Binding("question_mark", "app.help", "Help", id="play.help"),
    ]

    def __init__(
        self,
        backend: Any,
        game: str,
        data: DashboardData,
        *,
        preselect: str | None = None,
        live: Any = None,
        seed: int = 0,
    ) -> None:
        super().__init__()
        self.backend = backend
        self.game = game
        self.data = data
        self.preselect = preselect
        self.live = live
        self.seat = 0
        self.seed = seed
        self.games_played = 0
        self.spec: Any = None
        self.session: PlaySession | None = None
        self.opponents: dict[str, tuple[str | None, str, str | None]] = {}  # option id -> (member id, name, source)

    def compose(self) -> ComposeResult:
        yield TitleHeader()
        with Horizontal(id="play"):
            with Vertical(id="play-picker", classes="panel") as picker:
                picker.border_title = "Opponent (enter to play)"
                yield OptionList(id="opponents")
            with Vertical(id="play-table", classes="panel") as table:
                table.border_title = "Table"
                yield Static("Pick an opponent.", id="play-board")
                yield Horizontal(id="play-actions")
                with VerticalScroll(id="play-history"):
                    yield Static("", id="play-log")
        yield Static("", id="play-status")
        yield Footer()

    def on_mount(self) -> None:
        self.sub_title = f"Play {self.game}"
        self._status()
        self.load_spec()

    # ------------------------------------------------------------------ opponents
    @work(thread=True, exclusive=True, group="play")
    def load_spec(self) -> None:
        try:
            spec = self.backend.game_spec(self.game)
            bots = [bot.name for bot in spec.benchmark()]
        except Exception as error:  # noqa: BLE001
            self.app.call_from_thread(self.notify, f"Cannot load {self.game}: {error}", severity="error")
            return
        self.app.call_from_thread(self._show_opponents, spec, bots)

    def _show_opponents(self, spec: Any, bots: list[str]) -> None:
        self.spec = spec
        options = self.query_one(OptionList)
        options.clear_options()
        self.opponents.clear()
        for member in self.data.members:
            key = f"member:{member.id}"
            self.opponents[key] = (member.id, member.name, member.source)
            options.add_option(Option(f"{member.id} {member.name} ({member.origin})", id=key))
        for bot in bots:
            key = f"bot:{bot}"
            self.opponents[key] = (None, bot, None)
            options.add_option(Option(f"bot: {bot}", id=key))
        if self.preselect and f"member:{self.preselect}" in self.opponents:
            options.highlighted = options.get_option_index(f"member:{self.preselect}")
        elif options.option_count:
            options.highlighted = 0
        options.focus()

    @on(OptionList.OptionSelected, "#opponents")
    def _picked(self, event: OptionList.OptionSelected) -> None:
        if event.option.id is not None:
            self.start_game(event.option.id)

    def action_new_game(self) -> None:
        options = self.query_one(OptionList)
        if options.highlighted is None:
            self.notify("Pick an opponent first.", severity="warning")
            return
        option = options.get_option_at_index(options.highlighted)
        if option.id:
            self.start_game(option.id)

    def action_toggle_seat(self) -> None:
        self.seat = 1 - self.seat
        self._status()
        self.notify(f"You play seat {self.seat} from the next game.")

    # ------------------------------------------------------------------ the game
    def start_game(self, option_id: str) -> None:
        if self.spec is None:
            self.notify("The game is still loading.", severity="warning")
            return
        member_id, name, source = self.opponents[option_id]
        self._close_session()
        self.query_one("#play-board", Static).update(f"Starting a game against {name}…")
        self._set_actions([])
        self._start(opponent_for(member_id, name, source), member_id, self.seed + self.games_played)

    @work(thread=True, exclusive=True, group="play")
    def _start(self, opponent: Any, member_id: str | None, seed: int) -> None:
        try:
            session = PlaySession(self.spec, opponent, seat=self.seat, seed=seed, policy_id=member_id)
        except Exception as error:  # noqa: BLE001 - e.g. the policy failed in its sandbox
            self.app.call_from_thread(self.notify, f"Cannot start the game: {error}", severity="error", timeout=10)
            return
        self.app.call_from_thread(self._started, session)

    def _started(self, session: PlaySession) -> None:
        self.session = session
        self._render_game()

    def play(self, action: int) -> None:
        """The person's move (from a button or a key)."""
        if self.session is None or self.session.finished:
            return
        self._set_actions([])  # no double moves while the opponent thinks
        self._move(self.session, action)

    @work(thread=True, exclusive=True, group="play")
    def _move(self, session: PlaySession, action: int) -> None:
        try:
            session.play(action)
        except Exception as error:  # noqa: BLE001 - a policy failure ends the game
            session.close()
            self.app.call_from_thread(self.notify, f"The game stopped: {error}", severity="error", timeout=10)
        self.app.call_from_thread(self._render_game)
        if session.finished:
            self.app.call_from_thread(self._game_over)
            self._record(session)

    def _game_over(self) -> None:
        self.games_played += 1
        self._status()

    def _record(self, session: PlaySession) -> None:
        """Runs on the play worker's thread: the session log is a file."""
        try:
            recorded = self.backend.record_game(self.live, session.record())
        except Exception as error:  # noqa: BLE001
            self.app.call_from_thread(self.notify, f"The game was not recorded: {error}", severity="warning")
            return
        if recorded:
            self.app.call_from_thread(self.notify, "Game recorded in the session.")

    # ------------------------------------------------------------------ rendering
    def _render_game(self) -> None:
        session = self.session
        if session is None:
            return
        board = Text()
        board.append(f"You: seat {session.seat}   Opponent: {session.opponent_name}\n", style="bold")
        score = session.returns()
        board.append(f"Score: you {score[session.seat]:+g}, {session.opponent_name} {score[session.opponent_seat]:+g}\n\n")
        if session.finished:
            board.append("Game over: ", style="bold")
            outcome = session.my_return()
            board.append(
                "you won" if outcome > 0 else "you lost" if outcome < 0 else "a draw",
                style="bold green" if outcome > 0 else "bold red" if outcome < 0 else "bold",
            )
            board.append(f" ({outcome:+g})\n\nFinal OpenSpiel state: {session.public_state()}\n")
        else:
            board.append(observation_text(session.observation(), session.names))
        self.query_one("#play-board", Static).update(board)
        self._set_actions(session.legal_actions())
        self.query_one("#play-log", Static).update(self._history(session))
        self._status()

    def _history(self, session: PlaySession) -> Text:
        text = Text()
        moves = session.moves
        if session.finished:
            text.append(f"What {session.opponent_name} saw and did\n", style="bold underline")
            for move in session.opponent_moves():
                seen = observation_text(move.observation or {}, session.names).plain.strip().replace("\n", "; ")
                text.append(f"saw {seen}\n", style="dim")
                text.append(f"  → {move.action_name}")
                if move.distribution:
                    text.append("  from " + ", ".join(f"{session.action_name(a)} {p:.2f}" for a, p in move.distribution.items()))
                text.append("\n")
            text.append("\n")
        text.append("Moves\n", style="bold underline")
        for move in moves[-40:]:
            who = "you" if move.who == "you" else move.who
            text.append(f"{who}: {move.action_name}\n", style="cyan" if move.who == "you" else "magenta")
        return text

    def _set_actions(self, legal: list[tuple[int, str]]) -> None:
        bar = self.query_one("#play-actions", Horizontal)
        bar.remove_children()
        buttons = [
            Button(f"{i}: {name}" if len(legal) > 3 or not self._is_rrps() else f"{name}", id=f"action-{action}", compact=True)
            for i, (action, name) in enumerate(legal, 1)
        ]
        if buttons:
            bar.mount_all(buttons)

    def _is_rrps(self) -> bool:
        return self.spec is not None and "rps" in str(getattr(self.spec, "name", self.game)).lower()

    def _status(self) -> None:
        self.query_one("#play-status", Static).update(
            f"seat {self.seat} (t switches)  │  games played here {self.games_played}  │  "
            + ("r/p/s throw" if self._is_rrps() else "1-9 pick an action")
        )

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id and event.button.id.startswith("action-"):
            event.stop()
            self.play(int(event.button.id.removeprefix("action-")))

    def on_key(self, event) -> None:
        session = self.session
        if session is None or session.finished or not event.character:
            return
        legal = session.legal_actions()
        choice = None
        if event.character.isdigit() and event.character != "0":
            index = int(event.character) - 1
            if index < len(legal):
                choice = legal[index][0]
        elif self._is_rrps() and event.character.lower() in "rps":
            choice = next((a for a, name in legal if name.lower().startswith(event.character.lower())), None)
        if choice is not None:
            event.stop()
            event.prevent_default()
            self.play(choice)

    def _close_session(self) -> None:
        if self.session is not None:
            session, self.session = self.session, None
            self._close_in_thread(session)

    @work(thread=True, group="play-close")
    def _close_in_thread(self, session: PlaySession) -> None:
        session.close()

    def action_back(self) -> None:
        self._close_session()
        self.app.pop_screen()
