"""Shared poker tools for Kuhn, Leduc and repeated Leduc.

- Observations are built from the acting player's OpenSpiel
  *information-state string* only, so they are a function of the information
  state by construction (the exact evaluator enumerates information states)
  and can never contain the opponent's private card.
- Benchmark bots are tabular: a distribution per information state.  CFR+
  policies are computed once (`data/make_cfr_policies.py`) and loaded from
  JSON; always-call, always-fold and uniform are rules.  Each bot can also be
  turned into an OpenSpiel `TabularPolicy` for exact evaluation.

Card names are ranks: Kuhn deals J, Q, K (ids 0, 1, 2); Leduc has two suits
of J, Q, K (ids 0-1 J, 2-3 Q, 4-5 K) and suits never matter, so a Leduc card
is also shown by rank only.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from importlib import resources
from typing import Callable

import pyspiel
from open_spiel.python import policy as openspiel_policy

from csro_tui.games.base import BenchmarkBot, TabularAgent, uniform_distribution

RANKS = ("J", "Q", "K")

KUHN_PASS, KUHN_BET = 0, 1
KUHN_ACTION_NAMES = ["Pass", "Bet"]
KUHN_ANTE = 1

LEDUC_FOLD, LEDUC_CALL, LEDUC_RAISE = 0, 1, 2
LEDUC_ACTION_NAMES = ["Fold", "Call", "Raise"]
LEDUC_STARTING_MONEY = 100  # OpenSpiel's kStartingMoney; contributions = 100 - money

# [Observer: 0][Private: 1][Round 2][Player: 0][Pot: 14][Money: 95 91]
# [Public: 0][Round1: 1 2 2 1][Round2: 1 2]   (Public only once dealt)
_LEDUC_FIELD = re.compile(r"\[([A-Za-z0-9]+):? ?([^\]]*)\]")

# A distribution over legal actions, given an information-state string.
InfoStateRule = Callable[[str, list[int]], dict[int, float]]


# --------------------------------------------------------------------------
# Observations


def kuhn_card_name(card: int) -> str:
    return RANKS[card]


def leduc_card_name(card: int) -> str | None:
    """Rank of a Leduc card id, None for "no card" (negative ids)."""
    return RANKS[card // 2] if card >= 0 else None


def kuhn_observation(info_state: str, player: int, legal_actions: list[int]) -> dict:
    """Observation for Kuhn poker from `player`'s information-state string.

    The string is the private card digit followed by the moves so far, 'p'
    (pass) or 'b' (bet), e.g. '1pb'.  Player 0 moves first.
    """
    card, moves = int(info_state[0]), info_state[1:]
    contributions = [KUHN_ANTE, KUHN_ANTE]
    for index, move in enumerate(moves):
        if move == "b":
            contributions[index % 2] += 1
    mine, theirs = contributions[player], contributions[1 - player]
    return {
        "card": kuhn_card_name(card),
        "round": 1,
        "betting": [[KUHN_ACTION_NAMES[m == "b"] for m in moves]],
        "pot": mine + theirs,
        "my_contribution": mine,
        "opp_contribution": theirs,
        "to_call": theirs - mine,
        "legal_actions": list(legal_actions),
    }


def parse_leduc_info_state(info_state: str) -> dict:
    """Fields of a leduc_poker information-state string.

    Returns private (int), round (int), pot (int), money (list[int]),
    public (int or None) and rounds (list of lists of action ids, one per
    round started so far).
    """
    fields = {key: value for key, value in _LEDUC_FIELD.findall(info_state)}
    round_index = int(fields["Round"]) if "Round" in fields else 1
    rounds = [
        [int(a) for a in fields.get(f"Round{r}", "").split()]
        for r in range(1, round_index + 1)
    ]
    return {
        "private": int(fields["Private"]),
        "round": round_index,
        "pot": int(fields["Pot"]),
        "money": [int(m) for m in fields["Money"].split()],
        "public": int(fields["Public"]) if "Public" in fields else None,
        "rounds": rounds,
    }


def _leduc_round_field(info_state: str) -> int:
    # '[Round 2]' has no colon, unlike '[Round1: ...]'; parse it directly.
    match = re.search(r"\[Round (\d+)\]", info_state)
    return int(match.group(1)) if match else 1


def leduc_observation(info_state: str, player: int, legal_actions: list[int]) -> dict:
    """Observation for Leduc poker from `player`'s information-state string."""
    parsed = parse_leduc_info_state(info_state)
    money = parsed["money"]
    mine = LEDUC_STARTING_MONEY - money[player]
    theirs = LEDUC_STARTING_MONEY - money[1 - player]
    public = parsed["public"]
    return {
        "card": leduc_card_name(parsed["private"]),
        "public_card": leduc_card_name(public) if public is not None else None,
        "round": parsed["round"],
        "betting": [[LEDUC_ACTION_NAMES[a] for a in actions] for actions in parsed["rounds"]],
        "pot": parsed["pot"],
        "my_contribution": mine,
        "opp_contribution": theirs,
        "to_call": theirs - mine,
        "legal_actions": list(legal_actions),
    }


# --------------------------------------------------------------------------
# Tabular benchmark rules: (info_state, legal_actions) -> distribution


def kuhn_facing_bet(info_state: str) -> bool:
    return info_state.endswith("b")


def kuhn_always_call(info_state: str, legal: list[int]) -> dict[int, float]:
    """Check when nothing is bet, call a bet; never bet first."""
    return {KUHN_BET if kuhn_facing_bet(info_state) else KUHN_PASS: 1.0}


def kuhn_always_fold(info_state: str, legal: list[int]) -> dict[int, float]:
    """Pass: a fold when facing a bet, a check otherwise."""
    return {KUHN_PASS: 1.0}


def leduc_always_call(info_state: str, legal: list[int]) -> dict[int, float]:
    """Call (or check) every time."""
    return {LEDUC_CALL: 1.0}


def leduc_always_fold(info_state: str, legal: list[int]) -> dict[int, float]:
    """Fold whenever folding is legal (facing a bet), otherwise check."""
    return {LEDUC_FOLD if LEDUC_FOLD in legal else LEDUC_CALL: 1.0}


def uniform_rule(info_state: str, legal: list[int]) -> dict[int, float]:
    return uniform_distribution(legal)


@lru_cache(maxsize=None)
def cfr_plus_document(game_name: str) -> dict:
    """The cached CFR+ JSON document of `game_name` (see data/make_cfr_policies.py)."""
    path = resources.files("csro_tui.games").joinpath("data", f"{game_name}_cfr_plus.json")
    return json.loads(path.read_text(encoding="utf-8"))


@lru_cache(maxsize=None)
def cfr_plus_table(game_name: str) -> dict[str, dict[int, float]]:
    """Information-state string -> {action: probability} of the cached CFR+ policy."""
    document = cfr_plus_document(game_name)
    table = {}
    for info_state, row in document["policy"].items():
        total = sum(p for _, p in row)  # undo the file's rounding drift
        table[info_state] = {int(a): p / total for a, p in row}
    return table


def cfr_plus_rule(game_name: str) -> InfoStateRule:
    """A rule that looks up the cached CFR+ policy of `game_name`."""

    def rule(info_state: str, legal: list[int]) -> dict[int, float]:
        return cfr_plus_table(game_name)[info_state]

    return rule


@lru_cache(maxsize=8)
def _empty_table(game_string: str) -> openspiel_policy.TabularPolicy:
    # Enumerating Leduc's states takes ~0.5 s; do it once per game and copy.
    return openspiel_policy.TabularPolicy(pyspiel.load_game(game_string))


def tabular_policy_from_rule(game: pyspiel.Game, rule: InfoStateRule) -> openspiel_policy.TabularPolicy:
    """A fresh OpenSpiel TabularPolicy (both players) filled from `rule`."""
    table = _empty_table(str(game)).__copy__(copy_action_probability_array=True)
    for info_state, row in table.state_lookup.items():
        legal = [int(a) for a in table.legal_actions_mask[row].nonzero()[0]]
        probabilities = table.action_probability_array[row]
        probabilities[:] = 0.0
        for action, probability in rule(info_state, legal).items():
            probabilities[action] = probability
    return table


def tabular_bot(name: str, description: str, rule: InfoStateRule, exact: bool = True) -> BenchmarkBot:
    """A BenchmarkBot whose agents follow `rule` at the acting player's info state.

    With `exact`, the bot also offers `tabular_policy(game)`.
    """

    def make_agent(player: int, seed: int) -> TabularAgent:
        def distribution(state: pyspiel.State) -> dict[int, float]:
            return rule(state.information_state_string(player), state.legal_actions(player))

        return TabularAgent(player, seed, distribution)

    tabular = (lambda game: tabular_policy_from_rule(game, rule)) if exact else None
    return BenchmarkBot(name, description, make_agent, tabular)


CFR_DESCRIPTION = "CFR+ average policy, 10,000 iterations (OpenSpiel CFRPlusSolver); near-Nash"
