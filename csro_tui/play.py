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

How the game is shown - moves named as a player would name them at that
moment (a Kuhn "Pass" is a check or a fold), the table, the rounds of a
repeated game, the showdown, what the opponent saw - is the game's own
(`spec.presentation()`, csro_tui/games/presentation.py); this module keeps
the match logic, which is the same for every game.
"""

from __future__ import annotations

import json
import os
import random
from dataclasses import dataclass, field
from typing import Any, Callable

from csro_tui.evaluation.participants import BotPolicy, CodePolicy, Participant, find_bot
from csro_tui.evaluation.referee import episode_streams, sample, sample_chance, seed_native_rng
from csro_tui.games.presentation import YOU, Round, Showdown, outcome_word, signed  # noqa: F401 - the play API

EPISODE_ID = 0


def fresh_seed() -> int:
    """A seed nobody chose: a new deal every game, across visits and launches."""
    return int.from_bytes(os.urandom(4), "little") & 0x7FFFFFFF


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
        self.presentation = self.spec.presentation()
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
        """The game's name for `player`'s `action` now (the person's seat by default).

        The state names it for the player who makes it: the game's list is one
        player's names (tic-tac-toe's o moves were shown as "x(0,2)"), and some
        games name their actions only in a state (liars_dice_ir's bids "1-1")."""
        try:
            name = str(self.state.action_to_string(self.seat if player is None else player, action))
        except Exception:  # noqa: BLE001 - pyspiel raises SpielError for a name it cannot give
            name = ""
        if name and not name.startswith("Action(id="):
            return name
        if 0 <= action < len(self.names) and str(self.names[action]) != str(action):
            return str(self.names[action])
        return name or str(action)

    def legal_actions(self) -> list[tuple[int, str]]:
        """(action, label) of the person's legal moves, named as the game names them now."""
        if self.finished:
            return []
        return [(a, self.presentation.move_label(self, a, self.seat)) for a in self.state.legal_actions(self.seat)]

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
        hand, betting_round = self.presentation.position(self, player)
        label = self.presentation.move_label(self, action, player)
        return Move(player, who, action, self.action_name(action, player), label=label,
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
    from csro_tui.sandbox.sandbox import PolicyHost  # start-up time: importing it loads orjson, rich

    return PolicyHost


def opponent_for(member_id: str | None, name: str, source: str | None) -> Participant:
    """A population member (code) or a benchmark bot, as a participant."""
    if source is not None:
        return CodePolicy(member_id or name, source)
    return BotPolicy(name)


# ---------------------------------------------------------------------- the table (the game's presentation)


def rounds(session: PlaySession) -> list[Round]:
    """The finished rounds or hands of a repeated game, oldest first (empty otherwise)."""
    return session.presentation.rounds(session)


def rounds_total(session: PlaySession) -> int:
    """How many rounds / hands the repeated game has (1 for one-shot games)."""
    return session.presentation.rounds_total()


def showdown(session: PlaySession) -> Showdown | None:
    """How a finished one-hand game ended (cards, theirs only if shown), where it has a showdown."""
    return session.presentation.showdown(session) if session.finished else None


def table(session: PlaySession) -> list[tuple[str, str]]:
    """(label, value) rows describing the game now, from the person's own view."""
    if session.finished:
        return []
    return session.presentation.table(session)


@dataclass(frozen=True)
class OpponentDecision:
    """One decision of the opponent in a finished one-hand game, told in the play screen's terms."""

    saw: str  # "held K, pot 3, 1 to call, after r1: you Bet 1"
    did: str  # "Call 1"
    policy: str = ""  # a mixed policy's probabilities: "Fold 0.40, Call 1 0.60"


def opponent_decisions(session: PlaySession) -> list[OpponentDecision]:
    """What the opponent saw and did at each of its decisions, in the game's own terms
    (poker: its card, hidden if a fold ended the hand, the board, the pot, what it had
    to call and the betting before it)."""
    shown = session.presentation
    decisions = []
    for index, move in enumerate(session.moves):
        if move.who == YOU:
            continue
        policy = ""
        if move.distribution:
            policy = ", ".join(f"{shown.choice_label(session, move, a)} {p:.2f}" for a, p in move.distribution.items())
        decisions.append(OpponentDecision(shown.opponent_saw(session, index, move), move.label, policy))
    return decisions


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
    return session.presentation.summary(session)
