"""Decision tables as readable policy code.

A tabular policy for a small poker game is rendered as a policy module a
person can read: one decision table per seat, keyed by what the policy sees
- `(my card, public card, betting so far)` - and grouped by card and round,
with action names instead of ids and, on each line, the value of every
action there.  `Policy.act` builds the same key from its observation and
looks it up.

The key function, `situation_key`, is copied verbatim into the rendered
module (`inspect.getsource`), so the oracle and the policy it writes can
never disagree about what a situation is.
"""

from __future__ import annotations

import inspect
import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Hashable, Mapping, Sequence

if TYPE_CHECKING:
    import pyspiel

    from csro_tui.games.base import GameSpec


def situation_key(obs):
    """What the policy sees, as a table key: (my card, public card, betting so far).

    The betting is the action names so far, oldest first, with rounds
    separated by "|" (e.g. "Raise Call | Call"), and "" before anyone has
    acted.  The public card is None until it is dealt (always, in Kuhn poker).
    """
    betting = " | ".join(" ".join(actions) for actions in obs["betting"])
    return (obs["card"], obs.get("public_card"), betting.strip())


@dataclass(frozen=True)
class DecisionPoint:
    """One decision node of a seat: where it is and what the policy sees there."""

    seat: int
    history: str  # OpenSpiel's history_str(): identifies the node
    info_state: str  # OpenSpiel's information-state string, for checks
    obs: dict
    key: Hashable  # situation_key(obs)


def decision_points(spec: "GameSpec", seat: int) -> list[DecisionPoint]:
    """Every decision node of `seat` in the game tree, with its observation.

    Each node is observed the way a policy meets it in a hand: a fresh view
    is shown the seat's own earlier decision nodes on the way, then the node
    itself (views may keep state within a hand).  Actions the referee takes
    itself (`spec.auto_action`) are followed, not listed.
    """
    game = spec.load()
    points: list[DecisionPoint] = []

    def observe(path: list["pyspiel.State"]) -> dict:
        view = spec.new_view(seat)
        obs = None
        for state in path:
            obs = view.observe(state)
        return obs

    def walk(state: "pyspiel.State", own_path: list["pyspiel.State"]) -> None:
        if state.is_terminal():
            return
        if state.is_chance_node():
            for action, _ in state.chance_outcomes():
                walk(state.child(action), own_path)
            return
        auto = spec.auto_action(state)
        if auto is not None:
            walk(state.child(auto), own_path)
            return
        if state.current_player() == seat:
            own_path = [*own_path, state]
            obs = observe(own_path)
            points.append(
                DecisionPoint(
                    seat=seat,
                    history=state.history_str(),
                    info_state=state.information_state_string(seat),
                    obs=obs,
                    key=situation_key(obs),
                )
            )
        for action in state.legal_actions():
            walk(state.child(action), own_path)

    walk(game.new_initial_state(), [])
    return points


def key_collisions(points: Sequence[DecisionPoint]) -> dict[Hashable, list[dict]]:
    """Keys shared by decision points that observe different things (should be none).

    Points with equal observations may share a key: no policy can tell them
    apart (Leduc's two suits of a rank, for example).
    """
    observations_by_key: dict[Hashable, list[dict]] = {}
    for point in points:
        seen = observations_by_key.setdefault(point.key, [])
        if point.obs not in seen:
            seen.append(point.obs)
    return {key: seen for key, seen in observations_by_key.items() if len(seen) > 1}


@dataclass(frozen=True)
class SeatTable:
    """A seat's deterministic decision table and what it is worth."""

    seat: int
    value: float  # expected return of this seat's table against the opponent
    actions: Mapping[Hashable, int]  # situation key -> action id
    # situation key -> {action id: expected value once there}.
    action_values: Mapping[Hashable, Mapping[int, float]] = field(default_factory=dict)
    # Situations the opponent never lets happen; their actions and values are
    # against a uniform random opponent instead.
    unreached: frozenset = frozenset()


def render_decision_tables(
    spec: "GameSpec",
    tables: Sequence[SeatTable],
    *,
    title: str,
    opponent: Sequence[tuple[str, float]] | None,
    points: Mapping[int, Sequence[DecisionPoint]],
) -> str:
    """A policy module playing `tables`, with a docstring saying what they answer.

    `opponent` lists the (member name, weight) pairs of the mixture the
    tables respond to, or None for the uniform random policy.  With one table
    (two populations: a policy for one seat) the module has no table for the
    other seat and plays its lowest legal action there, which its docstring says.
    """
    action_names = list(spec.game_info()["action_names"])
    parts = [
        _docstring(title, tables, opponent),
        "",
        "",
        inspect.getsource(situation_key).rstrip(),
        "",
        "",
    ]
    for table in tables:
        parts.append(_seat_table(table, points[table.seat], action_names))
        parts.append("")
    seats = ", ".join(f"{t.seat}: SEAT_{t.seat}" for t in tables)
    parts.append(f"TABLES = {{{seats}}}")
    parts.append("")
    parts.append("")
    parts.append(_POLICY_CLASS if len(tables) > 1 else _ONE_SEAT_POLICY_CLASS)
    return "\n".join(parts)


def _docstring(
    title: str, tables: Sequence[SeatTable], opponent: Sequence[tuple[str, float]] | None
) -> str:
    if len(tables) == 1:
        return _one_seat_docstring(title, tables[0], opponent)
    if opponent:
        members = "\n".join(
            f"    {weight:6.3f}  {_docstring_safe(name)}" for name, weight in opponent
        )
        against = (
            "An exact best response to the population's meta-strategy, the mixture\n\n"
            f"{members}\n\n"
            "(weight, member).  Each member plays both seats; in each seat their\n"
            "behaviour is mixed in proportion to how often each one reaches a situation."
        )
    else:
        against = "An exact best response to the uniform random policy."
    per_seat = ", ".join(f"{t.value:+.4f} in seat {t.seat}" for t in tables)
    average = sum(t.value for t in tables) / len(tables)
    return (
        f'"""{_docstring_safe(title)}.\n\n'
        f"{against}\n\n"
        f"Expected value against it: {per_seat}; {average:+.4f} averaged over seats.\n\n"
        "One decision table per seat maps what the policy sees - (my card,\n"
        "public card, betting so far) - to the action to take.  The comment on\n"
        "each line gives every action's expected value from that situation on;\n"
        "ties went to the lowest action id.  Where the opponent never lets a\n"
        "situation happen (\"unreached\"), the table answers a uniform random\n"
        "opponent instead.\n"
        '"""'
    )


def _one_seat_docstring(title: str, table: SeatTable, opponent: Sequence[tuple[str, float]] | None) -> str:
    """Two populations: the policy belongs to one seat's population."""
    other = 1 - table.seat
    if opponent:
        members = "\n".join(f"    {weight:6.3f}  {_docstring_safe(name)}" for name, weight in opponent)
        against = (
            f"An exact best response in seat {table.seat} to the meta-strategy of seat {other}'s\n"
            f"population, the mixture\n\n{members}\n\n"
            "(weight, member), its behaviour mixed in proportion to how often each\n"
            "member reaches a situation."
        )
    else:
        against = f"An exact best response in seat {table.seat} to the uniform random policy."
    return (
        f'"""{_docstring_safe(title)}.\n\n'
        f"{against}\n\n"
        f"Expected value against it: {table.value:+.4f} in seat {table.seat}.\n\n"
        f"This policy is for seat {table.seat} only (one population per seat).  Its decision\n"
        "table maps what it sees - (my card, public card, betting so far) - to the\n"
        "action to take; the comment on each line gives every action's expected\n"
        "value from that situation on; ties went to the lowest action id.  Where\n"
        "the opponent never lets a situation happen (\"unreached\"), the table\n"
        f"answers a uniform random opponent instead.  Seated in seat {other} it has no\n"
        "table and plays its lowest legal action.\n"
        '"""'
    )


def _docstring_safe(text: str) -> str:
    """`text` on one line, unable to end the docstring or start an escape."""
    return " ".join(text.split()).replace("\\", "\\\\").replace('"', '\\"')


def _seat_table(
    table: SeatTable, points: Sequence[DecisionPoint], action_names: Sequence[str]
) -> str:
    by_key: dict[Hashable, DecisionPoint] = {}
    for point in points:  # game-tree order: within a group, earlier actions first
        by_key.setdefault(point.key, point)
    ordered = sorted(by_key.values(), key=_group_order)
    entries = [
        (point, f"    {_literal(point.key)}: {_literal(action_names[table.actions[point.key]])},")
        for point in ordered
    ]
    width = max(len(entry) for _, entry in entries)
    first_mover = "mine" if table.seat == 0 else "the opponent's"
    lines = [
        f"# Seat {table.seat}: the first move of each betting round is {first_mover}.",
        f"SEAT_{table.seat} = {{",
    ]
    several_rounds = any((point.obs.get("round") or 1) > 1 for point in ordered)
    group = None
    for point, entry in entries:
        if _group_order(point) != group:
            group = _group_order(point)
            lines.append(f"    # {_group_title(point, several_rounds)}")
        comment = _values_comment(
            table.action_values.get(point.key), point.key in table.unreached, action_names
        )
        lines.append(f"{entry:<{width}}  # {comment}" if comment else entry)
    lines.append("}")
    return "\n".join(lines)


def _group_title(point: DecisionPoint, several_rounds: bool) -> str:
    card, public_card, _ = point.key
    title = f"My card {card}"
    if several_rounds:
        title += f", round {point.obs.get('round') or 1}"
    if public_card is not None:
        title += f", public card {public_card}"
    return title


def _values_comment(
    values: Mapping[int, float] | None, unreached: bool, action_names: Sequence[str]
) -> str:
    if not values:
        return ""
    text = ", ".join(f"{action_names[a]} {v:+.3f}" for a, v in sorted(values.items()))
    return f"unreached; vs uniform: {text}" if unreached else text


_RANKS = "23456789TJQKA"


def _card_order(card) -> tuple:
    """Cards sort by poker rank when they are named, by number otherwise."""
    if card is None:
        return (0,)
    if isinstance(card, (int, float)):
        return (1, card)
    text = str(card)
    if text and text[0] in _RANKS:
        return (2, _RANKS.index(text[0]), text)
    return (3, text)


def _group_order(point: DecisionPoint) -> tuple:
    """Groups: my card, then round (public card None first), then public card."""
    card, public_card, _ = point.key
    return (_card_order(card), point.obs.get("round") or 0, _card_order(public_card))


def _literal(value) -> str:
    """Python literal text, with double-quoted strings."""
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, tuple):
        inner = ", ".join(_literal(item) for item in value)
        return f"({inner},)" if len(value) == 1 else f"({inner})"
    return repr(value)


_POLICY_CLASS = '''\
class Policy:
    """Plays the decision table of its seat."""

    def __init__(self, player, game):
        self.table = TABLES[player]
        self.action_id = {name: i for i, name in enumerate(game["action_names"])}

    def act(self, obs):
        action = self.table.get(situation_key(obs))
        if action is None:
            # Every situation of the game is in the table; this only guards
            # against an observation format the table was not built from.
            return min(obs["legal_actions"])
        return self.action_id[action]
'''


_ONE_SEAT_POLICY_CLASS = '''\
class Policy:
    """Plays the decision table of its seat (the lowest legal action in a seat it has none for)."""

    def __init__(self, player, game):
        self.table = TABLES.get(player, {})
        self.action_id = {name: i for i, name in enumerate(game["action_names"])}

    def act(self, obs):
        action = self.table.get(situation_key(obs))
        if action is None:
            # Not this policy's seat (or an observation format the table was not built from).
            return min(obs["legal_actions"])
        return self.action_id[action]
'''
