"""Repeated Leduc poker: OpenSpiel's `repeated_leduc_poker(num_hands=N)`.

Each hand is an independent game of Leduc poker (stacks reset, player 0
acts first in every hand); the return is the sum over hands.  Between hands
the only legal action is "Continue" (id 3), which the referee applies itself
(`auto_action`), so a policy is only asked during hands.

The view is stateful.  During a hand the information-state string is
'Hand k\\n' + the leduc_poker information-state string, which gives the
current hand's observation exactly as in Leduc.  Finished hands are
reconstructed from `state.history()` (read only when a new hand starts) by
replaying each hand on a private leduc_poker state.  OpenSpiel's
between-hands text lists both private cards even after a fold; a real table
shows cards only at a showdown, so a hand's record carries the opponent's
card only when the hand reached a showdown.

Benchmark: the Leduc bots (CFR+, always-call, always-fold) playing every
hand as Leduc: the repeated information-state string minus its first line
is the leduc_poker information-state string.
"""

from __future__ import annotations

from functools import lru_cache

import pyspiel

from csro_tui.errors import UnknownGameError
from csro_tui.games import poker
from csro_tui.games.base import BenchmarkBot, GameSpec, ObservationView
from csro_tui.games.leduc import LEDUC_OBSERVATION_KEYS, LEDUC_RULES, leduc_benchmark
from csro_tui.games.poker_play import RepeatedLeducPresentation
from csro_tui.games.presentation import Presentation
from csro_tui.games import behaviour
from csro_tui.games.base import Situation

CONTINUE = 3
DEFAULT_HANDS = 100
ACTION_NAMES = [*poker.LEDUC_ACTION_NAMES, "Continue"]


def leduc_info_state(repeated_info_state: str) -> str:
    """The leduc_poker information-state string inside a repeated-game one.

    'Hand 3\\n[Observer: 0][Private: 1]...' -> '[Observer: 0][Private: 1]...'
    """
    return repeated_info_state.split("\n", 1)[1]


@lru_cache(maxsize=None)
def _leduc_game() -> pyspiel.Game:
    return pyspiel.load_game("leduc_poker")


RULES_TEXT = """\
Repeated Leduc poker: {n} hands of Leduc poker against the same opponent.
Every hand is independent: stacks reset, player 0 acts first in every hand
(your seat stays the same for the whole match). Your return is the sum of
your results over all hands. Between hands the game waits for a "Continue"
action (id 3); it is applied for you and never offered to your policy.
You keep memory across hands on self, and obs["history"] lists the finished
hands, so you can learn the opponent's tendencies (how often it folds,
bluffs, raises with weak cards) and adapt.
Each hand:
""" + LEDUC_RULES

OBSERVATION_TEXT = (
    "obs keys (repeated Leduc poker): the current hand, as in Leduc poker:\n"
    + LEDUC_OBSERVATION_KEYS
    + """\
plus the match so far:
- hand: index of the current hand (0 for the first).
- history: one dict per finished hand, oldest first; it only grows:
  {"hand": index, "my_result": chips won (+) or lost (-) in that hand,
   "showdown": true if the hand was decided by showing cards,
   "folded": "me", "opponent" or None (None when showdown),
   "my_card": your card, "public_card": the public card or None if the hand
   ended before it was revealed, "opp_card": the opponent's card if it was
   shown at a showdown, else None (folded hands stay hidden),
   "betting": the hand's moves, one list per round as in betting above}.
- my_total: your total result over the finished hands.
"""
)


class RepeatedLeducView(ObservationView):
    """Current hand from the info state; finished hands replayed from history."""

    def __init__(self, player: int) -> None:
        super().__init__(player)
        self._history: list[dict] = []  # finished hands; grows in place
        self._total = 0.0
        self._cursor = 0  # next index of state.history() to replay
        self._new_hand()

    def observe(self, state: pyspiel.State) -> dict:
        info_state = state.information_state_string(self.player)
        in_hand = info_state.startswith("Hand ") and not state.is_terminal()
        if in_hand:
            header, leduc_state_string = info_state.split("\n", 1)
            hand_index = int(header.split()[1])
        if not in_hand or hand_index > len(self._history):
            self._replay(state.history())
        if in_hand:
            obs = poker.leduc_observation(
                leduc_state_string, self.player, state.legal_actions(self.player)
            )
        else:  # between hands or after the last one; policies are not asked here
            hand_index = len(self._history)
            obs = {
                "card": None, "public_card": None, "round": None, "betting": [],
                "pot": 0, "my_contribution": 0, "opp_contribution": 0, "to_call": 0,
                "legal_actions": state.legal_actions(self.player),
            }
        obs["hand"] = hand_index
        obs["history"] = self._history
        obs["my_total"] = self._total
        return obs

    # -- replaying finished hands -------------------------------------------

    def _new_hand(self) -> None:
        self._hand = _leduc_game().new_initial_state()
        self._folded_by: int | None = None
        self._continues_due = 0

    def _replay(self, history: list[int]) -> None:
        for action in history[self._cursor:]:
            if self._continues_due:
                # Between hands: one Continue per player, then a new hand.
                self._continues_due -= 1
                if self._continues_due == 0:
                    self._new_hand()
                continue
            if not self._hand.is_chance_node() and action == poker.LEDUC_FOLD:
                self._folded_by = self._hand.current_player()
            self._hand.apply_action(action)
            if self._hand.is_terminal():
                self._finish_hand()
                self._continues_due = 2
        self._cursor = len(history)

    def _finish_hand(self) -> None:
        hand = self._hand
        me, opponent = self.player, 1 - self.player
        showdown = self._folded_by is None
        public = hand.public_card()
        result = float(hand.returns()[me])
        self._history.append(
            {
                "hand": len(self._history),
                "my_result": result,
                "showdown": showdown,
                "folded": None if showdown else ("me" if self._folded_by == me else "opponent"),
                "my_card": poker.leduc_card_name(hand.private_card(me)),
                "public_card": poker.leduc_card_name(public),
                "opp_card": poker.leduc_card_name(hand.private_card(opponent)) if showdown else None,
                "betting": [
                    [poker.LEDUC_ACTION_NAMES[a] for a in actions]
                    for actions in (hand.round1(), hand.round2())
                    if actions
                ],
            }
        )
        self._total += result


class RepeatedLeducSpec(GameSpec):
    title = "Repeated Leduc poker"
    observation_text = OBSERVATION_TEXT
    exact = False
    seat_roles = ("first to act in every hand", "second to act in every hand")
    default_episodes = 20
    profile_episodes = 40  # per probe
    seed_dir = "repeated_leduc"

    def __init__(self, num_hands: int = DEFAULT_HANDS) -> None:
        super().__init__()
        if not isinstance(num_hands, int) or isinstance(num_hands, bool) or num_hands < 1:
            raise UnknownGameError(f"repeated_leduc: num_hands must be a positive integer, got {num_hands!r}")
        self.num_hands = num_hands
        self.params = {"num_hands": num_hands}
        self.name = "repeated_leduc" if num_hands == DEFAULT_HANDS else f"repeated_leduc(num_hands={num_hands})"
        self.game_string = f"repeated_leduc_poker(num_hands={num_hands})"
        self.rules_text = RULES_TEXT.format(n=num_hands)

    def action_names(self) -> list[str]:
        return list(ACTION_NAMES)

    def new_view(self, player: int) -> ObservationView:
        return RepeatedLeducView(player)

    def presentation(self) -> Presentation:
        return RepeatedLeducPresentation(self)

    def situation(self, observation: dict) -> Situation:
        return behaviour.leduc_situation(observation)

    def behaviour_probes(self) -> list[BenchmarkBot]:
        def observe(state: pyspiel.State, player: int) -> dict:
            leduc = leduc_info_state(state.information_state_string(player))
            return poker.leduc_observation(leduc, player, state.legal_actions(player))

        return behaviour.repeated_leduc_probes(CONTINUE, observe)

    def auto_action(self, state: pyspiel.State) -> int | None:
        if state.is_terminal() or state.is_chance_node():
            return None
        return CONTINUE if state.legal_actions() == [CONTINUE] else None

    def benchmark(self) -> list[BenchmarkBot]:
        return leduc_benchmark(_play_as_leduc, exact=False, include_uniform=False)


def _play_as_leduc(rule: poker.InfoStateRule) -> poker.InfoStateRule:
    """A Leduc rule applied to each hand; Continue between hands."""

    def repeated_rule(info_state: str, legal: list[int]) -> dict[int, float]:
        if legal == [CONTINUE]:
            return {CONTINUE: 1.0}
        return rule(leduc_info_state(info_state), legal)

    return repeated_rule
