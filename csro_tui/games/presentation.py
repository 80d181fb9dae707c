"""How a game is shown to a person playing it (the play screen and `csro_tui.play`).

`GameSpec.presentation()` returns a `Presentation`.  The play screen and
`csro_tui.play` ask it, never the game's name or type:

- `move_label`: a move named as a player would name it at that moment
  (poker: a Kuhn "Pass" is "Check" or "Fold"; a Leduc "Raise" with nothing
  bet is "Bet 2");
- `position`: where a move falls (the hand of a repeated match, the betting
  round), so the table can group them;
- `table`: (label, value) rows describing the game now, from the person's view;
- `rounds`: the finished rounds of a repeated game (an RRPS throw, a
  repeated-Leduc hand), with `round_unit` naming them and `results_first`
  saying how a row reads;
- `showdown`: how a one-hand game ended (cards shown, who folded, why the
  winner won);
- `opponent_saw` / `choice_label`: what the opponent saw at one of its
  decisions, and its choices there, in the game's own words;
- `move_keys`: letters that name a move whatever the state ("r" is Rock).

The default presents any game from its observation; a game overrides what
it can say better.  Methods receive the game in play as a `PlayState`
(`csro_tui.play.PlaySession`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Mapping, Protocol, Sequence

if TYPE_CHECKING:
    import pyspiel

    from csro_tui.games.base import GameSpec

YOU = "you"  # the person's moves are recorded under this name


class PlayMove(Protocol):
    """One recorded decision (csro_tui.play.Move)."""

    seat: int
    who: str  # YOU or the opponent's name
    action: int
    action_name: str
    observation: dict[str, Any] | None  # what the opponent saw (its moves only)
    label: str
    hand: int
    round: int


class PlayState(Protocol):
    """A game in play (csro_tui.play.PlaySession), as a presentation reads it."""

    spec: "GameSpec"
    state: "pyspiel.State"
    seat: int
    moves: Sequence[PlayMove]

    @property
    def finished(self) -> bool: ...

    def observation(self) -> dict[str, Any]: ...

    def action_name(self, action: int, player: int | None = None) -> str: ...


def signed(value: float, digits: int = 0) -> str:
    """`+2`, `-1`, `0` (never `-0`)."""
    if abs(value) < 0.5 * 10 ** (-digits):
        value = 0.0
    text = f"{value:+.{digits}f}" if digits else f"{value:+g}"
    return "0" if value == 0 else text


def outcome_word(value: float) -> str:
    return "won" if value > 0 else "lost" if value < 0 else "tied"


MAX_LIST_ITEMS = 12


def short_value(value: Any) -> str:
    """An observation's value on one line: the newest items of a long list, JSON for nested data."""
    if isinstance(value, list) and all(isinstance(v, (str, int, float)) for v in value):
        if len(value) > MAX_LIST_ITEMS:
            return f"… {len(value) - MAX_LIST_ITEMS} earlier, " + ", ".join(map(str, value[-MAX_LIST_ITEMS:]))
        return ", ".join(map(str, value)) or "-"
    if isinstance(value, (dict, list)):
        text = json.dumps(value)
        return text if len(text) < 200 else text[:197] + "…"
    return str(value)


def one_line_text(text: str) -> str:
    """A multi-line string (a board, an OpenSpiel state string) on one line, rows split by " │ "."""
    return " │ ".join(line.strip() for line in str(text).strip().splitlines() if line.strip())


@dataclass(frozen=True)
class Round:
    """One finished round of a repeated game (an RRPS throw, a repeated-Leduc hand)."""

    number: int  # from 1
    mine: str  # your throw / your card
    theirs: str  # their throw / their card if shown, "?" if not
    result: float  # your result in it
    detail: str = ""  # how it ended: "showdown: they paired the board", "you folded"
    total: float = 0.0  # your total after it
    board: str = ""  # the public card, if it was dealt


@dataclass(frozen=True)
class Showdown:
    """How a finished one-hand game ended (poker cards, Liar's Dice dice)."""

    my_card: str
    their_card: str | None  # None when a fold kept it hidden
    board: str | None
    folded: str | None  # "you", "them" or None (a showdown)
    reason: str = ""  # why the winner won: "they paired the board"

    def describe(self) -> str:
        board = f", board {self.board}" if self.board else ""
        if self.folded == "you":
            return f"you folded with {self.my_card}{board}"
        if self.folded == "them":
            return f"they folded; you had {self.my_card}{board}"
        reason = f": {self.reason}" if self.reason else ""
        return f"showdown: you {self.my_card}, they {self.their_card}{board}{reason}"


class Presentation:
    """Any game, from its observation (see module doc); games override what they can say better."""

    round_unit = ""  # what one round of a repeated game is called ("round", "hand"); "" in one-shot games
    results_first = False  # a round's row leads with its result (a hand's ending is long; a throw's is short)
    move_verb = "move"  # the status line: "1-9 move"
    move_keys: Mapping[str, int] = {}  # a letter naming one move in every state: {"r": 0}

    def __init__(self, spec: "GameSpec") -> None:
        self.spec = spec

    @property
    def repeated(self) -> bool:
        """A repeated game: its rounds are listed instead of the opponent's decisions."""
        return bool(self.round_unit)

    def rounds_total(self) -> int:
        """How many rounds the repeated game has (1 for one-shot games)."""
        return 1

    def move_label(self, session: PlayState, action: int, player: int) -> str:
        """`action` as `player` would name it now (the game's own name by default)."""
        return session.action_name(action, player)

    def position(self, session: PlayState, player: int) -> tuple[int, int]:
        """(hand of a repeated match, betting round) of `player`'s move now."""
        return 0, 1

    def table(self, session: PlayState) -> list[tuple[str, str]]:
        """(label, value) rows describing the game now, from the person's own view."""
        obs = session.observation()
        return [(str(key), short_value(value)) for key, value in obs.items() if key != "legal_actions"]

    def rounds(self, session: PlayState) -> list[Round]:
        """The finished rounds of a repeated game, oldest first (none in one-shot games)."""
        return []

    def showdown(self, session: PlayState) -> Showdown | None:
        """How a finished one-hand game ended, where the game has a showdown."""
        return None

    def opponent_saw(self, session: PlayState, index: int, move: PlayMove) -> str:
        """What the opponent saw when it made `session.moves[index]`, in words.

        By default the observation's fields by name ("my score 3; opp moves
        Rock, Paper"); the legal actions are left out (its choices are listed
        with the move)."""
        obs = move.observation or {}
        return "; ".join(
            f"{str(key).replace('_', ' ')} {short_value(value)}"
            for key, value in obs.items()
            if key not in ("legal_actions", "legal_action_names")
        )

    def choice_label(self, session: PlayState, move: PlayMove, action: int) -> str:
        """One of the opponent's choices at `move` (a mixed policy's), named as at that moment."""
        return session.action_name(action, move.seat)

    def summary(self, session: PlayState) -> str:
        """One line on how a finished game went ("" if there is nothing to add to the result)."""
        hand = self.showdown(session)
        if hand is not None:
            return hand.describe()
        done = self.rounds(session)
        if done:
            wins = sum(1 for r in done if r.result > 0)
            losses = sum(1 for r in done if r.result < 0)
            return f"{len(done)} {self.round_unit}s: won {wins}, lost {losses}, tied {len(done) - wins - losses}"
        return ""
