"""How each built-in game describes behaviour (behaviour profiles, issue 22).

The profile machinery (`csro_tui/profiles/`) asks the `GameSpec`:
`situation(obs)` names a decision the way a player would ("King", "facing a
bet", with the words for each move there), and `behaviour_probes()` lists
the fixed, trusted opponents a repeated game's policy is played against to
see what it does.  This module holds those per-game parts, so each game's
module only points here.

Probes are `BenchmarkBot`s (trusted, stepped in the referee's process); they
are never part of the benchmark population and never scored as such.
"""

from __future__ import annotations

from typing import Callable

import pyspiel

from csro_tui.games.base import BenchmarkBot, Situation, TabularAgent

RANK_WORDS = {"J": "Jack", "Q": "Queen", "K": "King"}

# -------------------------------------------------------------- poker situations


def _betting_words(rounds: list[list[str]]) -> list[str]:
    """Each round's moves as a player says them: check/bet/call/raise/fold."""
    said = []
    for moves in rounds:
        words, outstanding = [], False
        for move in moves:
            if move in ("Bet", "Raise"):
                words.append("raise" if outstanding else "bet")
                outstanding = True
            elif move in ("Pass", "Call"):
                # Kuhn's Pass facing a bet is a fold; Leduc's Call with nothing to call a check.
                if move == "Pass":
                    words.append("fold" if outstanding else "check")
                else:
                    words.append("call" if outstanding else "check")
                outstanding = False
            else:
                words.append(move.lower())
        said.append(", ".join(words))
    return said


def kuhn_situation(obs: dict) -> Situation:
    """'King' / 'first to act', 'after a check', 'facing a bet', 'checked, then facing a bet'."""
    moves = list(obs["betting"][0]) if obs.get("betting") else []
    label = {
        (): "first to act",
        ("Pass",): "after a check",
        ("Bet",): "facing a bet",
        ("Pass", "Bet"): "checked, then facing a bet",
    }.get(tuple(moves), "after " + _betting_words([moves])[0])
    facing = obs.get("to_call", 0) > 0
    words = {0: "fold", 1: "call"} if facing else {0: "check", 1: "bet"}
    return Situation(RANK_WORDS.get(obs["card"], str(obs["card"])), label, words)


def leduc_situation(obs: dict) -> Situation:
    """'Queen' / 'pre-flop: bet' or 'board K: check' (betting so far, each round by its board)."""
    rounds = [list(r) for r in obs.get("betting") or []]
    words = _betting_words(rounds)
    parts = []
    for index, text in enumerate(words):
        where = "pre-flop" if index == 0 else f"board {obs.get('public_card')}"
        parts.append(f"{where}: {text or 'first to act'}")
    label = "; ".join(parts) or "pre-flop: first to act"
    facing = obs.get("to_call", 0) > 0
    moves = {0: "fold", 1: "call", 2: "raise"} if facing else {0: "fold", 1: "check", 2: "bet"}
    return Situation(RANK_WORDS.get(obs["card"], str(obs["card"])), label, moves)


# -------------------------------------------------------------- Liar's Dice


def liars_dice_situation(obs: dict) -> Situation:
    """'holding 3' / 'opening bid' or 'after two 5s'; moves named as bids or 'call Liar'."""
    # imported when used, not at the top: keeps csro's start-up fast
    from csro_tui.games.liars_dice import bid_of, bid_words

    sides = obs["dice_sides"]
    dice = "".join(str(d) for d in obs.get("my_dice", []))
    last = obs.get("last_bid")
    label = "opening bid" if not last else f"after {bid_words(last[0], last[1])}"
    moves = {}
    for action in obs["legal_actions"]:
        moves[action] = "call Liar" if action == obs["liar"] else "bid " + bid_words(*bid_of(action, sides))
    return Situation(f"holding {dice}", label, moves)


# -------------------------------------------------------------- RRPS probes

ROCK, PAPER, SCISSORS = 0, 1, 2
NAMES = ("Rock", "Paper", "Scissors")


def _beats(move: int) -> int:
    return (move + 1) % 3


class _OpponentMoves:
    """The opponent's throws so far, kept up to date one throw at a time (from the
    recall-1 observation tensor, as the RRPS view does), not rebuilt every throw."""

    def __init__(self, player: int) -> None:
        self.player = player
        self.moves: list[int] = []

    def read(self, state: pyspiel.State) -> list[int]:
        played = state.move_number()
        if played == len(self.moves) + 1:
            tensor = state.observation_tensor(self.player)
            start = 3 * (1 - self.player)
            self.moves.append(tensor.index(1.0, start, start + 3) - start)
        elif played > len(self.moves):
            history = state.history()
            self.moves.extend(history[2 * t + 1 - self.player] for t in range(len(self.moves), played))
        return self.moves


def _rrps_probe(name: str, description: str, rule: Callable | None = None, *,
                make_rule: Callable[[], Callable] | None = None) -> BenchmarkBot:
    """A probe from rule(opponent's moves so far, throw index, rng) -> move (None: uniform);
    `make_rule` gives each episode's agent a rule of its own (one that keeps counts)."""

    def make(player: int, seed: int) -> TabularAgent:
        seen = _OpponentMoves(player)
        rule_here = make_rule() if make_rule is not None else rule

        def distribution(state: pyspiel.State) -> dict[int, float]:
            theirs = seen.read(state)
            move = rule_here(theirs, len(theirs), None)
            return {0: 1 / 3, 1: 1 / 3, 2: 1 / 3} if move is None else {move: 1.0}

        return TabularAgent(player, seed, distribution)

    return BenchmarkBot(name, description, make)


class _FrequencyFollower:
    """Beats the opponent's most frequent throw so far (Rock first); counts kept as it goes."""

    def __init__(self) -> None:
        self.counts = [0, 0, 0]
        self.seen = 0

    def __call__(self, theirs: list[int], _n: int, _rng) -> int:
        for move in theirs[self.seen:]:
            self.counts[move] += 1
        self.seen = len(theirs)
        if not theirs:
            return ROCK
        return _beats(self.counts.index(max(self.counts)))


ALL_THROWS = "all throws"


def rrps_conditions(obs: dict) -> list[str]:
    """Where a throw counts in a profile's move frequencies: all throws, and after the
    policy's own and the opponent's last throw (none before the first)."""
    mine, theirs = obs.get("my_moves") or [], obs.get("opp_moves") or []
    conditions = [ALL_THROWS]
    if mine and 0 <= int(mine[-1]) < len(NAMES):
        conditions.append(f"after its own {NAMES[int(mine[-1])]}")
    if theirs and 0 <= int(theirs[-1]) < len(NAMES):
        conditions.append(f"after the opponent's {NAMES[int(theirs[-1])]}")
    return conditions


def rrps_probes() -> list[BenchmarkBot]:
    """Constant, cycling, copying, beating the last move, frequency-following, uniform."""
    probes = [
        _rrps_probe(f"constant {NAMES[m].lower()}", f"{NAMES[m]} every throw", lambda _t, _n, _r, m=m: m)
        for m in (ROCK, PAPER, SCISSORS)
    ]
    probes += [
        _rrps_probe("cycling", "Rock, Paper, Scissors, Rock, ... in turn", lambda _t, n, _r: n % 3),
        _rrps_probe("copying", "plays your last move (Rock first)", lambda t, _n, _r: t[-1] if t else ROCK),
        _rrps_probe("beat-last", "plays what beats your last move (Rock first)",
                    lambda t, _n, _r: _beats(t[-1]) if t else ROCK),
        _rrps_probe("frequency-following", "plays what beats your most frequent move so far (Rock first)",
                    make_rule=_FrequencyFollower),
        _rrps_probe("uniform", "uniform random throws", lambda _t, _n, _r: None),
    ]
    return probes


# -------------------------------------------------------------- repeated Leduc probes

FOLD, CALL, RAISE = 0, 1, 2


def _leduc_rule_probe(name: str, description: str, rule: Callable[[dict], dict[int, float]], continue_action: int,
                      observe: Callable[[pyspiel.State, int], dict]) -> BenchmarkBot:
    def make(player: int, seed: int) -> TabularAgent:
        def distribution(state: pyspiel.State) -> dict[int, float]:
            legal = state.legal_actions(player)
            if legal == [continue_action]:
                return {continue_action: 1.0}
            obs = observe(state, player)
            chosen = {a: p for a, p in rule(obs).items() if a in legal and p > 0}
            return chosen or {legal[0]: 1.0}

        return TabularAgent(player, seed, distribution)

    return BenchmarkBot(name, description, make)


def repeated_leduc_probes(continue_action: int, observe: Callable[[pyspiel.State, int], dict]) -> list[BenchmarkBot]:
    """Always-call, always-fold, a tight and a loose player (one hand at a time, no memory)."""

    def always_call(obs: dict) -> dict[int, float]:
        return {CALL: 1.0}

    def always_fold(obs: dict) -> dict[int, float]:
        return {FOLD: 1.0} if obs["to_call"] > 0 else {CALL: 1.0}

    def tight(obs: dict) -> dict[int, float]:
        pair = obs.get("public_card") is not None and obs["public_card"] == obs["card"]
        if obs["card"] == "K" or pair:
            return {RAISE: 1.0, CALL: 0.0}
        if obs["card"] == "Q" or obs["to_call"] == 0:
            return {CALL: 1.0}
        return {FOLD: 1.0}

    def loose(obs: dict) -> dict[int, float]:
        return {RAISE: 0.7, CALL: 0.3}

    rules = [
        ("always-call", "checks and calls every bet, never raises", always_call),
        ("always-fold", "checks when it can, folds to any bet", always_fold),
        ("tight", "raises with a King or a pair, calls with a Queen, folds a Jack to a bet", tight),
        ("loose", "raises seven times in ten whatever it holds, never folds", loose),
    ]
    return [_leduc_rule_probe(name, text, rule, continue_action, observe) for name, text, rule in rules]
