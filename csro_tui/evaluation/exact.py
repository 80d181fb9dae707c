"""Exact evaluation for small games (Kuhn, Leduc): policies as tables.

A code policy is tabularised by asking its sandbox host about every
information state of both seats (policies play either seat).  To stay
faithful to policies that keep state on `self` within a hand, each
information state is asked in an episode that is first shown the player's
own earlier observations along the way to it, then the state's own
observation; the answer there is the policy there.  States whose
observation sequences are the same, or a prefix of another's, share an
episode (`_shared_episodes`).  All episodes advance together, one batched
host call per depth.

Caveat: a policy that draws its own random numbers (rather than returning a
distribution) is tabularised as the single draw it made with the fixed
tabularisation seed.  Returning a distribution is exact.

Expected payoffs use a sequence-form evaluator (every terminal history with
its chance probability and each player's action indices), so a payoff is a
few vectorised products instead of a tree walk; it agrees with OpenSpiel's
`expected_game_score.policy_value`, which the tests check.
Exploitability is OpenSpiel's definition, computed the same sequence-form
way for tables of the game's rows (`best_response_values`; the tests check
it against `algorithms.exploitability.exploitability`, used for any other
policy).  Tables are cached in memory and on disk (table_cache.py).
"""

from __future__ import annotations

import copy
import hashlib
import json
import threading
import weakref
from collections import OrderedDict
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np
import pyspiel
from open_spiel.python import policy as os_policy
from open_spiel.python.algorithms import exploitability as os_exploitability

from csro_tui.errors import CsroError
from csro_tui.evaluation import table_cache
from csro_tui.evaluation.lockstep import create_episodes, default_host_factory
from csro_tui.evaluation.participants import BotPolicy, CodePolicy, Participant, find_bot
from csro_tui.evaluation.referee import HostFactory
from csro_tui.evaluation.results import MatchResult
from csro_tui.sandbox.failures import FailureCategory, PolicyFailure

if TYPE_CHECKING:
    from csro_tui.games.base import GameSpec

# The seed a code policy receives while being tabularised.
TABULARIZE_SEED = 0
# Tables kept in memory (a Leduc table is ~22 KB).  Every member's table is asked
# for each iteration (a candidate's exact validation meets every member), so a
# population larger than this re-tabularises members in the sandbox every
# iteration: 256 was reached after ~128 iterations with two populations (two
# members per iteration), and each iteration then took ~35 s instead of ~0.3 s.
_CACHE_SIZE = 2048


@dataclass
class GameTables:
    """Everything about a game's tree that evaluation reuses, built once.

    `template` is a uniform TabularPolicy whose rows are the information
    states; `own_path[row]` lists (state, row, action) for each earlier
    decision of the row's player on the way to its representative state;
    terminals are stored in sequence form for fast payoffs.
    """

    template: os_policy.TabularPolicy
    row_player: np.ndarray  # player of each row
    row_key: list[str]  # information state string of each row
    own_path: list[list[tuple[Any, int, int]]]
    own_path_index: np.ndarray  # [row, step] flat index into the policy, padded
    terminal_chance: np.ndarray  # chance probability of each terminal
    terminal_index: list[np.ndarray]  # per player: [terminal, step] flat indices, padded
    terminal_returns: np.ndarray  # [terminal, player]

    @property
    def padding(self) -> int:
        """The flat index of the constant 1.0 appended to a policy's array."""
        return self.template.action_probability_array.size


_tables_cache: dict[str, GameTables] = {}
_tables_lock = threading.Lock()


def game_tables(spec: "GameSpec") -> GameTables:
    """The (cached) tables of the spec's game; a one-line error if not exact."""
    if not getattr(spec, "exact", False):
        raise CsroError(f"{spec.name} has no exact evaluation; use sampled matches")
    key = str(spec.load())  # the full game string, parameters included
    with _tables_lock:
        if key not in _tables_cache:
            _tables_cache[key] = _build_tables(spec.load())
        return _tables_cache[key]


def _build_tables(game) -> GameTables:
    template = os_policy.TabularPolicy(game)
    num_actions = template.action_probability_array.shape[1]
    padding = template.action_probability_array.size
    row_player = np.zeros(len(template.states), dtype=np.int64)
    row_key = [""] * len(template.states)
    for player, keys in enumerate(template.states_per_player):
        for key in keys:
            row_player[template.state_lookup[key]] = player
            row_key[template.state_lookup[key]] = key

    own_path = [_own_path(game, template, state, int(row_player[row])) for row, state in enumerate(template.states)]
    own_path_index = _pad(
        [[row * num_actions + action for _, row, action in path] for path in own_path], padding
    )

    chance, indices, returns = [], ([], []), []

    def walk(state, probability: float, taken: tuple[list[int], list[int]]) -> None:
        if state.is_terminal():
            chance.append(probability)
            indices[0].append(list(taken[0]))
            indices[1].append(list(taken[1]))
            returns.append(state.returns())
            return
        if state.is_chance_node():
            for action, chance_probability in state.chance_outcomes():
                walk(state.child(action), probability * chance_probability, taken)
            return
        player = state.current_player()
        row = template.state_lookup[template._state_key(state, player)]  # noqa: SLF001
        for action in state.legal_actions():
            taken[player].append(row * num_actions + action)
            walk(state.child(action), probability, taken)
            taken[player].pop()

    walk(game.new_initial_state(), 1.0, ([], []))
    return GameTables(
        template=template,
        row_player=row_player,
        row_key=row_key,
        own_path=own_path,
        own_path_index=own_path_index,
        terminal_chance=np.array(chance),
        terminal_index=[_pad(indices[0], padding), _pad(indices[1], padding)],
        terminal_returns=np.array(returns, dtype=np.float64),
    )


def _own_path(game, template, target, player: int) -> list[tuple[Any, int, int]]:
    """The player's earlier decisions on the way to `target`: (state, row, action)."""
    state = game.new_initial_state()
    path = []
    for action in target.history():
        if not state.is_chance_node() and state.current_player() == player:
            row = template.state_lookup[template._state_key(state, player)]  # noqa: SLF001
            path.append((state.clone(), row, action))
        state.apply_action(action)
    return path


def _pad(rows: list[list[int]], padding: int) -> np.ndarray:
    width = max((len(row) for row in rows), default=0)
    table = np.full((len(rows), max(width, 1)), padding, dtype=np.int64)
    for i, row in enumerate(rows):
        table[i, : len(row)] = row
    return table


def _flat(policy: os_policy.TabularPolicy) -> np.ndarray:
    return np.append(policy.action_probability_array.ravel(), 1.0)


def policy_values(spec: "GameSpec", policy0, policy1) -> np.ndarray:
    """Expected returns [v0, v1] when policy0 plays seat 0 and policy1 seat 1."""
    tables = game_tables(spec)
    weights = tables.terminal_chance * _reach(tables, policy0, 0) * _reach(tables, policy1, 1)
    return weights @ tables.terminal_returns


# Cached tables are read-only, so their reach of every terminal is kept with
# them (a new member's entries ask for every member's each iteration).
_reaches: "weakref.WeakKeyDictionary[Any, dict]" = weakref.WeakKeyDictionary()


def _reach(tables: GameTables, policy, seat) -> np.ndarray:
    """The product of `policy`'s own probabilities on the way to each terminal,
    in `seat` (0 or 1); with seat "own", on the way to each row's state."""
    with _policy_lock:
        cached = _reaches.get(policy)
        known = cached.get((id(tables), seat)) if cached is not None else None
        shared = cached is not None or any(policy is table for table in _policy_cache.values())
    if known is not None:
        return known
    index = tables.own_path_index if seat == "own" else tables.terminal_index[seat]
    reach = np.prod(_flat(policy)[index], axis=1)
    if shared:  # only tables of the cache: anything else may still change
        with _policy_lock:
            _reaches.setdefault(policy, {})[(id(tables), seat)] = reach
    return reach


# ---------------------------------------------------------------- tabularise

_policy_cache: "OrderedDict[tuple[str, str], os_policy.TabularPolicy]" = OrderedDict()
# Source hash -> how long its calls took when it was last tabularised here
# (clock.CallTiming.to_dict): exact results carry it, as sampled ones do.
_timings: "OrderedDict[str, dict]" = OrderedDict()
_policy_lock = threading.Lock()


def tabularize(
    spec: "GameSpec",
    code_policy: CodePolicy,
    *,
    limits: Any = None,
    host_factory: HostFactory | None = None,
) -> os_policy.TabularPolicy:
    """The code policy as a TabularPolicy over both seats (cached by source hash).

    The returned table is shared with the cache: treat it as read-only.
    Raises PolicyFailure when the policy fails while being asked.
    """
    return _tabularize(spec, code_policy, limits, host_factory, None)


def _tabularize(spec, code_policy: CodePolicy, limits, host_factory, host) -> os_policy.TabularPolicy:
    """`tabularize`, asking through `host` when one was launched for it already."""
    tables = game_tables(spec)
    key = (str(spec.load()), code_policy.source_hash)
    with _policy_lock:
        if key in _policy_cache:
            _policy_cache.move_to_end(key)
            if host is not None:
                host.close()
            return _policy_cache[key]
    disk_key = _disk_key(spec, tables, code_policy)
    cached = table_cache.load(disk_key, tables.template.legal_actions_mask) if disk_key else None
    if cached is not None:
        if host is not None:
            host.close()
        table = copy.copy(tables.template)
        table.action_probability_array[:] = cached
    else:
        table = _ask_every_information_state(spec, tables, code_policy, limits, host_factory, host)
        if disk_key:
            table_cache.store(disk_key, table.action_probability_array)
    with _policy_lock:
        _policy_cache[key] = table
        while len(_policy_cache) > _CACHE_SIZE:
            _policy_cache.popitem(last=False)
    return table


# Per game: every row's observations, observed once (in the order the rows'
# episodes are sent them) and kept as the JSON text the sandbox would carry.
# Building Leduc observations from information-state strings is ~40% of
# tabularising a policy; decoding the kept text is a fraction of that.  The
# policy receives the same data: observations only ever reach it as JSON.
_snapshot_cache: dict[tuple[str, str], list[list[str]] | None] = {}
_snapshot_digests: dict[tuple[str, str], str] = {}  # the same, hashed: part of table_cache's key


def _observation_snapshots(spec, tables: GameTables) -> list[list[str]] | None:
    """[row][step] observation as JSON text, or None if one is not JSON."""
    key = (spec.name, str(spec.load()))
    with _tables_lock:
        if key in _snapshot_cache:
            return _snapshot_cache[key]
    snapshots: list[list[str]] | None = []
    try:
        for row, state in enumerate(tables.template.states):
            view = spec.new_view(int(tables.row_player[row]))
            path = [path_state for path_state, _, _ in tables.own_path[row]] + [state]
            snapshots.append([json.dumps(view.observe(step_state)) for step_state in path])
    except (TypeError, ValueError):
        snapshots = None  # let the sandbox report it, as before
    with _tables_lock:
        _snapshot_cache[key] = snapshots
    return snapshots


def _disk_key(spec, tables: GameTables, code_policy: CodePolicy) -> str | None:
    """The on-disk cache's key for this policy's table (table_cache.py), or
    None: no cache (observations that are not JSON, or no sandbox here)."""
    snapshots = _observation_snapshots(spec, tables)
    if snapshots is None:
        return None
    key = (spec.name, str(spec.load()))
    with _tables_lock:
        digest = _snapshot_digests.get(key)
    if digest is None:
        digest = hashlib.sha256(json.dumps(snapshots).encode("utf-8")).hexdigest()
        with _tables_lock:
            _snapshot_digests[key] = digest
    try:
        return table_cache.table_key(spec, code_policy.source_hash, digest)
    except CsroError:  # e.g. a sandbox mode that cannot run here: starting the host says so
        return None


def _cached(spec, code_policy: CodePolicy) -> bool:
    with _policy_lock:
        return (str(spec.load()), code_policy.source_hash) in _policy_cache


def _new_host(spec, code_policy: CodePolicy, limits, host_factory):
    factory = host_factory or default_host_factory()
    kwargs = {"name": code_policy.name}
    if limits is not None:
        kwargs["limits"] = limits
    return factory(code_policy.source, spec.game_info(), **kwargs)


def _shared_episodes(spec, tables: GameTables) -> tuple[list[tuple[int, list[str]]], list[tuple[int, int]]] | None:
    """The episodes that ask every row, sharing what can be shared, or None
    (observations that are not JSON).

    A row's episode is shown its observation sequence (own earlier decisions,
    then the row's state).  Rows whose sequences are the same text, or a
    prefix of another row's, are answered by one episode: the policy gets
    the same inputs, in the same order, with the same seed, in a fresh
    module, so it answers the same (rows it cannot tell apart get one
    answer, as they should).  On Leduc: 180 episodes and 567 questions
    instead of 936 and 2664.  Returns (episodes as (player, steps), and per
    row the (episode, step) whose answer is the row's).
    """
    snapshots = _observation_snapshots(spec, tables)
    if snapshots is None:
        return None
    key = (spec.name, str(spec.load()))
    with _tables_lock:
        known = _episode_plans.get(key)
    if known is not None:
        return known
    sequences = [(int(tables.row_player[row]), tuple(steps)) for row, steps in enumerate(snapshots)]
    prefixes = {(player, steps[:length]) for player, steps in sequences for length in range(1, len(steps))}
    episodes: list[tuple[int, list[str]]] = []
    owner: dict[tuple[int, tuple[str, ...]], int] = {}
    for player, steps in sequences:
        if (player, steps) in prefixes or (player, steps) in owner:
            continue
        owner[(player, steps)] = len(episodes)
        episodes.append((player, list(steps)))
    for index, (player, steps) in enumerate(episodes):
        for length in range(1, len(steps)):
            owner.setdefault((player, tuple(steps[:length])), index)
    answered_by = [(owner[(player, steps)], len(steps) - 1) for player, steps in sequences]
    plan = (episodes, answered_by)
    with _tables_lock:
        _episode_plans[key] = plan
    return plan


_episode_plans: dict[tuple[str, str], tuple[list[tuple[int, list[str]]], list[tuple[int, int]]]] = {}


def _ask_every_information_state(spec, tables: GameTables, code_policy, limits, host_factory, host=None):
    template = tables.template
    plan = _shared_episodes(spec, tables)
    if plan is not None:
        episodes, answered_by = plan

        def observe(episode: int, step: int) -> dict:
            return json.loads(episodes[episode][1][step])
    else:
        # One episode per row, shown its own earlier decisions, then its own
        # state; observed only when sent, in order, as the referee would (a
        # view may keep state and reuse its lists).
        episodes = [
            (int(tables.row_player[row]), [path_state for path_state, _, _ in tables.own_path[row]] + [state])
            for row, state in enumerate(template.states)
        ]
        answered_by = [(row, len(steps) - 1) for row, (_, steps) in enumerate(episodes)]
        views = [spec.new_view(player) for player, _ in episodes]

        def observe(episode: int, step: int) -> dict:
            return views[episode].observe(episodes[episode][1][step])

    if host is None:
        host = _new_host(spec, code_policy, limits, host_factory)
    answers_at: dict[tuple[int, int], Any] = {}
    try:
        host.start()
        ids = list(range(len(episodes)))
        create_episodes(host, [(episode, episodes[episode][0], TABULARIZE_SEED) for episode in ids])
        depth = max(len(steps) for _, steps in episodes)
        for step in range(depth):
            asked = [episode for episode in ids if len(episodes[episode][1]) > step]
            answers = host.act([(episode, observe(episode, step)) for episode in asked])
            for episode, answer in zip(asked, answers):
                answers_at[episode, step] = answer
        host.end_episodes(ids)  # the policy's own clean-up runs (and may fail) here, as in a match
    except PolicyFailure as error:
        if not error.policy:
            error.policy = code_policy.name
            error.args = (error.summary(),)
        raise
    finally:
        # A pool reaps its hosts off this path (killed now, reaped later).
        retire = getattr(host_factory, "retire", None)
        if retire is not None and getattr(host, "close_later", None) is not None:
            retire(host)
        else:
            host.close()
    timing = getattr(host, "timing", None)
    measured = timing() if timing is not None else None
    if measured is not None:
        with _policy_lock:
            _timings[code_policy.source_hash] = measured.to_dict()
            while len(_timings) > _CACHE_SIZE:
                _timings.popitem(last=False)

    table = copy.copy(template)
    answers = [answers_at[source] for source in answered_by]
    table.action_probability_array[:] = _answers_to_table(answers, tables, code_policy.name)
    return table


def _answers_to_table(answers: Sequence[Any], tables: GameTables, name: str) -> np.ndarray:
    """Each row's answer (an action id or {action: probability}) as the rows
    of a probability array; the first row with an illegal action or a zero
    total fails the policy."""
    template = tables.template
    probabilities = np.zeros(template.action_probability_array.shape)
    for row, answer in enumerate(answers):
        if isinstance(answer, dict):
            for action, probability in answer.items():
                probabilities[row, int(action)] = probability
        else:
            probabilities[row, int(answer)] = 1.0
    illegal = np.any((probabilities > 0) & (template.legal_actions_mask == 0), axis=1)
    totals = probabilities.sum(axis=1)
    empty = ~(totals > 0)
    if illegal.any() or empty.any():
        row = int(np.flatnonzero(illegal | empty)[0])
        if illegal[row]:
            raise PolicyFailure(
                FailureCategory.ILLEGAL_ACTION,
                f"an illegal action in information state {tables.row_key[row]!r}",
                policy=name,
            )
        raise PolicyFailure(FailureCategory.MALFORMED, "a distribution with zero total", policy=name)
    return probabilities / totals[:, None]


def tabular_policy(
    spec: "GameSpec",
    participant: Participant,
    *,
    limits: Any = None,
    host_factory: HostFactory | None = None,
) -> os_policy.TabularPolicy:
    """Any participant as a TabularPolicy over both seats."""
    if isinstance(participant, CodePolicy):
        return tabularize(spec, participant, limits=limits, host_factory=host_factory)
    return _tabularize_bot(spec, participant)


def _tabularize_bot(spec: "GameSpec", participant: BotPolicy) -> os_policy.TabularPolicy:
    """A tabular benchmark bot as a table: its OpenSpiel policy if it offers
    one, else the distribution its agent reports at every information state."""
    tables = game_tables(spec)
    bot = find_bot(spec, participant.name)
    accessor = getattr(bot, "tabular_policy", None)
    known = accessor(spec.load()) if accessor is not None else None
    agents: dict[int, Any] = {}

    def distribution(state, player: int):
        if known is not None:
            return known.action_probabilities(state, player)
        if player not in agents:
            agents[player] = bot.make(player, TABULARIZE_SEED)
        return agents[player].action_probabilities(state)

    table = copy.copy(tables.template)
    for row, state in enumerate(tables.template.states):
        probabilities = distribution(state, int(tables.row_player[row]))
        if probabilities is None:
            raise CsroError(f"benchmark bot {participant.name} has no table, so no exact evaluation")
        table.action_probability_array[row] = 0.0
        for action, probability in probabilities.items():
            table.action_probability_array[row, int(action)] = probability
    return table


# ---------------------------------------------------------------- payoffs


def exact_payoff(
    spec: "GameSpec",
    a: Participant,
    b: Participant,
    *,
    limits: Any = None,
    host_factory: HostFactory | None = None,
    seat: int | None = None,
) -> MatchResult:
    """a's exact expected return against b, averaged over both seats; with `seat`
    (0 or 1, two populations) a's return when a plays that seat and b the other.

    A code policy failure while tabularising is returned in `failure`.
    """
    # When both sides are code not tabularised yet, b's sandbox is launched
    # before a is asked, so the two start up at the same time (a start-up,
    # a few hundred ms, is most of what tabularising a small game costs).
    b_host = None
    try:
        if (
            isinstance(a, CodePolicy) and isinstance(b, CodePolicy) and a.source_hash != b.source_hash
            and not _cached(spec, a) and not _cached(spec, b)
        ):
            b_host = _new_host(spec, b, limits, host_factory)
            launch = getattr(b_host, "launch", None)
            try:
                if launch is not None:
                    launch()
            except PolicyFailure:
                pass  # kept by the host: raised when b is asked, after a, as before
        table_a = tabular_policy(spec, a, limits=limits, host_factory=host_factory)
        if b_host is not None:
            host, b_host = b_host, None  # _tabularize closes it
            table_b = _tabularize(spec, b, limits, host_factory, host)
        else:
            table_b = tabular_policy(spec, b, limits=limits, host_factory=host_factory)
    except PolicyFailure as failure:
        return MatchResult(a.name, b.name, 0.0, 0.0, 0, exact=True, failure=failure)
    finally:
        if b_host is not None:
            b_host.close()
    if seat == 0:
        mean = policy_values(spec, table_a, table_b)[0]
    elif seat == 1:
        mean = policy_values(spec, table_b, table_a)[1]
    else:
        mean = (policy_values(spec, table_a, table_b)[0] + policy_values(spec, table_b, table_a)[1]) / 2
    timing = _timings.get(a.source_hash) if isinstance(a, CodePolicy) else None
    return MatchResult(a.name, b.name, float(mean), 0.0, 0, exact=True, timing=timing)


def exploitability(
    spec: "GameSpec",
    participant: Participant,
    *,
    limits: Any = None,
    host_factory: HostFactory | None = None,
) -> float:
    """OpenSpiel's exploitability: mean over seats of a best response's gain."""
    table = tabular_policy(spec, participant, limits=limits, host_factory=host_factory)
    return policy_exploitability(spec, table)


def policy_exploitability(spec: "GameSpec", policy) -> float:
    """OpenSpiel's exploitability (the mean over seats of a best response's
    value, the game being zero-sum): in sequence form for tables of the
    game's own rows (`best_response_values`, agreeing with OpenSpiel's to
    round-off, which the tests check; ~1 ms on Leduc against OpenSpiel's
    ~0.5 s), else OpenSpiel's own."""
    tables = game_tables(spec)  # a clear error for games without exact evaluation
    template = tables.template
    if (
        isinstance(policy, os_policy.TabularPolicy)
        and policy.action_probability_array.shape == template.action_probability_array.shape
        and (policy.state_lookup is template.state_lookup or policy.state_lookup == template.state_lookup)
        and spec.load().get_type().utility == pyspiel.GameType.Utility.ZERO_SUM
    ):
        return float(np.mean(best_response_values(spec, policy)))
    return float(os_exploitability.exploitability(spec.load(), policy))


@dataclass
class _ResponseTree:
    """Per player, what a best-response pass needs: each terminal's last own
    decision (flat index, `padding` for none) and the player's rows in
    order of decreasing depth with the decision before each (its parent)."""

    last_decision: list[np.ndarray]  # per player: [terminal] flat index
    rows_by_depth: list[list[np.ndarray]]  # per player: row arrays, deepest first
    parent_by_depth: list[list[np.ndarray]]  # per player: the rows' parent flat indices


_response_trees: dict[str, _ResponseTree] = {}


def _response_tree(spec, tables: GameTables) -> _ResponseTree:
    key = str(spec.load())
    with _tables_lock:
        known = _response_trees.get(key)
    if known is not None:
        return known
    padding = tables.padding
    last_decision, rows_by_depth, parent_by_depth = [], [], []
    for player in range(2):
        index = tables.terminal_index[player]
        taken = (index != padding).sum(axis=1)
        last_decision.append(np.where(taken > 0, index[np.arange(len(index)), np.maximum(taken - 1, 0)], padding))
        rows = np.flatnonzero(tables.row_player == player)
        depth = np.array([len(tables.own_path[row]) for row in rows], dtype=np.int64)
        parents = np.array(
            [tables.own_path_index[row, len(tables.own_path[row]) - 1] if tables.own_path[row] else padding
             for row in rows], dtype=np.int64,
        )
        levels = sorted(set(depth.tolist()), reverse=True)
        rows_by_depth.append([rows[depth == level] for level in levels])
        parent_by_depth.append([parents[depth == level] for level in levels])
    tree = _ResponseTree(last_decision, rows_by_depth, parent_by_depth)
    with _tables_lock:
        _response_trees[key] = tree
    return tree


def best_response_values(spec: "GameSpec", policy: os_policy.TabularPolicy) -> np.ndarray:
    """[v0, v1]: the value of a best response in each seat against `policy`
    in the other seat (over OpenSpiel's information states, perfect recall).

    Sequence form: every terminal's weight (chance x the opponent's reach x
    the responder's return) is summed onto the responder's last decision
    before it; then, deepest information states first, each state's best
    action value is added to the decision that led to it.  What reaches the
    root (`padding`) is the best response's value.
    """
    tables = game_tables(spec)
    tree = _response_tree(spec, tables)
    flat = _flat(policy)
    num_actions = tables.template.action_probability_array.shape[1]
    legal = tables.template.legal_actions_mask.astype(bool)
    values = np.zeros(2)
    for player in range(2):
        reach = np.prod(flat[tables.terminal_index[1 - player]], axis=1)
        weights = tables.terminal_chance * reach * tables.terminal_returns[:, player]
        sequence_value = np.bincount(tree.last_decision[player], weights=weights, minlength=tables.padding + 1)
        for rows, parents in zip(tree.rows_by_depth[player], tree.parent_by_depth[player]):
            action_values = sequence_value[:-1].reshape(-1, num_actions)[rows]
            best = np.where(legal[rows], action_values, -np.inf).max(axis=1)
            np.add.at(sequence_value, parents, best)
        values[player] = sequence_value[tables.padding]
    return values


def joint_policy(
    spec: "GameSpec", seat_0: os_policy.TabularPolicy, seat_1: os_policy.TabularPolicy
) -> os_policy.TabularPolicy:
    """One table playing `seat_0`'s rows in seat 0 and `seat_1`'s in seat 1 (two
    populations: each seat's mixture), so `policy_exploitability` of it is
    OpenSpiel's exploitability of the joint profile (NashConv / 2)."""
    tables = game_tables(spec)
    joint = copy.copy(tables.template)
    first = tables.row_player == 0
    joint.action_probability_array[:] = np.where(
        first[:, None], seat_0.action_probability_array, seat_1.action_probability_array
    )
    return joint


def mixture_policy(
    spec: "GameSpec",
    participants: Sequence[Participant],
    weights: Sequence[float],
    *,
    limits: Any = None,
    host_factory: HostFactory | None = None,
) -> os_policy.TabularPolicy:
    """The meta-strategy as one behaviour policy.

    Playing member i with probability w_i for the whole game equals, at each
    information state I of player p, the reach-weighted mixture
    sum_i w_i r_i(I) pi_i(I) / sum_i w_i r_i(I), where r_i(I) is the product of
    member i's own probabilities for p's earlier actions on the way to I.
    States no member reaches get the plain weighted average.
    """
    if len(participants) != len(weights) or not participants:
        raise CsroError("a mixture needs one weight per participant, and at least one")
    members = [tabular_policy(spec, p, limits=limits, host_factory=host_factory) for p in participants]
    return mixture_policy_of_tables(spec, members, weights)


def mixture_policy_of_tables(
    spec: "GameSpec",
    members: Sequence[os_policy.TabularPolicy],
    weights: Sequence[float],
) -> os_policy.TabularPolicy:
    """`mixture_policy` for members that are already tables."""
    if len(members) != len(weights) or not members:
        raise CsroError("a mixture needs one weight per member, and at least one")
    weights = np.asarray(weights, dtype=np.float64)
    if np.any(weights < 0) or not weights.sum() > 0:
        raise CsroError("mixture weights must be non-negative with a positive total")
    weights = weights / weights.sum()
    tables = game_tables(spec)
    arrays = np.stack([member.action_probability_array for member in members])  # [member, row, action]
    reach = np.stack([_reach(tables, member, "own") for member in members])  # [member, row]
    weighted_reach = weights[:, None] * reach
    numerator = np.einsum("mr,mra->ra", weighted_reach, arrays)
    denominator = weighted_reach.sum(axis=0)
    fallback = np.einsum("m,mra->ra", weights, arrays)
    reached = denominator > 0
    mixed = copy.copy(tables.template)
    mixed.action_probability_array[:] = fallback
    mixed.action_probability_array[reached] = numerator[reached] / denominator[reached, None]
    return mixed
