"""The opponent mixture described concretely, for models that cannot read it from code.

A small model given five opponents' code rarely works out what the mixture
of them does.  This says it directly:

- in exact games (Kuhn, Leduc): the meta-strategy's own action
  probabilities - the reach-weighted mixture of the members, exactly what a
  best response must answer - in each situation the opponent can be in,
  keyed by what it observes (every information state in Kuhn; in larger
  games averaged over betting histories into card / public card / facing a
  bet, with a line cap);
- in games that declare `mixture_probes` (RRPS): how each weighted
  opponent answers those probes (Rock every throw, Paper every throw, the
  cycle Rock-Paper-Scissors), i.e. its first throws against them;
- and, for a candidate in an exact game (`situation_losses`, the refine
  loop's feedback), the situations where it gives most value away against
  the mixture: its action, the best action's gain, and the cost per hand
  once weighted by how often it gets there.

With two populations the opponents play one seat only (`seat` below: the
seat the mixture plays, the other seat's members): the exact description
lists only the situations that seat meets, the probes put the member in that
seat, and a candidate's losses count only its own seat's situations.

Member code only ever runs in the sandbox: tables come from the exact
evaluator's tabulariser (sandboxed, cached by source), probes from a
`PolicyHost` of the member.  A member that fails here is described as such,
never retried; nothing raises out of `describe_mixture`.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from typing import Any, Sequence

from csro_tui.evaluation.participants import CodePolicy
from csro_tui.oracles.base import seat_words
from csro_tui.oracles.render import decision_points
from csro_tui.records import PolicyRecord

# Lines of situations shown at most (each ~60 characters).
MAX_SITUATION_LINES = 40
# Throws per probe, and members probed at most (heaviest first).
PROBE_THROWS = 10
MAX_PROBED = 6
# A distribution whose likeliest move has less than this is shown as "?" (a mix).
MIXED_BELOW = 0.9
MIXED = -1
_CACHE_SIZE = 64


class MixtureDescriber:
    """`describe(spec, members, weights, seat)` -> prompt text (cached; thread-safe).

    `seat`: the seat the mixture plays (two populations: the opponents' seat); None: one
    population, the mixture plays both seats."""

    def __init__(self, limits: Any = None) -> None:
        self.limits = limits
        self._cache: OrderedDict[str, str] = OrderedDict()
        self._lock = threading.Lock()

    def losses(
        self, spec: Any, members: Sequence[PolicyRecord], weights: Sequence[float], source: str,
        seat: int | None = None,
    ) -> str:
        """`situation_losses` for a candidate playing `seat` (None: both) ("" where unavailable; never raises)."""
        weighted = [(m, float(w)) for m, w in zip(members, weights) if w > 0]
        if not weighted or not getattr(spec, "exact", False) or not hasattr(spec, "load"):
            return ""
        try:
            return situation_losses(spec, source, weighted, limits=self.limits, seat=seat)
        except Exception:  # noqa: BLE001 - optional detail; the payoffs are still fed back
            return ""

    def describe(
        self, spec: Any, members: Sequence[PolicyRecord], weights: Sequence[float], seat: int | None = None
    ) -> str:
        weighted = [(m, float(w)) for m, w in zip(members, weights) if w > 0]
        if not weighted:
            return ""
        key = _key(spec, weighted, seat)
        with self._lock:
            if key in self._cache:
                return self._cache[key]
        try:
            text = describe_mixture(spec, weighted, limits=self.limits, seat=seat)
        except Exception as error:  # noqa: BLE001 - a description is optional; the prompt still works
            text = f"(The mixture could not be described: {type(error).__name__}.)"
        with self._lock:
            self._cache[key] = text
            while len(self._cache) > _CACHE_SIZE:
                self._cache.popitem(last=False)
        return text


def _key(spec: Any, weighted: Sequence[tuple[PolicyRecord, float]], seat: int | None) -> str:
    digest = hashlib.sha256(f"{getattr(spec, 'name', spec)}\x1f{seat}".encode())
    for member, weight in weighted:
        digest.update(member.source.encode("utf-8"))
        digest.update(f"{weight:.6f}".encode())
    return digest.hexdigest()


def describe_mixture(
    spec: Any, weighted: Sequence[tuple[PolicyRecord, float]], *, limits: Any = None, seat: int | None = None
) -> str:
    """Text for the prompt's mixture section ("" when there is nothing to say for this game);
    `seat`: the one seat the mixture plays (two populations), None for both."""
    if getattr(spec, "exact", False) and hasattr(spec, "load"):
        return _exact_situations(spec, weighted, limits, seat)
    if getattr(spec, "mixture_probes", ()) and hasattr(spec, "load"):
        return _probes(spec, weighted, limits, seat)
    return ""


# --------------------------------------------------------------------- exact games
def describes_every_state(spec: Any) -> bool:
    """Whether the mixture section lists every information state (Kuhn), not averages (Leduc)."""
    if not getattr(spec, "exact", False) or not hasattr(spec, "load"):
        return False
    try:
        # start-up time: importing it loads numpy, open_spiel, pyspiel
        from csro_tui.evaluation.exact import game_tables

        return _every_state_fits(len(game_tables(spec).template.states))
    except Exception:  # noqa: BLE001 - a game the tables cannot walk is described another way
        return False


def _every_state_fits(rows: int) -> bool:
    return rows <= 2 * MAX_SITUATION_LINES // 3


def _exact_situations(spec: Any, weighted: Sequence[tuple[PolicyRecord, float]], limits: Any, seat: int | None) -> str:
    # start-up time: importing it loads numpy, open_spiel, pyspiel
    from csro_tui.evaluation.exact import game_tables, mixture_policy

    mixed = mixture_policy(
        spec, [CodePolicy(m.id, m.source) for m, _ in weighted], [w for _, w in weighted], limits=limits
    )
    tables = game_tables(spec)
    names = spec.action_names()
    rows: list[tuple[int, dict, list[tuple[int, float]]]] = []
    for row, state in enumerate(tables.template.states):
        player = int(tables.row_player[row])
        if seat is not None and player != seat:
            continue  # two populations: the opponents never meet the other seat's situations
        obs = spec.new_view(player).observe(state)
        probabilities = mixed.action_probability_array[row]
        rows.append((player, obs, [(a, float(probabilities[a])) for a in obs["legal_actions"]]))
    detailed = _every_state_fits(len(rows))
    groups: "OrderedDict[str, list[list[tuple[int, float]]]]" = OrderedDict()
    for player, obs, probs in rows:
        groups.setdefault(_situation(player, obs, detailed), []).append(probs)
    lines = []
    for situation, members in groups.items():
        averaged = {}
        for probs in members:
            for action, p in probs:
                averaged[action] = averaged.get(action, 0.0) + p / len(members)
        shown = ", ".join(f"{names[a] if a < len(names) else a} {p:.2f}" for a, p in sorted(averaged.items()))
        lines.append(f"- {situation}: {shown}")
    left = len(lines) - MAX_SITUATION_LINES
    lines = lines[:MAX_SITUATION_LINES]
    if left > 0:
        lines.append(f"- ({left} more situations not shown)")
    how = "in each information state" if detailed else "averaged over the betting histories that lead to each situation"
    if seat is not None:
        head = (f"The opponent you face plays the meta-strategy mixture, always in {seat_words(spec, seat)}. "
                f"Its action probabilities {how}:")
    else:
        seats = "seat 0 acts first; the opponent sits in either seat" if detailed else "both seats together"
        head = f"The opponent you face plays the meta-strategy mixture. Its action probabilities {how} ({seats}):"
    return head + "\n" + "\n".join(lines)


def _situation(player: int, obs: dict, detailed: bool) -> str:
    # Summaries merge the seats (the lines would double); full detail keeps them.
    parts = [f"seat {player}"] if detailed else []
    if "card" in obs:
        parts.append(f"card {obs['card']}")
        if "public_card" in obs:
            parts.append(f"public card {obs['public_card'] or 'not yet shown'}")
        if detailed and "betting" in obs:
            moves = [move for round_moves in obs["betting"] for move in round_moves]
            parts.append("betting so far: " + (", ".join(moves) if moves else "none"))
        elif "to_call" in obs:
            parts.append("facing a bet" if obs["to_call"] > 0 else "not facing a bet")
        return ", ".join(parts)
    rest = {k: v for k, v in obs.items() if k not in ("legal_actions", "legal_action_names")}
    text = ", ".join(f"{k} {v}" for k, v in rest.items())
    return ", ".join(parts) + (", " + text if text else "")


# --------------------------------------------------------------------- probes (simultaneous-move games)
def _probes(spec: Any, weighted: Sequence[tuple[PolicyRecord, float]], limits: Any, seat: int | None = None) -> str:
    ranked = sorted(weighted, key=lambda item: -item[1])[:MAX_PROBED]
    names = spec.action_names()
    letters = {action: name[:1].upper() or "?" for action, name in enumerate(names)}  # MIXED: "?"
    legend = ", ".join(f"{letters[action]} {name}" for action, name in enumerate(names))
    where = ""
    if seat is not None:
        where = f" (they play {seat_words(spec, seat)}, you {seat_words(spec, 1 - seat)})"
    lines = [
        "How the weighted opponents answer simple probes: their first "
        f"{PROBE_THROWS} throws ({legend}, ? a random mix) when you play the probe{where}:"
    ]
    for member, weight in ranked:
        lines.append(f"- {member.name} (id {member.id}, weight {weight:.3f}):")
        for probe in spec.mixture_probes:
            label = probe.label
            try:
                moves = probe_answers(spec, member.source, probe.move, PROBE_THROWS, limits=limits,
                                      seat=1 if seat is None else seat)
                lines.append(f"  against {label}: {' '.join(letters.get(m, '?') for m in moves)}")
            except Exception as error:  # noqa: BLE001 - a failing member is described, not fatal
                lines.append(f"  against {label}: failed ({type(error).__name__})")
                break
    if len(weighted) > len(ranked):
        lines.append(f"({len(weighted) - len(ranked)} lighter opponents not probed.)")
    return "\n".join(lines)


def probe_answers(
    spec: Any, source: str, probe: Any, throws: int, *, limits: Any = None, seed: int = 0, seat: int = 1
) -> list[int]:
    """The member's moves (in `seat`, 1 unless given) over `throws` throws of a real episode
    against `probe(t)` (the other seat).

    A member that answers with a distribution is shown its likeliest move
    when that has at least `MIXED_BELOW`, else `MIXED` (-1, shown as "?").
    """
    from csro_tui.sandbox.sandbox import PolicyHost  # start-up time: importing it loads orjson, rich

    kwargs = {"name": "probe"}
    if limits is not None:
        kwargs["limits"] = limits
    state = spec.load().new_initial_state()
    view = spec.new_view(seat)
    moves: list[int] = []
    with PolicyHost(source, spec.game_info(), **kwargs) as host:
        host.start()
        host.new_episodes([(0, seat, seed)])
        for throw in range(throws):
            if state.is_terminal():
                break
            answer = host.act([(0, view.observe(state))])[0]
            if isinstance(answer, dict):
                best = max(answer.values())
                move = min(int(a) for a, p in answer.items() if p == best)
                moves.append(move if best >= MIXED_BELOW else MIXED)
            else:
                move = int(answer)
                moves.append(move)
            state.apply_actions([move, int(probe(throw))] if seat == 0 else [int(probe(throw)), move])
        host.end_episodes([0])
    return moves


# --------------------------------------------------------------------- what a candidate loses (exact games)
# Situations listed at most in a candidate's feedback.
MAX_LOSS_LINES = 8
_GAIN_TOLERANCE = 1e-6


def situation_losses(
    spec: Any,
    source: str,
    weighted: Sequence[tuple[PolicyRecord, float]],
    *,
    limits: Any = None,
    seat: int | None = None,
) -> str:
    """Where a candidate gives value away against the mixture (exact games), as prompt lines.

    `seat`: the candidate's one seat (two populations: the mixture plays the other);
    None: both seats, each played half the time.

    For each situation (what the candidate observes) the mixture's action
    values come from the exact best response to it, the candidate's own
    probabilities from its sandboxed table, and how often the candidate
    gets there from playing it out against the mixture.  Listed: the
    situations costing most per hand (gain of the best action over what it
    plays, times how often it is there), largest first; "" when it gives
    nothing away, or the game is not exact.
    """
    if not getattr(spec, "exact", False) or not weighted:
        return ""
    from csro_tui.evaluation.exact import tabularize  # start-up time: importing it loads numpy, open_spiel, pyspiel
    # start-up time: importing it loads numpy, open_spiel, pyspiel
    from csro_tui.oracles.best_response import exact_best_response, meta_strategy_policy

    game = spec.load()
    seats = list(range(game.num_players())) if seat is None else [seat]
    points = {each: decision_points(spec, each) for each in range(game.num_players())}
    total = sum(w for _, w in weighted)
    mixture = meta_strategy_policy(spec, [m for m, _ in weighted], [w / total for _, w in weighted])
    response = exact_best_response(spec, mixture, points)
    table = tabularize(spec, CodePolicy("candidate", source), limits=limits)
    names = spec.action_names()
    found: dict[tuple[int, Any], list] = {}  # (seat, key) -> [cost per hand, gap, line parts]
    for seat_table in response.seats:
        if seat_table.seat not in seats:
            continue
        reach = _reach(game, seat_table.seat, table, mixture)
        for point in points[seat_table.seat]:
            values = seat_table.action_values.get(point.key)
            if values is None or point.key in seat_table.unreached:
                continue
            mine = table.action_probabilities(_state_at(game, point.history))
            played = sum(float(mine.get(a, 0.0)) * v for a, v in values.items())
            best = max(values, key=lambda a: (values[a], -a))
            gap = values[best] - played
            how_often = reach.get(point.history, 0.0)
            if gap <= _GAIN_TOLERANCE or how_often <= 0:
                continue
            entry = found.setdefault((seat_table.seat, point.key), [0.0, gap, None])
            # Seats swapped, each is played half the time: a seat's loss counts half per hand (one seat: in full).
            entry[0] += gap * how_often / len(seats)
            if entry[2] is None:
                shown = ", ".join(f"{names[a]} {float(mine.get(a, 0.0)):.2f}" for a in sorted(values) if mine.get(a, 0.0) > 0)
                worth = ", ".join(f"{names[a]} {v:+.2f}" for a, v in sorted(values.items()))
                entry[2] = (f"{_situation(seat_table.seat, point.obs, True)}{_entry_in(source, point.obs)}: "
                            f"you play {shown}; {names[best]} ({best}) would gain {gap:+.2f} each time "
                            f"(action values: {worth})")
    ranked = sorted((item for item in found.values() if item[0] > _GAIN_TOLERANCE), key=lambda item: -item[0])
    if not ranked:
        return ""
    lines = [f"- {text}; costs you {cost:.3f} per hand" for cost, _, text in ranked[:MAX_LOSS_LINES]]
    more = len(ranked) - len(lines)
    if more > 0:
        lines.append(f"- ({more} more situations costing less)")
    return ("Where your policy loses value against the mixture (computed exactly, most costly first):\n"
            + "\n".join(lines))


def _entry_in(source: str, obs: dict) -> str:
    """' (your entry ("Q", "Pass, Bet"))' when the code keys a table by (card, betting so far) as the
    example policy does and has this situation's key; "" otherwise.  A small model told "card Q,
    betting so far: Pass, Bet" did not find the line to change; told the key, it has it verbatim."""
    if "card" not in obs or "betting" not in obs or "public_card" in obs:
        return ""
    moves = [move for round_moves in obs["betting"] for move in round_moves]
    key = f'("{obs["card"]}", "{", ".join(moves) or "none"}")'
    return f" (your entry {key})" if key in source else ""


def _reach(game: Any, seat: int, candidate: Any, mixture: Any) -> dict[str, float]:
    """history_str -> probability that play reaches it, the candidate in `seat` against the mixture."""
    reach: dict[str, float] = {}

    def walk(state: Any, probability: float) -> None:
        if state.is_terminal() or probability <= 0:
            return
        if state.is_chance_node():
            outcomes = state.chance_outcomes()
        else:
            player = state.current_player()
            if player == seat:
                history = state.history_str()
                reach[history] = reach.get(history, 0.0) + probability
            outcomes = list((candidate if player == seat else mixture).action_probabilities(state).items())
        for action, chance in outcomes:
            if chance > 0:
                walk(state.child(action), probability * chance)

    walk(game.new_initial_state(), 1.0)
    return reach


def _state_at(game: Any, history: str) -> Any:
    """The state with `history_str()` == history (replayed from its actions)."""
    state = game.new_initial_state()
    for action in (int(a) for a in history.split(", ") if a.strip()):
        state.apply_action(action)
    return state
