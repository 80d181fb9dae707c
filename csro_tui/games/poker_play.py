"""Kuhn, Leduc and repeated Leduc at the play screen, in poker terms.

A Kuhn "Pass" is a check or a fold and a "Bet" a bet or a call; a Leduc
"Call" with nothing to call is a check and a "Raise" with nothing bet is a
bet, with the round's fixed size.  The table shows the person's card, the
board, the pot and the betting so far; a showdown says why the winner won
(a pair with the board, or the higher card).  Everything is read from the
acting player's information-state string (`poker.kuhn_observation`,
`poker.leduc_observation`), so nothing hidden is ever shown before the end.
"""

from __future__ import annotations

from typing import Any

from csro_tui.games import poker
from csro_tui.games.presentation import (
    YOU,
    PlayMove,
    PlayState,
    Presentation,
    Round,
    Showdown,
    signed,
)

LEDUC_BET_SIZES = (2, 4)  # fixed-limit raise per round
KUHN_BET_SIZE = 1


def betting_text(moves: list[PlayMove]) -> str:
    """`moves` of one hand, round by round, in poker terms from the person's side ("-" for none)."""
    if not moves:
        return "-"
    parts: list[str] = []
    current = None
    for move in moves:
        who = YOU if move.who == YOU else "them"
        text = f"{who} {move.label}"
        if move.round != current:
            current = move.round
            parts.append(f"r{move.round}: {text}")
        else:
            parts[-1] += f", {text}"
    return " │ ".join(parts)


def showdown_reason(mine: str, theirs: str, board: str | None) -> str:
    """Why a Leduc showdown went as it did: a pair with the board beats any other hand,
    then the higher card; equal ranks split."""
    if board is not None:
        if theirs == board:
            return "they paired the board"
        if mine == board:
            return "you paired the board"
    if mine == theirs:
        return "equal cards split the pot"
    order = poker.RANKS
    if order.index(mine) > order.index(theirs):
        return f"your {mine} beats their {theirs}"
    return f"their {theirs} beats your {mine}"


class PokerPresentation(Presentation):
    """Shared by the three poker games: labels, betting line and the opponent's view."""

    has_board = True

    def hand_observation(self, session: PlayState, player: int) -> dict[str, Any] | None:
        """`player`'s poker observation now, None outside a hand."""
        raise NotImplementedError

    def bet_size(self, obs: dict[str, Any]) -> int:
        return LEDUC_BET_SIZES[min(int(obs.get("round") or 1), 2) - 1]

    def poker_label(self, name: str, action: int, obs: dict[str, Any] | None) -> str:
        """`action` (the game's `name` for it) in poker terms for a player who sees `obs`."""
        if obs is None:
            return name
        to_call = int(obs["to_call"])
        size = self.bet_size(obs)
        if action == poker.LEDUC_FOLD:
            return "Fold"
        if action == poker.LEDUC_CALL:
            return f"Call {to_call}" if to_call else "Check"
        if action == poker.LEDUC_RAISE:
            return f"Raise {size} (put in {to_call + size})" if to_call else f"Bet {size}"
        return name

    def move_label(self, session: PlayState, action: int, player: int) -> str:
        return self.poker_label(session.action_name(action, player), action, self.hand_observation(session, player))

    def position(self, session: PlayState, player: int) -> tuple[int, int]:
        obs = self.hand_observation(session, player)
        if obs is None:
            return 0, 1
        return int(obs.get("hand", 0)), int(obs.get("round") or 1)

    def betting_line(self, session: PlayState) -> str:
        """This hand's moves so far, round by round, in poker terms."""
        hand, _ = self.position(session, session.seat)
        return betting_text([m for m in session.moves if m.hand == hand])

    def hand_rows(self, session: PlayState, obs: dict[str, Any]) -> list[tuple[str, str]]:
        rows = [("Your card", str(obs.get("card") or "-"))]
        if self.has_board:
            rows.append(("Board", str(obs.get("public_card") or "not dealt yet")))
            rows.append(("Round", f"{obs.get('round') or 1} of 2 (bets of {self.bet_size(obs)})"))
        rows.append(("Pot", str(obs.get("pot", 0))))
        rows.append(("Put in", f"you {obs.get('my_contribution', 0)}, them {obs.get('opp_contribution', 0)}"))
        rows.append(("To call", str(obs.get("to_call", 0))))
        rows.append(("Betting", self.betting_line(session)))
        return rows

    def table(self, session: PlayState) -> list[tuple[str, str]]:
        return self.hand_rows(session, session.observation())

    def opponent_saw(self, session: PlayState, index: int, move: PlayMove) -> str:
        obs = move.observation or {}
        if "to_call" not in obs:
            return super().opponent_saw(session, index, move)
        card = "? (hidden: the hand ended in a fold)" if self.card_hidden(session, move) else str(obs.get("card") or "?")
        parts = [f"held {card}"]
        if self.has_board:
            parts.append(f"board {obs.get('public_card') or 'not dealt'}")
        to_call = int(obs.get("to_call", 0))
        parts += [f"pot {obs.get('pot', 0)}", f"{to_call} to call" if to_call else "nothing to call"]
        before = [m for m in session.moves[:index] if m.hand == move.hand]
        parts.append(f"after {betting_text(before)}" if before else "first to act")
        return ", ".join(parts)

    def card_hidden(self, session: PlayState, move: PlayMove) -> bool:
        """Whether the opponent's card at `move` stays hidden from the person (its hand ended in a fold)."""
        hand = self.showdown(session)
        return hand is None or hand.folded is not None

    def choice_label(self, session: PlayState, move: PlayMove, action: int) -> str:
        obs = move.observation or {}
        return self.poker_label(session.action_name(action, move.seat), action, obs if "to_call" in obs else None)

    def _folded(self, session: PlayState) -> str | None:
        last = session.moves[-1] if session.moves else None
        if last is not None and last.label == "Fold":
            return "you" if last.who == YOU else "them"
        return None


class KuhnPresentation(PokerPresentation):
    has_board = False

    def hand_observation(self, session: PlayState, player: int) -> dict[str, Any] | None:
        state = session.state
        if state.is_terminal() or state.is_chance_node():
            return None
        return poker.kuhn_observation(state.information_state_string(player), player, state.legal_actions(player))

    def poker_label(self, name: str, action: int, obs: dict[str, Any] | None) -> str:
        if obs is None:
            return name
        to_call = int(obs["to_call"])
        if action == poker.KUHN_PASS:
            return "Fold" if to_call else "Check"
        return f"Call {to_call}" if to_call else f"Bet {KUHN_BET_SIZE}"

    def showdown(self, session: PlayState) -> Showdown | None:
        if not session.finished:
            return None
        folded = self._folded(session)
        cards = [a.action for a in session.state.full_history() if a.player == -1][:2]
        mine, theirs = poker.kuhn_card_name(cards[session.seat]), poker.kuhn_card_name(cards[1 - session.seat])
        return Showdown(mine, None if folded else theirs, None, folded)


class LeducPresentation(PokerPresentation):
    def hand_observation(self, session: PlayState, player: int) -> dict[str, Any] | None:
        state = session.state
        if state.is_terminal() or state.is_chance_node():
            return None
        return poker.leduc_observation(state.information_state_string(player), player, state.legal_actions(player))

    def showdown(self, session: PlayState) -> Showdown | None:
        if not session.finished:
            return None
        folded = self._folded(session)
        state = session.state
        mine = str(poker.leduc_card_name(state.private_card(session.seat)))
        theirs = str(poker.leduc_card_name(state.private_card(1 - session.seat)))
        board = poker.leduc_card_name(state.public_card())
        reason = "" if folded else showdown_reason(mine, theirs, board)
        return Showdown(mine, None if folded else theirs, board, folded, reason)


class RepeatedLeducPresentation(LeducPresentation):
    round_unit = "hand"
    results_first = True  # a narrow screen cuts how the hand ended, not what it made

    def rounds_total(self) -> int:
        return int(self.spec.params.get("num_hands", 1))

    def hand_observation(self, session: PlayState, player: int) -> dict[str, Any] | None:
        state = session.state
        if state.is_terminal() or state.is_chance_node():
            return None
        info = state.information_state_string(player)
        if not info.startswith("Hand "):  # between hands
            return None
        header, info = info.split("\n", 1)
        obs = poker.leduc_observation(info, player, state.legal_actions(player))
        obs["hand"] = int(header.split()[1])
        return obs

    def table(self, session: PlayState) -> list[tuple[str, str]]:
        obs = session.observation()
        rows = [
            ("Hand", f"{int(obs.get('hand', 0)) + 1} of {self.rounds_total()}"),
            ("Match", f"you {signed(float(obs.get('my_total', 0.0)))} so far"),
        ]
        return rows + self.hand_rows(session, obs)

    def rounds(self, session: PlayState) -> list[Round]:
        rows, total = [], 0.0
        for hand in session.observation().get("history", []):
            total += float(hand["my_result"])
            if hand["showdown"]:
                reason = showdown_reason(str(hand["my_card"]), str(hand["opp_card"]), hand.get("public_card"))
                detail = f"showdown: {reason}"
            else:
                detail = "you folded" if hand["folded"] == "me" else "they folded"
            rows.append(
                Round(
                    int(hand["hand"]) + 1,
                    str(hand["my_card"]),
                    str(hand["opp_card"]) if hand.get("opp_card") else "?",
                    float(hand["my_result"]),
                    detail=detail,
                    total=total,
                    board=str(hand.get("public_card") or ""),
                )
            )
        return rows

    def showdown(self, session: PlayState) -> Showdown | None:
        return None  # a match of hands: its rounds tell it

    def card_hidden(self, session: PlayState, move: PlayMove) -> bool:
        shown = {row.number - 1: row.theirs != "?" for row in self.rounds(session)}
        return not shown.get(move.hand, False)  # unfinished, or ended in a fold
