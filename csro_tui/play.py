"""One game played by a person against a policy or a bot (no textual import).

The logic of the play screen, usable (and tested) without the UI: the
referee's rules apply - chance and the game's automatic actions are applied
here, a code policy runs only in its sandbox host (never in this process)
and sees only its own observations, a benchmark bot steps on the state.
Every opponent decision is recorded with what it saw, so the person can see
afterwards what the bot saw and did.  `transcript()` is what goes into the
session's `game_played` event (`Engine.record_game`).
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from typing import Any, Callable

from csro_tui.evaluation.participants import BotPolicy, CodePolicy, Participant, find_bot
from csro_tui.evaluation.referee import episode_streams, sample, sample_chance, seed_native_rng

EPISODE_ID = 0


@dataclass
class Move:
    """One decision in the game, by the person or the opponent."""

    seat: int
    who: str  # "you" or the opponent's name
    action: int
    action_name: str
    observation: dict[str, Any] | None = None  # what the opponent saw (opponent moves only)
    distribution: dict[int, float] | None = None  # what a code policy returned, if mixed

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"seat": self.seat, "who": self.who, "action": self.action, "name": self.action_name}
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
        self.game = self.spec.load()
        self.state = self.game.new_initial_state()
        self.view = self.spec.new_view(self.seat)
        self.opponent_view = self.spec.new_view(self.opponent_seat)
        self.names = list(self.spec.game_info().get("action_names") or [])
        self.host = None
        self.agent = None
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
        self._pending: int | None = None  # the opponent's move at a simultaneous node
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
        if 0 <= action < len(self.names):
            return str(self.names[action])
        return self.state.action_to_string(self.seat if player is None else player, action)

    def legal_actions(self) -> list[tuple[int, str]]:
        if self.finished:
            return []
        return [(a, self.action_name(a)) for a in self.state.legal_actions(self.seat)]

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
        if self.state.is_simultaneous_node():
            opponent_action = self._opponent_move()
            joint = [0, 0]
            joint[self.seat], joint[self.opponent_seat] = action, opponent_action
            self.moves.append(Move(self.seat, "you", action, self.action_name(action)))
            self.state.apply_actions(joint)
        else:
            self.moves.append(Move(self.seat, "you", action, self.action_name(action)))
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
            state.apply_action(self._opponent_move())
        if state.is_terminal():
            self._end()

    def _opponent_move(self) -> int:
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
        self.moves.append(
            Move(self.opponent_seat, self.opponent.name, action, self.action_name(action, self.opponent_seat), snapshot, distribution)
        )
        return action

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
        return [m for m in self.moves if m.who != "you"]

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
