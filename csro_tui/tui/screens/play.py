"""Play a match against a population member (sandboxed) or a benchmark bot.

A visit is a match: games against one opponent with a running total and
the list of games (cards at showdown, or the rounds won in a repeated
game).  Every game is dealt from a fresh seed and recorded in the session
on screen (the live one through its engine, a replayed one through the
session store).  The game logic lives in `csro_tui.play`; this screen only
draws it and runs the opponent's moves in a worker.  Move keys typed while
the opponent answers are kept and played in order; one that no longer means
what it meant (a digit after the moves on offer changed) is dropped with the
rest, and a notice says so.
"""

from __future__ import annotations

from collections import deque
from typing import Any, Callable

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Grid, Horizontal, Vertical, VerticalScroll
from textual.screen import Screen
from textual.widgets import Button, Footer, OptionList, Static
from textual.widgets.option_list import Option

from csro_tui.games.presentation import Presentation
from csro_tui.play import (
    YOU,
    Match,
    PlaySession,
    fresh_seed,
    opponent_decisions,
    opponent_for,
    outcome_word,
    rounds,
    rounds_total,
    showdown,
    signed,
    table,
)
from csro_tui.text import clean_text, one_line, plain
from csro_tui.tui.model import DashboardData
from csro_tui.tui.screens.sessions import TimelineScreen
from csro_tui.tui.widgets.title_header import TitleHeader

ROUNDS_SHOWN = 200  # newest rounds listed; the total covers them all
SEEN_SHOWN = 6  # the opponent's last decisions shown after a game
TYPED_AHEAD = 1000  # move keys kept while the opponent answers (a whole 1000-throw match)


class PlayScreen(Screen[None]):
    BINDINGS = [
        Binding("escape", "back", "Back", id="play.back"),
        Binding("n", "new_game", "Next game", id="play.new"),
        Binding("t", "toggle_seat", "Seat", id="play.seat"),
        Binding("o", "pick_opponent", "Opponents", id="play.opponents"),
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
        session_id: str | None = None,
        new_seed: Callable[[], int] = fresh_seed,
    ) -> None:
        super().__init__()
        self.backend = backend
        self.game = game
        self.data = data
        self.preselect = preselect
        self.live = live
        # the session the games are recorded in: the live one, or the replayed one on screen
        self.session_id = session_id if session_id is not None else getattr(live, "session_id", None)
        self.seat = 0
        self.spec: Any = None
        self.presentation: Presentation | None = None  # the game's own words for moves, rounds and keys
        self.session: PlaySession | None = None
        self.match: Match | None = None
        self.opponent_key: str | None = None
        self.opponents: dict[str, tuple[str | None, str, str | None]] = {}  # option id -> (member id, name, source)
        # Two populations: option id -> the member's seat; the person takes the other one (`seat_against`).
        self.opponent_seats: dict[str, int] = {}
        self.recorded = 0
        self.moving = False  # a move is being played in the worker
        # Move keys typed while the opponent answered, each with the moves on offer when it was
        # typed; played in order once it is the person's turn again (never silently dropped).
        self.typed: deque[tuple[str, list[tuple[int, str]]]] = deque()
        self.offered: list[tuple[int, str]] = []  # the moves last shown to the person
        self.new_seed = new_seed  # a fresh deal per game; tests pass a counter

    def compose(self) -> ComposeResult:
        yield TitleHeader()
        with Horizontal(id="play"):
            with Vertical(id="play-picker", classes="panel") as picker:
                picker.border_title = "Opponent"
                yield OptionList(id="opponents")
            with Vertical(id="play-table", classes="panel") as board:
                board.border_title = "Table"
                yield Static("Pick an opponent and press enter.", id="play-match")
                yield Static("", id="play-board")
                yield Grid(id="play-actions")  # wraps onto more rows: a row cut moves off at 80 columns
                with VerticalScroll(id="play-history"):
                    yield Static("", id="play-log")
        yield Static("", id="play-status")
        yield Footer()

    def on_mount(self) -> None:
        self._title()
        self._status()
        self.load_spec()

    # ------------------------------------------------------------------ opponents
    @work(thread=True, exclusive=True, group="play")
    def load_spec(self) -> None:
        try:
            spec = self.backend.game_spec(self.game)
            bots = [bot.name for bot in spec.benchmark()]
        except Exception as error:  # noqa: BLE001
            self.app.call_from_thread(self.notify, f"Cannot load {self.game}: {one_line(error)}", severity="error")
            return
        self.app.call_from_thread(self._show_opponents, spec, bots)

    def _show_opponents(self, spec: Any, bots: list[str]) -> None:
        self.spec = spec
        self.presentation = spec.presentation()
        options = self.query_one(OptionList)
        options.clear_options()
        self.opponents.clear()
        self.opponent_seats.clear()
        groups = ([(f"Seat {seat} (you: {1 - seat})", self.data.seat_members(seat)) for seat in (0, 1)]
                  if self.data.populations == 2 else [("Population", self.data.members)])
        for heading, members in groups:
            if members:
                options.add_option(Option(Text(heading, style="bold"), disabled=True))
            for member in members:
                key = f"member:{member.id}"
                self.opponents[key] = (member.id, member.name, member.source)
                if member.seat in (0, 1):
                    self.opponent_seats[key] = member.seat
                options.add_option(Option(plain(f"{member.id} {one_line(member.name, 40)}"), id=key))
        if bots:
            options.add_option(Option(Text(f"Bots ({len(bots)})", style="bold"), disabled=True))
        for bot in bots:
            key = f"bot:{bot}"
            self.opponents[key] = (None, bot, None)
            options.add_option(Option(bot, id=key))
        if self.preselect and f"member:{self.preselect}" in self.opponents:
            options.highlighted = options.get_option_index(f"member:{self.preselect}")
        else:
            first = next(iter(self.opponents), None)
            if first is not None:
                options.highlighted = options.get_option_index(first)
        options.focus()
        self._status()

    @on(OptionList.OptionSelected, "#opponents")
    def _picked(self, event: OptionList.OptionSelected) -> None:
        if event.option.id is not None:
            self.start_game(event.option.id)

    @on(OptionList.OptionHighlighted, "#opponents")
    def _highlighted(self, event: OptionList.OptionHighlighted) -> None:
        if self.opponent_key is None:  # before a match the status line says the seat against this one
            self._status()

    def action_pick_opponent(self) -> None:
        self.query_one(OptionList).focus()

    def action_new_game(self) -> None:
        """The next game against the same opponent (or the highlighted one, before any)."""
        key = self.opponent_key
        if key is None:
            options = self.query_one(OptionList)
            option = options.highlighted_option if options.highlighted is not None else None
            key = option.id if option is not None else None
        if key is None:
            self.notify("Pick an opponent first.", severity="warning")
            return
        self.start_game(key)

    def seat_against(self, option_id: str | None) -> int:
        """The person's seat against an opponent: the other seat than a two-population
        member's (its code plays only its own), else the person's choice (`t`)."""
        member_seat = self.opponent_seats.get(option_id) if option_id is not None else None
        return self.seat if member_seat is None else 1 - member_seat

    def _current_option(self) -> str | None:
        """The opponent of the match, or the highlighted one before any."""
        if self.opponent_key is not None:
            return self.opponent_key
        options = self.query_one(OptionList)
        option = options.highlighted_option if options.highlighted is not None else None
        return option.id if option is not None else None

    def action_toggle_seat(self) -> None:
        key = self._current_option()
        if key in self.opponent_seats:
            member_id, name, _ = self.opponents[key]
            seat = self.opponent_seats[key]
            self.notify(f"{member_id} plays seat {seat} only (its population's seat): you play seat {1 - seat}.", timeout=4)
            return
        self.seat = 1 - self.seat
        self._status()
        moves_first = "you move first" if self.seat == 0 else "they move first"
        self.notify(f"You play seat {self.seat} ({moves_first}) from the next game.", timeout=3)

    # ------------------------------------------------------------------ the game
    def start_game(self, option_id: str) -> None:
        if self.spec is None:
            self.notify("The game is still loading.", severity="warning")
            return
        if option_id not in self.opponents:
            return
        if self.session is not None and not self.session.finished and self.session.moves:
            self.notify("The unfinished game was abandoned (not recorded).", timeout=3)
        self._drop_typed("a new game started")
        member_id, name, source = self.opponents[option_id]
        if option_id != self.opponent_key or self.match is None:
            self.opponent_key = option_id
            self.match = Match(name)
        self._close_session()
        self.query_one("#play-board", Static).update(f"Dealing a game against {name}…")
        self._set_actions([])
        self._status()
        self._start(opponent_for(member_id, name, source), member_id, self.new_seed(), self.seat_against(option_id))

    @work(thread=True, exclusive=True, group="play")
    def _start(self, opponent: Any, member_id: str | None, seed: int, seat: int) -> None:
        try:
            session = PlaySession(self.spec, opponent, seat=seat, seed=seed, policy_id=member_id)
        except Exception as error:  # noqa: BLE001 - e.g. the policy failed in its sandbox
            self.app.call_from_thread(self.notify, f"Cannot start the game: {one_line(error, 300)}", severity="error", timeout=10)
            return
        finished = session.finished  # read before the render, as in _move
        self.app.call_from_thread(self._started, session)
        if finished:  # the opponent's moves alone ended it (cannot happen in these games; safe anyway)
            self._finish(session)

    def _started(self, session: PlaySession) -> None:
        self.session = session
        self.query_one("#play-actions", Grid).display = True
        self._render_game()

    def play(self, action: int) -> None:
        """The person's move (from a button or a key)."""
        if self.session is None or self.session.finished or self.moving:
            return
        self.moving = True  # no second move (and no reading the state) while the worker plays this one
        self._set_actions([])
        self._move(self.session, action)

    @work(thread=True, exclusive=True, group="play")
    def _move(self, session: PlaySession, action: int) -> None:
        try:
            session.play(action)
        except Exception as error:  # noqa: BLE001 - a policy failure ends the game
            session.failure = one_line(error, 200)
            session.close()
            self.app.call_from_thread(self.notify, f"The game stopped: {session.failure}", severity="error", timeout=10)
            self.app.call_from_thread(self._render_game)
            return
        # Whether this move ended the game, read before rendering: the render may start the next
        # typed-ahead move in a new worker, and its end is that worker's to record, not this one's.
        finished = session.finished
        self.app.call_from_thread(self._render_game)
        if finished:
            self._finish(session)

    def _finish(self, session: PlaySession) -> None:
        """Runs on the play worker's thread: count the game, then record it (a file write)."""
        self.app.call_from_thread(self._game_over, session)
        try:
            recorded = self.backend.record_played_game(self.live, self.session_id, session.record())
        except Exception as error:  # noqa: BLE001 - the game still counts in the match
            self.app.call_from_thread(self.notify, f"The game was not recorded: {one_line(error, 300)}", severity="warning", timeout=8)
            return
        if recorded:
            self.recorded += 1
            self.app.call_from_thread(self._status)

    def _game_over(self, session: PlaySession) -> None:
        if self.match is not None and session is self.session:
            self.match.add(session)
        self._render_game()

    # ------------------------------------------------------------------ rendering
    def _render_game(self) -> None:
        self.moving = False
        session = self.session
        if session is None:
            return
        self.query_one("#play-match", Static).update(self._match_line(session))
        self.query_one("#play-board", Static).update(self._board(session))
        self.offered = session.legal_actions()
        self._set_actions(self.offered)
        self.query_one("#play-log", Static).update(self._history(session))
        self._status()
        self._play_typed()

    # ------------------------------------------------------------------ keys typed ahead
    def _choice(self, key: str, offered: list[tuple[int, str]]) -> int | None:
        """The move `key` names among `offered`: a game's letter ("r" Rock), or a digit (its place)."""
        letters = self._move_keys()
        if key.lower() in letters:
            wanted = letters[key.lower()]
            return wanted if any(a == wanted for a, _ in offered) else None
        if key.isdigit() and key != "0" and int(key) <= len(offered):
            return offered[int(key) - 1][0]
        return None

    def _is_move_key(self, key: str) -> bool:
        return key.lower() in self._move_keys() or (key.isdigit() and key != "0")

    def _play_typed(self) -> None:
        """Play the next key typed while the opponent answered, if it still means what it meant."""
        session = self.session
        if not self.typed or session is None:
            return
        if session.finished or session.failure:
            self._drop_typed("the game ended")
            return
        key, offered_then = self.typed.popleft()
        letter = key.lower() in self._move_keys()  # a letter names the same move in every state
        choice = self._choice(key, self.offered)
        if choice is None or (not letter and offered_then != self.offered):
            self.typed.appendleft((key, offered_then))
            self._drop_typed("the moves on offer changed")
            return
        self.play(choice)

    def _drop_typed(self, why: str) -> None:
        """Forget the keys typed ahead, saying so."""
        if not self.typed:
            return
        count = len(self.typed)
        keys = "".join(key for key, _ in self.typed)
        self.typed.clear()
        moves = "1 move" if count == 1 else f"{count} moves"
        self.notify(f"{moves} typed while the opponent answered not played ({one_line(keys, 20)}): {why}.",
                    severity="warning", timeout=5)
        self._status()

    def _opponent_label(self, session: PlaySession) -> str:
        """A member as `p1 br-1` (its id and name), a bot by its name."""
        entry = self.opponents.get(self.opponent_key or "")
        if session.policy_id and entry is not None and entry[0] == session.policy_id and entry[1] != session.policy_id:
            return one_line(f"{session.policy_id} {entry[1]}", 40)
        return one_line(session.opponent_name, 40)

    def _match_line(self, session: PlaySession) -> Text:
        text = Text()
        text.append("vs ", style="dim")
        text.append(self._opponent_label(session), style="bold magenta")
        text.append(f" · you seat {session.seat}\n", style="dim")
        if self.match is not None and self.match.games:
            total = self.match.total
            text.append("match: " + self.match.describe(), style="bold green" if total > 0 else "bold red" if total < 0 else "bold")
        else:
            text.append("match: first game", style="dim")
        return text

    def _board(self, session: PlaySession) -> Text:
        if session.finished or session.failure:
            text = Text()
            if session.failure:
                text.append("Game stopped: ", style="bold red")
                text.append(plain(session.failure))
                return text
            outcome = session.my_return()
            text.append(f"Game {len(self.match.games) if self.match else 1} over: ", style="bold")
            text.append(
                f"you {outcome_word(outcome)} {signed(outcome)}",
                style="bold green" if outcome > 0 else "bold red" if outcome < 0 else "bold",
            )
            game = self.match.games[-1] if self.match and self.match.games else None
            if game is not None and game.summary:
                text.append(f"\n{game.summary}")
            switch = "   t: switch seat" if self.opponent_key not in self.opponent_seats else ""  # a seated member: fixed
            text.append(f"\nn: next game{switch}   o: another opponent", style="dim")
            return text
        rows = table(session)
        width = max([10, *(len(label) for label, _ in rows)]) + 2  # steady columns as rows come and go
        text = Text()
        for label, value in rows:
            text.append(label.ljust(width), style="bold")
            # a value of several lines (a generic game's board: tic-tac-toe's "x.o\n.x.\n...")
            # keeps them, under one another, instead of running into one line
            lines = clean_text(value).splitlines() or [""]
            text.append(plain(lines[0]))
            for line in lines[1:]:
                text.append("\n" + " " * width)
                text.append(plain(line))
            text.append("\n")
        text.rstrip()
        return text

    def _history(self, session: PlaySession) -> Text:
        text = Text()
        done = rounds(session)
        if done:
            shown = session.presentation
            unit = shown.round_unit.capitalize() + "s"
            text.append(f"{unit} of this game ({len(done)} of {rounds_total(session)}), newest first\n", style="bold underline")
            width = self.query_one("#play-log", Static).size.width or 200
            for row in reversed(done[-ROUNDS_SHOWN:]):
                word = outcome_word(row.result)
                style = "green" if row.result > 0 else "red" if row.result < 0 else "dim"
                line = Text()
                if not shown.results_first:
                    line.append(f"{row.number:>4}  you {row.mine:<8} them {row.theirs:<8} ")
                    line.append(f"{word:<4} {signed(row.result):>3}", style=style)
                    line.append(f"   total {signed(row.total)}", style="dim")
                else:  # the result first: a narrow screen cuts how the round ended, not what it made
                    line.append(f"{row.number:>4}  ")
                    line.append(f"{word:<4} {signed(row.result):>3}", style=style)
                    line.append(f"  total {signed(row.total):>3}", style="dim")
                    line.append(f"  you {row.mine} them {row.theirs}  board {row.board or '-'}  {row.detail}")
                line.truncate(width, overflow="ellipsis")  # one row per round, never wrapped under it
                text.append_text(line)
                text.append("\n")
            text.append("\n")
        if self.match is not None and self.match.games:
            text.append("Games of this match, newest first\n", style="bold underline")
            for game in reversed(self.match.games):
                style = "green" if game.result > 0 else "red" if game.result < 0 else "dim"
                text.append(f"{game.number:>4}  seat {game.seat}  ")
                text.append(f"{signed(game.result):>4}", style=style)
                text.append(f"  {game.summary}\n")
            text.append("\n")
        if session.finished and not session.presentation.repeated:
            text.append(f"What {self._opponent_label(session)} saw and did\n", style="bold underline")
            for decision in opponent_decisions(session)[-SEEN_SHOWN:]:
                text.append(plain(f"{decision.saw}\n", style="dim"))
                text.append(plain(f"  → {decision.did}"))
                if decision.policy:
                    text.append(plain(f"   (its policy: {decision.policy})", style="dim"))
                text.append("\n")
        elif not done and session.moves:
            text.append("Moves\n", style="bold underline")
            for move in session.moves[-40:]:
                who = YOU if move.who == YOU else one_line(move.who, 30)
                text.append(f"{who}: {move.label}\n", style="cyan" if move.who == YOU else "magenta")
        return text

    def _set_actions(self, legal: list[tuple[int, str]]) -> None:
        bar = self.query_one("#play-actions", Grid)
        bar.remove_children()
        keys = {action: key for key, action in self._move_keys().items()}
        labels = [(f"{name} ({keys[action]})" if action in keys else f"{i} {name}") for i, (action, name) in enumerate(legal, 1)]
        buttons = [
            Button(plain(label), id=f"action-{action}", compact=True) for label, (action, _) in zip(labels, legal)
        ]
        self._action_labels = labels
        self._lay_out_actions()
        if buttons:
            bar.mount_all(buttons)

    def _lay_out_actions(self) -> None:
        """As many equal columns as the table's width holds; the moves wrap onto more rows."""
        labels = getattr(self, "_action_labels", [])
        if not labels:
            return
        bar = self.query_one("#play-actions", Grid)
        width = bar.content_region.width or max(self.query_one("#play-table").content_region.width - 2, 20)
        column = max(8, max(len(label) for label in labels) + 2)
        columns = max(1, min(len(labels), (width + 1) // (column + 1)))
        bar.styles.grid_size_columns = columns
        bar.styles.grid_columns = str(column)

    def on_resize(self) -> None:
        self._title()
        self._lay_out_actions()

    def _title(self) -> None:
        """The game and the session the games are recorded in; where both do not fit the
        header, the session id alone, whole (ids are never cut)."""
        if not self.session_id:
            self.sub_title = f"Play {self.game}"
            return
        full = f"Play {self.game} · records to {self.session_id}"
        # the header centres "<title> — <sub title>" between its icon and clock columns
        fits = len(f"{self.app.title} — {full}") + 16 <= self.app.size.width
        self.sub_title = full if fits else f"Play · {self.session_id}"  # the status line says games are recorded

    def _move_keys(self) -> dict[str, int]:
        """Letters the game gives its moves ("r" Rock), the same in every state."""
        return dict(self.presentation.move_keys) if self.presentation is not None else {}

    def _status(self) -> None:
        letters = self._move_keys()
        verb = self.presentation.move_verb if self.presentation is not None else "move"
        if letters and len(letters) >= len(self.offered):  # a letter for every move (RRPS)
            keys = f"{'/'.join(letters)} or 1-{len(letters)} {verb}"
        else:
            keys = f"1-9 {verb}"
            if len(getattr(self, "_action_labels", [])) > 9:  # the moves on screen now
                keys = f"1-9 {verb}; beyond 9: tab to it, enter"
            names = dict(self.offered)
            keys += "".join(f"; {letter} {names[action]}" for letter, action in letters.items() if action in names)
        recorded = f"{self.recorded} recorded in the session" if self.session_id else "not recorded (no session)"
        ahead = f"  │  {len(self.typed)} typed ahead" if self.typed else ""
        key = self._current_option() if self.is_mounted else None
        # against a two-population member the seat is the other one than its own (t does not switch it)
        seat = f"seat {self.seat} (t)" if key not in self.opponent_seats else f"seat {self.seat_against(key)} (vs seat {self.opponent_seats[key]})"
        status = self.query_one("#play-status", Static)
        line = f"{seat}  │  {keys}{ahead}  │  {recorded}"
        if len(line) > (status.size.width or self.app.size.width - 2):  # 80 columns: the count stays whole
            line = " │ ".join((seat, keys + ahead, f"{self.recorded} recorded" if self.session_id else "not recorded"))
        status.update(line)

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id and event.button.id.startswith("action-"):
            event.stop()
            self.play(int(event.button.id.removeprefix("action-")))

    def _on_move_key(self, event) -> None:
        session = self.session
        key = event.character
        if session is None or session.finished or not key or not self._is_move_key(key):
            return
        if self.moving or self.typed:  # the opponent is answering: keep the key, in order
            event.stop()
            event.prevent_default()
            if len(self.typed) < TYPED_AHEAD:
                self.typed.append((key, list(self.offered)))
                self._status()
            else:
                self.notify("Too many moves typed ahead: this one was not kept.", severity="warning", timeout=3)
            return
        choice = self._choice(key, session.legal_actions())
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

    def _what_leaving_loses(self) -> str:
        """What esc would throw away ("" when nothing): the game under way, and the match's
        games where nothing records them."""
        lost = []
        if self.session is not None and not self.session.finished and self.session.moves:
            lost.append("the game under way")
        if not self.session_id and self.match is not None and self.match.games:
            lost.append(f"the match's {len(self.match.games)} finished game{'s' if len(self.match.games) > 1 else ''} "
                        "(no session records them)")
        return " and ".join(lost)

    def on_key(self, event) -> None:
        if event.key != "escape":
            self._leave_armed = False  # any other key: the next esc asks again
        self._on_move_key(event)

    def action_back(self) -> None:
        """esc: back to where play was opened; when that throws away a game played by hand, the
        first esc says what and a second one leaves (as lazygit and k9s confirm what destroys)."""
        lost = self._what_leaving_loses()
        if lost and not getattr(self, "_leave_armed", False):
            self._leave_armed = True
            self.notify(f"Leaving abandons {lost}: esc again leaves, any other key stays.", severity="warning",
                        timeout=6)
            return
        self._leave_armed = False
        self.typed.clear()  # leaving: nothing is played any more
        if self.session is not None and not self.session.finished and self.session.moves:
            self.app.notify("The unfinished game was abandoned (not recorded).", timeout=3)
        self._close_session()
        self.app.pop_screen()
        if self.recorded and self.session_id:
            # a replayed session on screen: its timeline reloads to show the games just played

            for screen in self.app.screen_stack:
                if isinstance(screen, TimelineScreen) and screen.session_id == self.session_id:
                    screen.load()
