"""The exact best-response oracle, for games with exact evaluation.

The opponent is the current meta-strategy: the reach-weighted behavioural
mixture of the population members (each tabularised through its sandbox
host).  Since every policy plays both seats, the oracle computes one best
response per seat - seat 0 against the mixture's seat-1 behaviour and seat 1
against its seat-0 behaviour - and renders both decision tables into one
readable policy module (`csro_tui.oracles.render`).

When the meta-strategy already is an exact equilibrium (exploitability at
round-off level) the oracle raises `OracleExhausted`: the run is over.

With two populations (`context.seat` set) it computes one best response, for
that seat, against the other seat's meta-strategy (`context.population`),
and renders that one table: the policy plays its lowest legal action in the
other seat, where it is never seated.  It has nothing for the seat when no
best response beats the seat's own members (`context.own_population`)
against that mixture: the seat's population already holds a best response,
which is what the engine needs from both seats to end the run.

Information sets are keyed by what a policy sees (`situation_key(obs)`),
not by OpenSpiel's information-state strings: a code policy cannot tell
apart two states with the same observation, so its best response must not
either.  Where the observation is as fine as OpenSpiel's information state
(Kuhn; Leduc up to suits, which never matter) the result is exactly
OpenSpiel's best response.  Ties go to
the lowest action id, so the oracle is deterministic.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Hashable, Mapping, Sequence

import numpy as np
from open_spiel.python import policy as openspiel_policy
from open_spiel.python.algorithms import best_response as openspiel_best_response

from csro_tui.errors import CsroError
from csro_tui.evaluation.exact import game_tables, mixture_policy_of_tables, policy_values, tabularize
from csro_tui.evaluation.participants import CodePolicy
from csro_tui.oracles.base import OracleContext, repeated_rejection_note
from csro_tui.oracles.registry import OracleExhausted, game_refusal
from csro_tui.oracles.render import DecisionPoint, SeatTable, decision_points, render_decision_tables
from csro_tui.records import PolicyRecord, Proposal
from csro_tui.same_code import normalized_code

if TYPE_CHECKING:
    import pyspiel

    from csro_tui.games.base import GameSpec

# Two actions whose counterfactual values differ by less than this are
# treated as tied, so float noise in the sums cannot flip the choice away
# from the lowest action id.
TIE_TOLERANCE = 1e-12

# A meta-strategy no best response beats by more than this is an exact
# equilibrium of the game: another best response would only duplicate a
# member, so the oracle says it has finished.
CONVERGED_EXPLOITABILITY = 1e-9


class _ObservationKeyedBestResponse(openspiel_best_response.BestResponsePolicy):
    """OpenSpiel's best response with information sets keyed by observation.

    `key_of_history` maps a decision node's `history_str()` to the key of
    what the responder sees there; nodes sharing a key form one information
    set.  Among equally good actions the lowest id wins.
    """

    def __init__(
        self,
        game: "pyspiel.Game",
        player_id: int,
        policy: openspiel_policy.Policy,
        key_of_history: Mapping[str, Hashable],
    ) -> None:
        self._key_of_history = key_of_history
        self._values: dict[str, float] = {}  # history_str -> value under the response
        self._actions: dict[Hashable, int] = {}  # key -> chosen action
        # key -> {action: expected value once there}, None where never reached.
        self.action_values: dict[Hashable, dict[int, float] | None] = {}
        super().__init__(game, player_id, policy)

    def info_sets(self, state):
        infosets: dict[Hashable, list] = {}
        for node, cf_prob in self.decision_nodes(state):
            key = self._key_of_history[node.history_str()]
            infosets.setdefault(key, []).append((node, cf_prob))
        return infosets

    def value(self, state):
        """The responder's expected return from `state` on."""
        history = state.history_str()
        if history not in self._values:
            if state.is_terminal():
                value = state.player_return(self._player_id)
            elif state.current_player() == self._player_id:
                key = self._key_of_history[history]
                value = self.q_value(state, self.best_response_action(key))
            else:
                value = sum(p * self.q_value(state, a) for a, p in self.transitions(state) if p > 0)
            self._values[history] = value
        return self._values[history]

    def best_response_action(self, key):
        """The lowest-id action among those with the highest counterfactual value."""
        if key not in self._actions:
            nodes = self.infosets[key]
            values = {
                action: sum(cf_prob * self.q_value(node, action) for node, cf_prob in nodes)
                for action in sorted(nodes[0][0].legal_actions(self._player_id))
            }
            reach = sum(cf_prob for _, cf_prob in nodes)
            self.action_values[key] = (
                {a: v / reach for a, v in values.items()} if reach > 0 else None
            )
            best = max(values.values())
            self._actions[key] = next(a for a, v in values.items() if v >= best - TIE_TOLERANCE)
        return self._actions[key]

    def action_probabilities(self, state, player_id=None):
        key = self._key_of_history[state.history_str()]
        return {self.best_response_action(key): 1.0}


def seat_best_response(
    spec: "GameSpec",
    seat: int,
    opponent: openspiel_policy.Policy,
    points: Sequence[DecisionPoint] | None = None,
) -> SeatTable:
    """The exact best response in `seat` to `opponent` (a policy for the other seat).

    Situations the opponent never lets happen do not affect the value, so
    every action ties there; rather than fold a king by tie-breaking, the
    table plays a best response to a uniform random opponent in them (all
    situations below one are unreached too, so this is consistent).
    `points` are the seat's decision points (from `decision_points`); pass
    them in to avoid walking the game tree again.
    """
    game = spec.load()
    if points is None:
        points = decision_points(spec, seat)
    key_of_history = {point.history: point.key for point in points}
    tree = _keyed_tree(spec, seat, points) if _is_game_table(spec, opponent) else None
    if tree is not None:
        value, actions, action_values = tree.best_response(opponent)
    else:
        response = _ObservationKeyedBestResponse(game, seat, opponent, key_of_history)
        value = response.value(game.new_initial_state())
        actions = {point.key: response.best_response_action(point.key) for point in points}
        action_values = dict(response.action_values)
    unreached = frozenset(key for key, values in action_values.items() if values is None)
    if unreached:
        fallback = _uniform_response(game, seat, key_of_history)
        for key in unreached:
            actions[key] = fallback.best_response_action(key)
            action_values[key] = fallback.action_values[key]
    return SeatTable(
        seat=seat,
        value=float(value),
        actions=actions,
        action_values=action_values,
        unreached=unreached,
    )


class _KeyedTree:
    """The game tree of one seat in sequence form, with its decision nodes
    grouped by what the seat sees (the keys of `_ObservationKeyedBestResponse`),
    so a best response to a table is a few array operations instead of a
    tree walk in Python (Leduc: ~10 ms against ~0.3 s per seat).

    Requires perfect recall at the level of keys (every node of a key has
    the same previous own decision); `_keyed_tree` returns None otherwise.
    """

    def __init__(self, spec: "GameSpec", seat: int, points: Sequence[DecisionPoint]) -> None:
        tables = game_tables(spec)
        template = tables.template
        game = spec.load()
        self.keys = list(dict.fromkeys(point.key for point in points))
        index_of = {key: index for index, key in enumerate(self.keys)}
        key_of_history = {point.history: index_of[point.key] for point in points}
        actions = template.action_probability_array.shape[1]
        self.actions = actions
        self.root = len(self.keys) * actions
        self.padding = tables.padding  # the opponent's flat array carries a 1.0 there
        legal = np.zeros((len(self.keys), actions), dtype=bool)
        parent = np.full(len(self.keys), -1, dtype=np.int64)
        depth = np.zeros(len(self.keys), dtype=np.int64)
        node_key, node_chance, node_path = [], [], []
        terminal_last, terminal_chance, terminal_path, terminal_return = [], [], [], []
        opponent = 1 - seat

        def walk(state, chance: float, path: list[int], last: int, own_depth: int) -> None:
            if state.is_terminal():
                terminal_last.append(last)
                terminal_chance.append(chance)
                terminal_path.append(list(path))
                terminal_return.append(state.player_return(seat))
                return
            if state.is_chance_node():
                for action, probability in state.chance_outcomes():
                    walk(state.child(action), chance * probability, path, last, own_depth)
                return
            if spec.auto_action(state) is not None:
                raise _NotSequenceForm
            player = state.current_player()
            if player == seat:
                key = key_of_history[state.history_str()]
                if parent[key] == -1:
                    parent[key], depth[key] = last, own_depth
                    legal[key, state.legal_actions(seat)] = True
                elif parent[key] != last:
                    raise _NotSequenceForm  # no perfect recall at the level of what the seat sees
                node_key.append(key)
                node_chance.append(chance)
                node_path.append(list(path))
                for action in state.legal_actions():
                    walk(state.child(action), chance, path, key * actions + action, own_depth + 1)
                return
            row = template.state_lookup[template._state_key(state, opponent)]  # noqa: SLF001
            for action in state.legal_actions():
                path.append(row * actions + action)
                walk(state.child(action), chance, path, last, own_depth)
                path.pop()

        walk(game.new_initial_state(), 1.0, [], self.root, 0)
        self.legal = legal
        self.node_key = np.array(node_key, dtype=np.int64)
        self.node_chance = np.array(node_chance)
        self.node_path = _padded(node_path, self.padding)
        self.terminal_last = np.array(terminal_last, dtype=np.int64)
        self.terminal_weight = np.array(terminal_chance) * np.array(terminal_return, dtype=np.float64)
        self.terminal_path = _padded(terminal_path, self.padding)
        self.levels = [
            (np.flatnonzero(depth == level), parent[depth == level]) for level in sorted(set(depth.tolist()), reverse=True)
        ]

    def best_response(self, opponent) -> tuple[float, dict, dict]:
        """(value, key -> action, key -> {action: value per unit of reach} or None
        where the opponent never lets the key happen), as `_ObservationKeyedBestResponse`."""
        flat = np.append(opponent.action_probability_array.ravel(), 1.0)
        weights = self.terminal_weight * np.prod(flat[self.terminal_path], axis=1)
        values = np.bincount(self.terminal_last, weights=weights, minlength=self.root + 1)
        reach = np.bincount(
            self.node_key, weights=self.node_chance * np.prod(flat[self.node_path], axis=1), minlength=len(self.keys)
        )
        chosen = np.zeros(len(self.keys), dtype=np.int64)
        for keys, parents in self.levels:
            action_values = values[: self.root].reshape(-1, self.actions)[keys]
            masked = np.where(self.legal[keys], action_values, -np.inf)
            best = masked.max(axis=1)
            # the lowest legal action within TIE_TOLERANCE of the best
            picks = np.argmax(self.legal[keys] & (action_values >= best[:, None] - TIE_TOLERANCE), axis=1)
            chosen[keys] = picks
            np.add.at(values, parents, action_values[np.arange(len(keys)), picks])
        actions = {key: int(chosen[index]) for index, key in enumerate(self.keys)}
        table = values[: self.root].reshape(-1, self.actions)
        action_values = {
            key: ({int(a): float(table[index, a] / reach[index]) for a in np.flatnonzero(self.legal[index])}
                  if reach[index] > 0 else None)
            for index, key in enumerate(self.keys)
        }
        return float(values[self.root]), actions, action_values


class _NotSequenceForm(Exception):
    """The seat's keys do not fit `_KeyedTree` (the tree walk is used instead)."""


def _padded(paths: list[list[int]], padding: int) -> np.ndarray:
    width = max((len(path) for path in paths), default=0)
    array = np.full((len(paths), max(width, 1)), padding, dtype=np.int64)
    for index, path in enumerate(paths):
        array[index, : len(path)] = path
    return array


# (game string, seat, the keys' histories) -> _KeyedTree, or None where it does not fit.
_keyed_trees: dict[tuple, "_KeyedTree | None"] = {}


def _keyed_tree(spec: "GameSpec", seat: int, points: Sequence[DecisionPoint]) -> "_KeyedTree | None":
    identity = (str(spec.load()), seat, tuple((point.history, point.key) for point in points))
    with _uniform_lock:
        if identity in _keyed_trees:
            return _keyed_trees[identity]
    try:
        tree: _KeyedTree | None = _KeyedTree(spec, seat, points)
    except _NotSequenceForm:
        tree = None
    with _uniform_lock:
        _keyed_trees[identity] = tree
    return tree


def _is_game_table(spec: "GameSpec", policy) -> bool:
    """Whether `policy` is a TabularPolicy over the game's own rows (the exact tables')."""
    if not isinstance(policy, openspiel_policy.TabularPolicy) or not getattr(spec, "exact", False):
        return False

    template = game_tables(spec).template
    return policy.action_probability_array.shape == template.action_probability_array.shape and (
        policy.state_lookup is template.state_lookup or policy.state_lookup == template.state_lookup
    )


# (game string, seat) -> the best response to the uniform random policy: the
# same every iteration, and building it walks the whole tree (~0.3 s on Leduc).
_uniform_responses: dict[tuple[str, int], _ObservationKeyedBestResponse] = {}
_uniform_lock = threading.Lock()


def _uniform_response(game, seat: int, key_of_history: Mapping[str, Hashable]) -> _ObservationKeyedBestResponse:
    key = (str(game), seat)
    with _uniform_lock:
        response = _uniform_responses.get(key)
        if response is None or response._key_of_history != key_of_history:  # noqa: SLF001
            uniform = openspiel_policy.UniformRandomPolicy(game)
            response = _ObservationKeyedBestResponse(game, seat, uniform, key_of_history)
            _uniform_responses[key] = response
        return response


@dataclass(frozen=True)
class ExactBestResponse:
    """Best responses in both seats to one opponent policy."""

    seats: tuple[SeatTable, ...]

    @property
    def value(self) -> float:
        """Seat-averaged value: the opponent's exploitability when it plays both seats."""
        return sum(seat.value for seat in self.seats) / len(self.seats)


def exact_best_response(
    spec: "GameSpec",
    opponent: openspiel_policy.Policy,
    points_by_seat: Mapping[int, Sequence[DecisionPoint]] | None = None,
) -> ExactBestResponse:
    """Best responses in seats 0 and 1 to `opponent`, which plays both seats."""
    _require_exact(spec)
    seats = []
    for seat in range(spec.load().num_players()):
        points = points_by_seat[seat] if points_by_seat else None
        seats.append(seat_best_response(spec, seat, opponent, points))
    return ExactBestResponse(seats=tuple(seats))


def _require_exact(spec: "GameSpec") -> None:
    """The oracle's declared need (its `game_needs` in oracles/registry.py), for callers that bypass the registry's check."""
    refusal = game_refusal(BestResponseOracle.name, spec)
    if refusal:
        raise CsroError(refusal)


class BestResponseOracle:
    """Proposes the exact best response to the current meta-strategy.

    Members are tabularised through their sandbox hosts (the evaluation
    layer caches the tables by source); the game's decision points are
    walked once per game and kept.
    """

    name = "best-response"

    def __init__(self) -> None:
        self._points_cache: dict[str, dict[int, list[DecisionPoint]]] = {}

    def propose(self, context: OracleContext) -> Proposal:
        if context.seat is not None:
            return self._propose_for_seat(context, context.seat)
        spec = context.spec
        _require_exact(spec)
        members, weights = _weighted_members(context.population, context.meta_strategy)
        if members:
            opponent = meta_strategy_policy(spec, members, weights)
            against = ", ".join(f"{m.name} {w:.3f}" for m, w in zip(members, weights))
            whose = "The meta-strategy's"
        else:
            opponent = openspiel_policy.UniformRandomPolicy(spec.load())
            against = "the uniform random policy (the population is empty)"
            whose = "The uniform random policy's"
        if context.cancel.is_set():  # tabularising members took a while
            raise CsroError("best-response oracle cancelled")
        points = self.decision_points(spec)
        response = exact_best_response(spec, opponent, points)
        if members and response.value <= CONVERGED_EXPLOITABILITY:
            raise OracleExhausted(
                f"the meta-strategy is an exact equilibrium of {spec.title} "
                f"(exploitability {response.value:.1e}); a best response cannot improve on it"
            )
        name = f"br-{context.iteration}"
        source = render_decision_tables(
            spec,
            response.seats,
            title=f"{name}: exact best response ({spec.title})",
            opponent=[(m.name, w) for m, w in zip(members, weights)] or None,
            points=points,
        )
        _raise_if_a_member(context.population, source, against)
        per_seat = "; ".join(f"seat {s.seat}: {s.value:+.4f}" for s in response.seats)
        rationale = (
            f"Exact best response to {against}. "
            f"Expected value against it: {per_seat} "
            f"(seat average {response.value:+.4f}). "
            f"{whose} exploitability is {response.value:.4f}."
        ) + repeated_rejection_note(context, source)
        return Proposal(source=source, oracle=self.name, name=name, rationale=rationale)

    def _propose_for_seat(self, context: OracleContext, seat: int) -> Proposal:
        """Two populations: the best response in `seat` to the other seat's meta-strategy."""
        spec = context.spec
        _require_exact(spec)
        members, weights = _weighted_members(context.population, context.meta_strategy)
        other = 1 - seat
        if members:
            opponent = meta_strategy_policy(spec, members, weights)
            against = f"seat {other}'s meta-strategy (" + ", ".join(f"{m.name} {w:.3f}" for m, w in zip(members, weights)) + ")"
        else:
            opponent = openspiel_policy.UniformRandomPolicy(spec.load())
            against = f"the uniform random policy (seat {other}'s population is empty)"
        if context.cancel.is_set():
            raise CsroError("best-response oracle cancelled")
        points = self.decision_points(spec)
        table = seat_best_response(spec, seat, opponent, points[seat])
        best_own = _best_own_value(spec, seat, opponent, context.own_population) if members else None
        if best_own is not None and table.value <= best_own[1] + CONVERGED_EXPLOITABILITY:
            raise OracleExhausted(
                f"no best response in seat {seat} beats member {best_own[0].name} ({best_own[0].id}) against "
                f"{against}: {table.value:+.6f} vs {best_own[1]:+.6f}; seat {seat}'s population already holds a best response"
            )
        name = f"br-{context.iteration}-s{seat}"
        source = render_decision_tables(
            spec,
            [table],
            title=f"{name}: exact best response for seat {seat} ({spec.title})",
            opponent=[(m.name, w) for m, w in zip(members, weights)] or None,
            points=points,
        )
        _raise_if_a_member(context.own_population, source, against)
        gain = f" (the seat's best member: {best_own[1]:+.4f})" if best_own is not None else ""
        rationale = (
            f"Exact best response for seat {seat} to {against}. "
            f"Expected value against it in seat {seat}: {table.value:+.4f}{gain}."
        ) + repeated_rejection_note(context, source)
        return Proposal(source=source, oracle=self.name, name=name, rationale=rationale, seat=seat)

    def decision_points(self, spec: "GameSpec") -> dict[int, list[DecisionPoint]]:
        """Every decision point of each seat (walked once per game string)."""
        key = str(spec.load())
        if key not in self._points_cache:
            seats = range(spec.load().num_players())
            self._points_cache[key] = {seat: decision_points(spec, seat) for seat in seats}
        return self._points_cache[key]


def _raise_if_a_member(population: Sequence[PolicyRecord], source: str, against: str) -> None:
    """`OracleExhausted` when the best response is a member's code already.

    Joining would not change the population, so the (deterministic)
    meta-solver would return the same meta-strategy and this oracle the same
    best response again: nothing new can come (under `uniform`, say, where
    the meta-strategy is no equilibrium and the exploitability check above
    never fires).
    """
    code = normalized_code(source)
    if code is None:
        return
    for member in population:
        if normalized_code(member.source) == code:
            raise OracleExhausted(
                f"the best response to the meta-strategy ({against}) is member {member.name} ({member.id}) "
                "already; the population, its meta-strategy and their best response would stay the same"
            )


def _best_own_value(
    spec: "GameSpec", seat: int, opponent, own: Sequence[PolicyRecord]
) -> tuple[PolicyRecord, float] | None:
    """The seat's member worth most in `seat` against `opponent` (a table), with its value."""
    if not own or not _is_game_table(spec, opponent):
        return None
    best: tuple[PolicyRecord, float] | None = None
    for member in own:
        table = tabularize(spec, CodePolicy(member.name, member.source))
        pair = (table, opponent) if seat == 0 else (opponent, table)
        value = float(policy_values(spec, *pair)[seat])
        if best is None or value > best[1]:
            best = (member, value)
    return best


def meta_strategy_policy(
    spec: "GameSpec", members: Sequence[PolicyRecord], weights: Sequence[float]
) -> openspiel_policy.TabularPolicy:
    """The reach-weighted behavioural mixture of `members`, each tabularised in its sandbox."""
    tables = [tabularize(spec, CodePolicy(m.name, m.source)) for m in members]
    return mixture_policy_of_tables(spec, tables, list(weights))


def _weighted_members(
    population: Sequence[PolicyRecord], meta_strategy: Sequence[float]
) -> tuple[list[PolicyRecord], list[float]]:
    """Members with positive weight and their weights, normalised to sum to 1."""
    if population and len(meta_strategy) != len(population):
        raise CsroError(
            f"meta-strategy has {len(meta_strategy)} weights for "
            f"{len(population)} population members"
        )
    pairs = [(m, float(w)) for m, w in zip(population, meta_strategy) if w > 0]
    total = sum(w for _, w in pairs)
    if not pairs or total <= 0:
        return [], []
    return [m for m, _ in pairs], [w / total for _, w in pairs]


def make_best_response_oracle(config: Mapping[str, Any] | None = None) -> BestResponseOracle:
    """Registry factory; the oracle takes no configuration."""
    return BestResponseOracle()
