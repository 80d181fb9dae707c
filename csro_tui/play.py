"""Games played by a person against a policy or a bot (no textual import).

The logic of the play screen, usable (and tested) without the UI: the
referee's rules apply - chance and the game's automatic actions are applied
here, a code policy runs only in its sandbox host (never in this process)
and sees only its own observations, a benchmark bot steps on the state.
Every opponent decision is recorded with what it saw, so the person can see
afterwards what the bot saw and did.  `PlaySession.record()` is what goes
into the session's `game_played` event (`Engine.record_game`).

A visit to the play screen is a `Match`: a series of games against one
opponent with a running total.  Each game is dealt from a fresh seed
(`fresh_seed`, from the OS), recorded with the game, so deals never repeat
across visits and any game can be replayed from its record.

The table is described in poker terms where the game is poker (`table`,
`action_label`): a Kuhn "Pass" is a check or a fold, a "Bet" a bet or a
call; a Leduc "Call" with nothing to call is a check and a "Raise" with
nothing bet is a bet.  Repeated games list their rounds or hands with the
result of each (`rounds`).
"""

from __future__ import annotations

import json
import os
import random
from dataclasses import dataclass, field
from typing import Any, Callable

from csro_tui.evaluation.participants import BotPolicy, CodePolicy, Participant, find_bot
from csro_tui.evaluation.referee import episode_streams, sample, sample_chance, seed_native_rng

EPISODE_ID = 0
YOU = "you"

KUHN, LEDUC, REPEATED_LEDUC, RRPS, OTHER = "kuhn", "leduc", "repeated_leduc", "rrps", "other"
LEDUC_BET_SIZES = (2, 4)  # fixed-limit raise per round
KUHN_BET_SIZE = 1


def game_kind(spec: Any) -> str:
    """Which table the play screen draws for `spec`."""
    name = str(getattr(spec, "name", ""))
    for prefix, kind in (("kuhn_poker", KUHN), ("leduc_poker", LEDUC), ("repeated_leduc", REPEATED_LEDUC), ("rrps", RRPS)):
        if name == prefix or name.startswith(prefix + "("):
            return kind
    return OTHER


def fresh_seed() -> int:
    """A seed nobody chose: a new deal every game, across visits and launches."""
    return int.from_bytes(os.urandom(4), "little") & 0x7FFFFFFF


def signed(value: float, digits: int = 0) -> str:
    """`+2`, `-1`, `0` (never `-0`)."""
    if abs(value) < 0.5 * 10 ** (-digits):
        value = 0.0
    text = f"{value:+.{digits}f}" if digits else f"{value:+g}"
    return "0" if value == 0 else text


def outcome_word(value: float) -> str:
    return "won" if value > 0 else "lost" if value < 0 else "tied"


@dataclass
class Move:
    """One decision in the game, by the person or the opponent."""

    seat: int
    who: str  # "you" or the opponent's name
    action: int
    action_name: str  # the game's own name ("Pass", "Call", "Rock")
    observation: dict[str, Any] | None = None  # what the opponent saw (opponent moves only)
    distribution: dict[int, float] | None = None  # what a code policy returned, if mixed
    label: str = ""  # in poker terms at that moment ("Check", "Call 2"); the game's name otherwise
    hand: int = 0  # the hand of a repeated poker match
    round: int = 1  # the betting round (poker)

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"seat": self.seat, "who": self.who, "action": self.action, "name": self.action_name}
        if self.label and self.label != self.action_name:
            data["label"] = self.label
        if self.observation is not None:
            data["obs"] = self.observation
        if self.distribution is not None:
            data["distribution"] = {str(k): v for k, v in self.distribution.items()}
        return data


@dataclass
class PlaySession:
    """A game of `spec` between the person (in `seat`) and `opponent`."""

    spec: Any
    opponent: Participant
    seat: int = 0
    seed: int = 0
    policy_id: str | None = None  # the population member played, if any
    host_factory: Callable[..., Any] | None = None
    moves: list[Move] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.opponent_seat = 1 - self.seat
        referee_seed, _, opponent_seed = episode_streams(self.seed)
        self.rng = random.Random(referee_seed)
        self.kind = game_kind(self.spec)
        self.game = self.spec.load()
        self.state = self.game.new_initial_state()
        self.view = self.spec.new_view(self.seat)
        self.opponent_view = self.spec.new_view(self.opponent_seat)
        self.names = list(self.spec.game_info().get("action_names") or [])
        self.host = None
        self.agent = None
        self.failure: str | None = None  # why the game stopped early, if it did
        seed_native_rng(self.seed)
        if isinstance(self.opponent, CodePolicy):
            factory = self.host_factory or _default_host_factory()
            self.host = factory(self.opponent.source, self.spec.game_info(), name=self.opponent.name)
            try:
                self.host.start()
                self.host.new_episodes([(EPISODE_ID, self.opponent_seat, opponent_seed)])
            except BaseException:
                self.close()
                raise
        else:
            self.agent = find_bot(self.spec, self.opponent.name).make(self.opponent_seat, opponent_seed)
        self.advance()

    # ------------------------------------------------------------------ queries
    @property
    def opponent_name(self) -> str:
        return self.opponent.name

    @property
    def finished(self) -> bool:
        return self.state.is_terminal()

    def returns(self) -> list[float]:
        return [float(r) for r in self.state.returns()]

    def my_return(self) -> float:
        return self.returns()[self.seat]

    def observation(self) -> dict[str, Any]:
        """What the person may know now (their own view, as a policy would)."""
        return self.view.observe(self.state)

    def action_name(self, action: int, player: int | None = None) -> str:
        if 0 <= action < len(self.names) and str(self.names[action]) != str(action):
            return str(self.names[action])
        # a generic game whose actions are named only in a state (liars_dice's bids "1-1", "2-6"):
        # the table held the bare ids, which told a person nothing
        try:
            return str(self.state.action_to_string(self.seat if player is None else player, action))
        except Exception:  # noqa: BLE001 - pyspiel raises SpielError for a name it cannot give
            return str(action)

    def legal_actions(self) -> list[tuple[int, str]]:
        """(action, label) of the person's legal moves, labelled in poker terms where it applies."""
        if self.finished:
            return []
        return [(a, action_label(self, a, self.seat)) for a in self.state.legal_actions(self.seat)]

    def public_state(self) -> str:
        """The full state (both hands): shown only once the game is over."""
        return str(self.state)

    # ------------------------------------------------------------------ moves
    def play(self, action: int) -> None:
        """The person's move; then the game runs on until it is their turn again."""
        if self.finished:
            raise ValueError("the game is over")
        legal = self.state.legal_actions(self.seat)
        if action not in legal:
            raise ValueError(f"{self.action_name(action)} is not legal now")
        mine = self._move(self.seat, YOU, action)
        if self.state.is_simultaneous_node():
            theirs = self._opponent_move()
            joint = [0, 0]
            joint[self.seat], joint[self.opponent_seat] = action, theirs.action
            self.moves += [mine, theirs]  # yours first: you threw, then the bot's throw is revealed
            self.state.apply_actions(joint)
        else:
            self.moves.append(mine)
            self.state.apply_action(action)
        self.advance()

    def advance(self) -> None:
        """Apply chance, automatic and opponent moves until the person must act."""
        state = self.state
        while not state.is_terminal():
            if state.is_chance_node():
                state.apply_action(sample_chance(state, self.rng))
                continue
            auto = self.spec.auto_action(state)
            if auto is not None:
                state.apply_action(auto)
                continue
            if state.is_simultaneous_node() or state.current_player() == self.seat:
                break
            move = self._opponent_move()
            self.moves.append(move)
            state.apply_action(move.action)
        if state.is_terminal():
            self._end()

    def _move(self, player: int, who: str, action: int, **extra: Any) -> Move:
        hand, betting_round = poker_position(self, player)
        return Move(player, who, action, self.action_name(action, player), label=action_label(self, action, player),
                    hand=hand, round=betting_round, **extra)

    def _opponent_move(self) -> Move:
        seen = self.opponent_view.observe(self.state)
        distribution = None
        if self.agent is not None:
            action = int(self.agent.step(self.state))
        else:
            answer = self.host.act([(EPISODE_ID, seen)])[0]
            if isinstance(answer, dict):
                distribution = {int(k): float(v) for k, v in answer.items()}
                action = sample(distribution, self.rng)
            else:
                action = int(answer)
        # views may reuse growing lists between calls: keep a copy of what was seen then
        snapshot = json.loads(json.dumps(seen))
        return self._move(self.opponent_seat, self.opponent.name, action, observation=snapshot, distribution=distribution)

    def _end(self) -> None:
        if self.host is not None:
            try:
                self.host.end_episodes([EPISODE_ID])
            finally:
                self.close()

    def close(self) -> None:
        if self.host is not None:
            try:
                self.host.close()
            finally:
                self.host = None

    # ------------------------------------------------------------------ record
    def opponent_moves(self) -> list[Move]:
        return [m for m in self.moves if m.who != YOU]

    def transcript(self) -> list[dict[str, Any]]:
        return [m.to_json() for m in self.moves]

    def record(self) -> dict[str, Any]:
        """Fields of the session's `game_played` event."""
        return {
            "policy_id": self.policy_id,
            "opponent": self.opponent.name,
            "seat": self.seat,
            "transcript": self.transcript(),
            "returns": self.returns(),
            "seed": self.seed,
        }


def _default_host_factory() -> Callable[..., Any]:
    from csro_tui.policies.sandbox import PolicyHost

    return PolicyHost


def opponent_for(member_id: str | None, name: str, source: str | None) -> Participant:
    """A population member (code) or a benchmark bot, as a participant."""
    if source is not None:
        return CodePolicy(member_id or name, source)
    return BotPolicy(name)


# ---------------------------------------------------------------------- poker terms


def _poker_observation(session: PlaySession, player: int) -> dict[str, Any] | None:
    """`player`'s poker observation now (None outside a hand or in other games)."""
    from csro_tui.games import poker

    state = session.state
    if state.is_terminal() or state.is_chance_node() or session.kind not in (KUHN, LEDUC, REPEATED_LEDUC):
        return None
    info = state.information_state_string(player)
    legal = state.legal_actions(player)
    if session.kind == KUHN:
        return poker.kuhn_observation(info, player, legal)
    if session.kind == REPEATED_LEDUC:
        if not info.startswith("Hand "):
            return None
        header, info = info.split("\n", 1)
        obs = poker.leduc_observation(info, player, legal)
        obs["hand"] = int(header.split()[1])
        return obs
    return poker.leduc_observation(info, player, legal)


def poker_position(session: PlaySession, player: int) -> tuple[int, int]:
    """(hand index, betting round) for `player` now; (0, 1) outside poker."""
    obs = _poker_observation(session, player)
    if obs is None:
        return 0, 1
    return int(obs.get("hand", 0)), int(obs.get("round") or 1)


def action_label(session: PlaySession, action: int, player: int) -> str:
    """`action` as a poker player would name it now: Check / Bet 2 / Call 2 / Raise 4 / Fold."""
    return poker_label(session.kind, session.action_name(action, player), action, _poker_observation(session, player))


def poker_label(kind: str, name: str, action: int, obs: dict[str, Any] | None) -> str:
    """`action` (the game's `name` for it) in poker terms for a player who sees `obs`
    (a Kuhn or Leduc observation); `name` itself outside poker."""
    if obs is None or kind not in (KUHN, LEDUC, REPEATED_LEDUC):
        return name
    to_call = int(obs["to_call"])
    if kind == KUHN:
        if action == 0:
            return "Fold" if to_call else "Check"
        return f"Call {to_call}" if to_call else f"Bet {KUHN_BET_SIZE}"
    size = LEDUC_BET_SIZES[min(int(obs["round"] or 1), 2) - 1]
    if action == 0:
        return "Fold"
    if action == 1:
        return f"Call {to_call}" if to_call else "Check"
    if action == 2:
        return f"Raise {size} (put in {to_call + size})" if to_call else f"Bet {size}"
    return name


# ---------------------------------------------------------------------- the table


@dataclass(frozen=True)
class Round:
    """One round of a repeated game (an RRPS throw, a repeated-Leduc hand), finished."""

    number: int  # from 1
    mine: str  # your throw / your card
    theirs: str  # their throw / their card if shown, "?" if not
    result: float  # your result in it
    detail: str = ""  # how it ended: "showdown", "you folded", "they folded"
    total: float = 0.0  # your total after it
    board: str = ""  # the public card, if it was dealt


def rounds(session: PlaySession) -> list[Round]:
    """The finished rounds or hands of a repeated game, oldest first (empty otherwise)."""
    if session.kind == RRPS:
        from csro_tui.games.rrps import throw_score

        mine = [m for m in session.moves if m.who == YOU]
        theirs = [m for m in session.moves if m.who != YOU]
        rows, total = [], 0.0
        for n, (a, b) in enumerate(zip(mine, theirs), start=1):
            score = float(throw_score(a.action, b.action))
            total += score
            rows.append(Round(n, a.action_name, b.action_name, score, total=total))
        return rows
    if session.kind == REPEATED_LEDUC:
        rows, total = [], 0.0
        for hand in session.observation().get("history", []):
            total += float(hand["my_result"])
            if hand["showdown"]:
                detail = "showdown"
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
    return []


def rounds_total(session: PlaySession) -> int:
    """How many rounds / hands the repeated game has (1 for one-shot games)."""
    params = getattr(session.spec, "params", {}) or {}
    if session.kind == RRPS:
        return int(params.get("num_repetitions", 1))
    if session.kind == REPEATED_LEDUC:
        return int(params.get("num_hands", 1))
    return 1


@dataclass(frozen=True)
class Showdown:
    """How a finished one-hand poker game ended."""

    my_card: str
    their_card: str | None  # None when a fold kept it hidden
    board: str | None
    folded: str | None  # "you", "them" or None (a showdown)

    def describe(self) -> str:
        board = f", board {self.board}" if self.board else ""
        if self.folded == "you":
            return f"you folded with {self.my_card}{board}"
        if self.folded == "them":
            return f"they folded; you had {self.my_card}{board}"
        return f"showdown: you {self.my_card}, they {self.their_card}{board}"


def showdown(session: PlaySession) -> Showdown | None:
    """Cards of a finished Kuhn or Leduc hand (theirs only if shown)."""
    from csro_tui.games import poker

    if not session.finished or session.kind not in (KUHN, LEDUC):
        return None
    last = session.moves[-1] if session.moves else None
    folded = None
    if last is not None and last.label == "Fold":
        folded = "you" if last.who == YOU else "them"
    state = session.state
    if session.kind == KUHN:
        cards = [a.action for a in state.full_history() if a.player == -1][:2]
        mine, theirs, board = poker.kuhn_card_name(cards[session.seat]), poker.kuhn_card_name(cards[1 - session.seat]), None
    else:
        mine = poker.leduc_card_name(state.private_card(session.seat))
        theirs = poker.leduc_card_name(state.private_card(1 - session.seat))
        board = poker.leduc_card_name(state.public_card())
    return Showdown(str(mine), None if folded else str(theirs), board, folded)


def table(session: PlaySession) -> list[tuple[str, str]]:
    """(label, value) rows describing the game now, from the person's own view."""
    if session.finished:
        return []
    obs = session.observation()
    if session.kind in (KUHN, LEDUC, REPEATED_LEDUC):
        rows = []
        if session.kind == REPEATED_LEDUC:
            rows.append(("Hand", f"{int(obs.get('hand', 0)) + 1} of {rounds_total(session)}"))
            rows.append(("Match", f"you {signed(float(obs.get('my_total', 0.0)))} so far"))
        rows.append(("Your card", str(obs.get("card") or "-")))
        if session.kind != KUHN:
            rows.append(("Board", str(obs.get("public_card") or "not dealt yet")))
            rows.append(("Round", f"{obs.get('round') or 1} of 2 (bets of {LEDUC_BET_SIZES[min(int(obs.get('round') or 1), 2) - 1]})"))
        rows.append(("Pot", str(obs.get("pot", 0))))
        rows.append(("Put in", f"you {obs.get('my_contribution', 0)}, them {obs.get('opp_contribution', 0)}"))
        rows.append(("To call", str(obs.get("to_call", 0))))
        rows.append(("Betting", betting_line(session)))
        return rows
    if session.kind == RRPS:
        done = rounds(session)
        rows = [("Round", f"{len(done) + 1} of {rounds_total(session)}")]
        total = done[-1].total if done else 0.0
        wins = sum(1 for r in done if r.result > 0)
        losses = sum(1 for r in done if r.result < 0)
        rows.append(("Score", f"{signed(total)} (won {wins}, lost {losses}, tied {len(done) - wins - losses})"))
        if done:
            last = done[-1]
            rows.append(("Last throw", f"you {last.mine}, them {last.theirs}: you {outcome_word(last.result)}"))
        return rows
    return [(str(key), _short(value)) for key, value in obs.items() if key != "legal_actions"]


def betting_line(session: PlaySession) -> str:
    """This hand's moves so far, round by round, in poker terms."""
    hand, _ = poker_position(session, session.seat)
    return betting_text([m for m in session.moves if m.hand == hand])


def betting_text(moves: list[Move]) -> str:
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


@dataclass(frozen=True)
class OpponentDecision:
    """One decision of the opponent in a finished one-hand game, told in the play screen's terms."""

    saw: str  # "held K, pot 3, 1 to call, after r1: you Bet 1"
    did: str  # "Call 1"
    policy: str = ""  # a mixed policy's probabilities: "Fold 0.40, Call 1 0.60"


def opponent_decisions(session: PlaySession) -> list[OpponentDecision]:
    """What the opponent saw and did at each of its decisions.  Poker in poker terms
    (its card, hidden if a fold ended the hand, the board, the pot, what it had to
    call and the betting before it); other games list the observation's fields."""
    hand = showdown(session)
    hidden = hand is not None and hand.folded is not None  # a fold keeps their card hidden
    decisions = []
    for index, move in enumerate(session.moves):
        if move.who == YOU:
            continue
        obs = move.observation or {}
        poker = session.kind in (KUHN, LEDUC) and "to_call" in obs
        if poker:
            card = "? (hidden: the hand ended in a fold)" if hidden else str(obs.get("card") or "?")
            parts = [f"held {card}"]
            if session.kind == LEDUC:
                parts.append(f"board {obs.get('public_card') or 'not dealt'}")
            to_call = int(obs.get("to_call", 0))
            parts += [f"pot {obs.get('pot', 0)}", f"{to_call} to call" if to_call else "nothing to call"]
            before = [m for m in session.moves[:index] if m.hand == move.hand]
            parts.append(f"after {betting_text(before)}" if before else "first to act")
            saw = ", ".join(parts)
        else:
            saw = "; ".join(f"{key} {_short(value)}" for key, value in obs.items() if key != "legal_actions")
        policy = ""
        if move.distribution:
            names = [
                (poker_label(session.kind, session.action_name(a, move.seat), a, obs if poker else None), p)
                for a, p in move.distribution.items()
            ]
            policy = ", ".join(f"{label} {p:.2f}" for label, p in names)
        decisions.append(OpponentDecision(saw, move.label, policy))
    return decisions


MAX_LIST_ITEMS = 12


def _short(value: Any) -> str:
    if isinstance(value, list) and all(isinstance(v, (str, int, float)) for v in value):
        if len(value) > MAX_LIST_ITEMS:
            return f"… {len(value) - MAX_LIST_ITEMS} earlier, " + ", ".join(map(str, value[-MAX_LIST_ITEMS:]))
        return ", ".join(map(str, value)) or "-"
    if isinstance(value, (dict, list)):
        text = json.dumps(value)
        return text if len(text) < 200 else text[:197] + "…"
    return str(value)


# ---------------------------------------------------------------------- the match


@dataclass(frozen=True)
class GameResult:
    """One finished game of a match."""

    number: int  # from 1
    seat: int
    result: float  # your return
    summary: str  # cards at showdown / rounds won, one line
    seed: int


@dataclass
class Match:
    """The games of one visit against one opponent, with the running total."""

    opponent: str
    games: list[GameResult] = field(default_factory=list)

    @property
    def total(self) -> float:
        return sum(g.result for g in self.games)

    def tally(self) -> tuple[int, int, int]:
        wins = sum(1 for g in self.games if g.result > 0)
        losses = sum(1 for g in self.games if g.result < 0)
        return wins, losses, len(self.games) - wins - losses

    def add(self, session: PlaySession) -> GameResult:
        result = GameResult(len(self.games) + 1, session.seat, session.my_return(), game_summary(session), session.seed)
        self.games.append(result)
        return result

    def describe(self) -> str:
        wins, losses, ties = self.tally()
        games = f"{len(self.games)} game" + ("s" if len(self.games) != 1 else "")
        return f"{games} · total {signed(self.total)} · won {wins}, lost {losses}, tied {ties}"


def game_summary(session: PlaySession) -> str:
    """One line on how a finished game went."""
    if session.failure:
        return f"stopped: {session.failure}"
    hand = showdown(session)
    if hand is not None:
        return hand.describe()
    done = rounds(session)
    if done:
        wins = sum(1 for r in done if r.result > 0)
        losses = sum(1 for r in done if r.result < 0)
        unit = "hands" if session.kind == REPEATED_LEDUC else "rounds"
        return f"{len(done)} {unit}: won {wins}, lost {losses}, tied {len(done) - wins - losses}"
    return ""
