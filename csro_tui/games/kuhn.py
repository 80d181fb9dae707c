"""Kuhn poker: OpenSpiel's `kuhn_poker`, small enough for exact evaluation.

The observation is a function of the acting player's information state only
(`poker.kuhn_observation`).  Benchmark: cached CFR+ (near-Nash), always-call,
always-fold and uniform random, all tabular.
"""

from __future__ import annotations

import pyspiel

from csro_tui.games import poker
from csro_tui.games.base import BenchmarkBot, GameSpec, ObservationView
from csro_tui.games.poker_play import KuhnPresentation
from csro_tui.games.presentation import Presentation
from csro_tui.games import behaviour
from csro_tui.games.base import Situation

RULES_TEXT = """\
Kuhn poker (two players, one hand).
Deck: three cards J < Q < K. Each player antes 1 chip and gets one private
card; the third card is never seen. One betting round; player 0 acts first.
Actions: 0 = Pass (check, or fold when facing a bet), 1 = Bet (bet 1 chip, or
call the opponent's bet). Only one bet is possible.
Sequences and results (for the player with the higher card at a showdown):
- Pass, Pass: showdown, higher card wins 1.
- Bet, Pass or Pass, Bet, Pass: the bettor wins 1 (the other folded).
- Bet, Bet or Pass, Bet, Bet: showdown, higher card wins 2.
Your return is the chips you win (positive) or lose (negative): -2 to +2.
The game is zero-sum; the Nash equilibrium value for player 0 is -1/18.
Good play mixes: bet K for value, sometimes bluff with J, use Q to check and
catch bluffs.
"""

OBSERVATION_TEXT = """\
obs keys (Kuhn poker):
- card: your private card, "J", "Q" or "K".
- round: always 1 (one betting round).
- betting: [[...]] one list with the moves so far in order, each "Pass" or
  "Bet"; player 0 made the first move.
- pot: chips in the pot (2 antes plus bets).
- my_contribution / opp_contribution: chips each player has put in.
- to_call: chips you must add to match the opponent (1 when facing a bet).
- legal_actions: [0, 1] (0 = Pass, 1 = Bet).
The opponent's card is never shown.
"""


class KuhnView(ObservationView):
    """Stateless: the observation is a function of the information state."""

    def observe(self, state: pyspiel.State) -> dict:
        return poker.kuhn_observation(
            state.information_state_string(self.player),
            self.player,
            state.legal_actions(self.player),
        )


class KuhnSpec(GameSpec):
    name = "kuhn_poker"
    title = "Kuhn poker"
    game_string = "kuhn_poker"
    rules_text = RULES_TEXT
    observation_text = OBSERVATION_TEXT
    exact = True
    seat_roles = ("first to act", "second to act")
    default_episodes = 2000  # sampled fallback; exact evaluation needs none
    seed_dir = "kuhn_poker"

    def action_names(self) -> list[str]:
        return list(poker.KUHN_ACTION_NAMES)

    def new_view(self, player: int) -> ObservationView:
        return KuhnView(player)

    def presentation(self) -> Presentation:
        return KuhnPresentation(self)

    def situation(self, observation: dict) -> Situation:
        return behaviour.kuhn_situation(observation)

    def benchmark(self) -> list[BenchmarkBot]:
        return [
            poker.tabular_bot("cfr_plus", poker.CFR_DESCRIPTION, poker.cfr_plus_rule("kuhn_poker")),
            poker.tabular_bot(
                "always_call", "Checks, and calls every bet; never bets", poker.kuhn_always_call
            ),
            poker.tabular_bot(
                "always_fold", "Passes always: folds to any bet", poker.kuhn_always_fold
            ),
            poker.tabular_bot("uniform_random", "Pass or Bet with equal probability", poker.uniform_rule),
        ]
