"""Leduc poker: OpenSpiel's `leduc_poker`, small enough for exact evaluation.

The observation is a function of the acting player's information state only
(`poker.leduc_observation`).  Benchmark: cached CFR+ (near-Nash),
always-call, always-fold and uniform random, all tabular.
"""

from __future__ import annotations

from typing import Callable

import pyspiel

from csro_tui.games import poker
from csro_tui.games.base import BenchmarkBot, GameSpec, ObservationView
from csro_tui.games.poker_play import LeducPresentation
from csro_tui.games.presentation import Presentation
from csro_tui.games import behaviour
from csro_tui.games.base import Situation

LEDUC_RULES = """\
Deck: six cards, two each of J < Q < K (suits never matter). Each player
antes 1 chip and gets one private card. Two betting rounds; after the first,
one public card is revealed. Player 0 acts first in both rounds.
Bets are fixed: 2 chips in round 1, 4 chips in round 2; at most two raises
per round. A round ends when a bet or raise is called, or both check.
Actions: 0 = Fold (only legal when facing a bet), 1 = Call (check when there
is nothing to call), 2 = Raise (bet, or raise the opponent's bet; not legal
after two raises in the round).
Showdown: a pair (your card has the public card's rank) beats any non-pair;
otherwise the higher card wins; equal ranks split the pot.
Your return is the chips you win or lose: -13 to +13 per hand (ante 1,
up to 2 + 2 in round 1, 4 + 4 in round 2). Zero-sum.
"""

RULES_TEXT = "Leduc poker (two players, one hand).\n" + LEDUC_RULES

LEDUC_OBSERVATION_KEYS = """\
- card: your private card's rank, "J", "Q" or "K".
- public_card: the public card's rank once revealed (round 2), else None.
- round: 1 or 2, the current betting round.
- betting: one list per round started so far, each the moves in order
  ("Fold", "Call", "Raise"); player 0 moves first in every round.
- pot: chips in the pot (antes plus bets).
- my_contribution / opp_contribution: chips each player has put in.
- to_call: chips you must add to match the opponent (0 if you may check).
- legal_actions: the ids you may play now (0 = Fold, 1 = Call, 2 = Raise).
The opponent's card is never shown during a hand.
"""

OBSERVATION_TEXT = "obs keys (Leduc poker):\n" + LEDUC_OBSERVATION_KEYS


class LeducView(ObservationView):
    """Stateless: the observation is a function of the information state."""

    def observe(self, state: pyspiel.State) -> dict:
        return poker.leduc_observation(
            state.information_state_string(self.player),
            self.player,
            state.legal_actions(self.player),
        )


def leduc_benchmark(
    wrap_rule: Callable[[poker.InfoStateRule], poker.InfoStateRule] = lambda rule: rule,
    *,
    exact: bool = True,
    include_uniform: bool = True,
) -> list[BenchmarkBot]:
    """Leduc's benchmark bots; repeated Leduc reuses them through `wrap_rule`."""
    bots = [
        ("cfr_plus", poker.CFR_DESCRIPTION, poker.cfr_plus_rule("leduc_poker")),
        ("always_call", "Checks or calls every time; never raises", poker.leduc_always_call),
        ("always_fold", "Folds whenever facing a bet, otherwise checks", poker.leduc_always_fold),
    ]
    if include_uniform:
        bots.append(("uniform_random", "Uniform over the legal actions", poker.uniform_rule))
    return [
        poker.tabular_bot(name, description, wrap_rule(rule), exact)
        for name, description, rule in bots
    ]


class LeducSpec(GameSpec):
    name = "leduc_poker"
    title = "Leduc poker"
    game_string = "leduc_poker"
    rules_text = RULES_TEXT
    observation_text = OBSERVATION_TEXT
    exact = True
    seat_roles = ("first to act in each round", "second to act in each round")
    default_episodes = 2000  # sampled fallback; exact evaluation needs none
    seed_dir = "leduc_poker"

    def action_names(self) -> list[str]:
        return list(poker.LEDUC_ACTION_NAMES)

    def new_view(self, player: int) -> ObservationView:
        return LeducView(player)

    def presentation(self) -> Presentation:
        return LeducPresentation(self)

    def situation(self, observation: dict) -> Situation:
        return behaviour.leduc_situation(observation)

    def benchmark(self) -> list[BenchmarkBot]:
        return leduc_benchmark()
