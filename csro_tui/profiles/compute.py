"""Computing a policy's behaviour profile, the way its game says (see __init__).

Exact games read the policy's exact table (`evaluation.exact.tabular_policy`,
the sandboxed tabulariser with its caches): for every information state the
action probabilities, and how likely the state is reached when the policy
plays either seat against the uniform random opponent (chance x the
opponent's uniform moves x the policy's own earlier moves).

Other games are played: the code runs only in its sandbox host (one host per
opponent, all asked in lockstep, so a crash against one opponent leaves the
others' results), the opponents are trusted bots stepped here.  Every seed
derives from the profile's seed, so a profile is reproducible from it.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections import OrderedDict
from typing import TYPE_CHECKING, Any, Callable, Sequence

import numpy as np

from csro_tui.evaluation.participants import BotPolicy, CodePolicy, Participant, find_bot
from csro_tui.profiles.coverage import WHERE, Coverage, coverage_host_factory, instrument
from csro_tui.profiles.model import EXACT, PROBES, SAMPLED, FrequencyRow, ProbeRow, Profile, SituationRow

if TYPE_CHECKING:
    from csro_tui.games.base import BenchmarkBot, GameSpec

# Profiles are cached by (game, code hash, seed, episodes, seat); one is a few kB.
_CACHE_SIZE = 512
_cache: "OrderedDict[tuple, Profile]" = OrderedDict()
_cache_lock = threading.Lock()

# Most situations kept in a sampled profile (the most visited); generic games
# can have a distinct observation at almost every move.
MAX_SAMPLED_SITUATIONS = 60
# A sampled profile's wall-time cap; past it, unfinished opponents show a timeout.
PROFILE_SECONDS = 120.0


def profile_kind(spec: "GameSpec") -> str:
    if spec.exact:
        return EXACT
    return PROBES if spec.behaviour_probes() else SAMPLED


def profile_policy(
    spec: "GameSpec",
    participant: Participant,
    *,
    seed: int = 0,
    limits: Any = None,
    host_factory: Callable | None = None,
    episodes: int | None = None,
    branches: bool = False,
    seat: int | None = None,
) -> Profile:
    """`participant`'s behaviour profile (cached by game, code hash, seed and seat).  Played
    profiles always note which of the code's branches never ran (`never_ran`); exact
    ones only with `branches` (a second pass over the information states).  `seat` (a
    member of one seat's population, two populations): a played profile plays that seat
    only, its situations named with it; exact profiles hold both seats' states anyway
    (the comparison keeps the seat's: `distance.compare(..., seat=)`)."""
    kind = profile_kind(spec)
    identity = _identity(participant)
    played_seat = None if kind == EXACT else seat
    key = (str(spec.load()), identity, None if kind == EXACT else seed, episodes, played_seat)
    with _cache_lock:
        cached = _cache.get(key)
        if cached is not None:
            _cache.move_to_end(key)
    if cached is not None:
        if branches and kind == EXACT and cached.never_ran is None and not cached.failure:
            cached.never_ran = exact_branches_never_ran(spec, participant, limits=limits, host_factory=host_factory)
        return cached
    if kind == EXACT:
        profile = exact_profile(spec, participant, limits=limits, host_factory=host_factory)
        if branches and not profile.failure:
            profile.never_ran = exact_branches_never_ran(spec, participant, limits=limits, host_factory=host_factory)
    else:
        profile = sampled_profile(spec, participant, seed=seed, limits=limits, host_factory=host_factory,
                                  episodes=episodes, seat=played_seat)
    with _cache_lock:
        _cache[key] = profile
        while len(_cache) > _CACHE_SIZE:
            _cache.popitem(last=False)
    return profile


def _identity(participant: Participant) -> str:
    if isinstance(participant, CodePolicy):
        return participant.source_hash
    return "bot:" + hashlib.sha256(participant.name.encode()).hexdigest()


def _payoff_scale(spec: "GameSpec") -> float:
    game = spec.load()
    try:
        return float(max(abs(game.max_utility()), abs(game.min_utility()))) or 1.0
    except Exception:  # some games do not say; one unit is a fair unit then
        return 1.0


# ---------------------------------------------------------------- exact games

_opponent_reach: dict[str, np.ndarray] = {}
_opponent_reach_lock = threading.Lock()


def opponent_reach(spec: "GameSpec", opponent: Any = None) -> np.ndarray:
    """Per row of the game's table: the probability of reaching the row's information
    state from chance and the opponent (uniform random, or the TabularPolicy
    `opponent` in both seats), the row player's own moves counted as certain, summed
    over the state's histories.  The uniform one is built once per game."""
    # imported when used, not at the top: keeps csro's start-up fast
    from csro_tui.evaluation.exact import game_tables

    tables = game_tables(spec)
    key = str(spec.load())
    if opponent is None:
        with _opponent_reach_lock:
            if key in _opponent_reach:
                return _opponent_reach[key]
    lookup = tables.template.state_lookup
    reach = np.zeros(len(tables.row_key))
    probabilities = opponent.action_probability_array if opponent is not None else None

    def walk(state, weights: tuple[float, float]) -> None:
        if state.is_terminal():
            return
        if state.is_chance_node():
            for action, probability in state.chance_outcomes():
                walk(state.child(action), (weights[0] * probability, weights[1] * probability))
            return
        player = state.current_player()
        row = lookup[state.information_state_string(player)]
        reach[row] += weights[player]
        legal = state.legal_actions()
        for action in legal:
            scaled = list(weights)
            scaled[1 - player] *= 1 / len(legal) if probabilities is None else probabilities[row, action]
            if scaled[1 - player] > 0 or scaled[player] > 0:
                walk(state.child(action), (scaled[0], scaled[1]))

    walk(spec.load().new_initial_state(), (1.0, 1.0))
    if opponent is None:
        with _opponent_reach_lock:
            _opponent_reach[key] = reach
    return reach


def exact_profile(spec: "GameSpec", participant: Participant, *, limits=None, host_factory=None) -> Profile:
    # imported when used, not at the top: keeps csro's start-up fast
    from csro_tui.evaluation.exact import game_tables, tabular_policy
    from csro_tui.sandbox.failures import PolicyFailure

    profile = Profile(spec.name, participant.name, _identity(participant), EXACT, payoff_scale=_payoff_scale(spec))
    try:
        table = tabular_policy(spec, participant, limits=limits, host_factory=host_factory)
    except PolicyFailure as failure:
        profile.failure = failure.summary()
        return profile
    tables = game_tables(spec)
    probabilities = table.action_probability_array
    flat = np.append(probabilities.ravel(), 1.0)
    own = np.prod(flat[tables.own_path_index], axis=1)
    outside = opponent_reach(spec)
    names = spec.action_names()
    for row, state in enumerate(tables.template.states):
        seat = int(tables.row_player[row])
        situation = spec.situation(spec.new_view(seat).observe(state))
        legal = state.legal_actions(seat)
        profile.situations.append(SituationRow(
            group=situation.group,
            label=situation.label,
            seat=seat,
            distribution={_word(situation, names, a): float(probabilities[row, a]) for a in legal},
            weight=float(outside[row] * own[row]),
            key=tables.row_key[row],
            opponent_reach=float(outside[row]),
        ))
    return profile


def exact_branches_never_ran(spec: "GameSpec", participant: Participant, *, limits=None,
                             host_factory=None) -> list[dict] | None:
    """The code's branches that no information state of the game made run: the
    tabulariser's questions asked again of an instrumented copy (profiles/coverage.py).
    None when not measured (not code, not instrumentable, or the copy failed)."""
    # imported when used, not at the top: keeps csro's start-up fast
    from csro_tui.evaluation.exact import _ask_every_information_state, default_host_factory, game_tables
    from csro_tui.sandbox.failures import PolicyFailure

    if not isinstance(participant, CodePolicy):
        return None
    instrumented = instrument(participant.source)
    if instrumented is None:
        return None
    coverage = Coverage(instrumented)
    if instrumented.branches:
        copy = CodePolicy(participant.name, instrumented.source)
        factory = coverage_host_factory(host_factory or default_host_factory(), coverage)
        try:
            # The tabulariser's own episodes, not its cached table: the copy must be asked.
            _ask_every_information_state(spec, game_tables(spec), copy, limits, factory)
        except PolicyFailure:
            return None
    if not coverage.complete:
        return None
    return [hint.to_dict() for hint in coverage.never_ran(WHERE[EXACT])]


def _word(situation, names: Sequence[str], action: int) -> str:
    word = situation.moves.get(action)
    return word if word else (names[action] if action < len(names) else str(action))


# ---------------------------------------------------------------- played games


def profile_opponents(spec: "GameSpec") -> list["BenchmarkBot"]:
    probes = list(spec.behaviour_probes())
    return probes if probes else list(spec.benchmark())


def sampled_profile(
    spec: "GameSpec",
    participant: Participant,
    *,
    seed: int,
    limits: Any = None,
    host_factory: Callable | None = None,
    episodes: int | None = None,
    seat: int | None = None,
) -> Profile:
    """`seat`: play that seat only (a member of one seat's population), as many episodes."""
    kind = profile_kind(spec)
    opponents = profile_opponents(spec)
    per_opponent = max(2, episodes or spec.profile_episodes)
    per_opponent += per_opponent % 2  # seats swapped in pairs
    instrumented = instrument(participant.source) if isinstance(participant, CodePolicy) else None
    coverage = Coverage(instrumented) if instrumented is not None else None
    played = play_against(spec, participant, opponents, episodes=per_opponent, seed=seed, limits=limits,
                          host_factory=host_factory, count_situations=kind == SAMPLED, coverage=coverage,
                          seat=seat)
    profile = Profile(spec.name, participant.name, _identity(participant), kind, seed=seed,
                      payoff_scale=_payoff_scale(spec), seat=seat)
    if coverage is not None and coverage.complete:
        profile.never_ran = [hint.to_dict() for hint in coverage.never_ran(WHERE[kind])]
    profile.probes = played.rows
    profile.frequencies = frequency_rows(played.frequencies)
    if kind == SAMPLED:  # one-shot games: when in the episode a payoff came says nothing of adapting
        for row in profile.probes:
            row.thirds, row.stops_falling_after = [], None
    counts = sorted(played.situations.items(), key=lambda item: -item[1][0])[:MAX_SAMPLED_SITUATIONS]
    for (group, label), (visits, moves) in counts:
        total = sum(moves.values()) or 1.0
        profile.situations.append(SituationRow(
            group=group, label=label, seat=seat,
            distribution={word: weight / total for word, weight in sorted(moves.items())},
            weight=float(visits),
        ))
    return profile


class _Played:
    def __init__(self) -> None:
        self.rows: list[ProbeRow] = []
        # (group, label) -> [visits, {move word: summed probability}]
        self.situations: dict[tuple[str, str], list] = {}
        # condition -> [answers, {move word: [summed probability, summed square]}] (RRPS)
        self.frequencies: dict[str, list] = {}


class _Episode:
    __slots__ = ("id", "opponent", "pair", "seat", "state", "rng", "view", "agent", "last", "deltas", "decisions", "pending", "own_seed")

    def __init__(self, id, opponent, pair, seat, state, rng, view, agent):
        self.id, self.opponent, self.pair, self.seat = id, opponent, pair, seat
        self.state, self.rng, self.view, self.agent = state, rng, view, agent
        self.last = 0.0
        self.deltas: list[tuple[int, float]] = []  # (decisions made before it, change of return)
        self.decisions = 0
        self.pending: dict[int, int] = {}
        self.own_seed = 0


def play_against(
    spec: "GameSpec",
    participant: Participant,
    opponents: Sequence["BenchmarkBot"],
    *,
    episodes: int,
    seed: int,
    limits: Any = None,
    host_factory: Callable | None = None,
    count_situations: bool = False,
    seconds: float = PROFILE_SECONDS,
    coverage: Coverage | None = None,
    seat: int | None = None,
) -> _Played:
    """Play `participant` against each opponent, `episodes` each (seats swapped in
    pairs that share a seed; with `seat`, all in that seat, each with its own seed).  The episodes share as few sandbox hosts as the hosts'
    episode budget allows, every host asked once per step; if the policy fails, the profile is played again with one host per
    opponent, so each opponent's result says whether the policy failed against it
    (a failure kills its host, and with one host it could not be told apart).
    With `coverage`, an instrumented copy of the code plays (profiles/coverage.py) and
    reports the branches it took; a failure anywhere leaves the coverage incomplete."""
    played = _play(spec, participant, opponents, _packed(len(opponents), episodes, limits), episodes=episodes,
                   seed=seed, limits=limits, host_factory=host_factory, count_situations=count_situations,
                   seconds=seconds, coverage=coverage, seat=seat)
    if isinstance(participant, CodePolicy) and any(row.failure for row in played.rows) and len(opponents) > 1:
        played = _play(spec, participant, opponents, [[i] for i in range(len(opponents))], episodes=episodes,
                       seed=seed, limits=limits, host_factory=host_factory, count_situations=count_situations,
                       seconds=seconds, coverage=None, seat=seat)
    if coverage is not None and any(row.failure for row in played.rows):
        coverage.complete = False
    return played


def _packed(count: int, episodes: int, limits: Any) -> list[list[int]]:
    """Opponents in groups that share a host, each within the episodes a host may hold
    at once (`SandboxLimits.episodes_per_host`, as the referee's waves; an opponent
    with more gets a host of its own)."""
    # imported when used, not at the top: keeps csro's start-up fast
    from csro_tui.evaluation.referee import episodes_per_host

    per_host = episodes_per_host(limits)
    groups: list[list[int]] = []
    for index in range(count):
        if groups and (len(groups[-1]) + 1) * episodes <= per_host:
            groups[-1].append(index)
        else:
            groups.append([index])
    return groups


def _play(spec, participant, opponents, groups: list[list[int]], *, episodes, seed, limits, host_factory,
          count_situations, seconds, coverage: Coverage | None = None, seat: int | None = None) -> _Played:
    """`play_against` with the opponents' episodes on one host per group."""
    # imported when used, not at the top: keeps csro's start-up fast
    # imported when used, not at the top: keeps csro's start-up fast
    import random

    # imported when used, not at the top: keeps csro's start-up fast
    import pyspiel

    # imported when used, not at the top: keeps csro's start-up fast
    from csro_tui.evaluation.lockstep import episode_stderr, paired_stderr
    # imported when used, not at the top: keeps csro's start-up fast
    from csro_tui.evaluation.sampling import derive, episode_streams, sample, sample_chance
    # imported when used, not at the top: keeps csro's start-up fast
    from csro_tui.sandbox.failures import PolicyFailure

    game = spec.load()
    names = spec.action_names()
    conditions_of = getattr(spec, "frequency_conditions", None)  # RRPS: move frequencies per last throw
    code = participant if isinstance(participant, CodePolicy) else None
    own_bot = find_bot(spec, participant.name) if isinstance(participant, BotPolicy) else None
    factory = host_factory
    if code is not None and factory is None:
        # imported when used, not at the top: keeps csro's start-up fast
        from csro_tui.sandbox.sandbox import PolicyHost as factory  # noqa: N813
    played = _Played()
    episodes_of: list[list[_Episode]] = []
    failures: list[str | None] = [None] * len(opponents)
    next_id = 0
    # (pair, seat) per episode: seats swapped in pairs that share a seed, or one seat's
    # episodes each with a seed of its own (the first half's seeds are the pairs' seeds).
    plan = ([(pair, own) for pair in range(episodes // 2) for own in (0, 1)] if seat is None
            else [(pair, seat) for pair in range(episodes)])
    if seat is None:
        stderr_of = paired_stderr
    else:  # independent episodes, no pairs
        def stderr_of(values: list[float | None]) -> float:
            return episode_stderr([value for value in values if value is not None])
    for index, opponent in enumerate(opponents):
        mine: list[_Episode] = []
        for pair, own in plan:
            pair_seed = derive(seed, "profile", opponent.name, pair)
            referee_seed, own_seed, their_seed = episode_streams(pair_seed)
            agent = opponent.make(1 - own, their_seed)
            view = own_bot.make(own, own_seed) if own_bot is not None else spec.new_view(own)
            episode = _Episode(next_id, index, pair, own, game.new_initial_state(),
                               random.Random(referee_seed), view, agent)
            episode.own_seed = own_seed
            mine.append(episode)
            next_id += 1
        episodes_of.append(mine)
    hosts: list[Any] = [None] * len(groups)
    for number, group in enumerate(groups):
        if code is None:
            continue
        source = coverage.instrumented.source if coverage is not None else code.source
        hosts[number] = factory(source, spec.game_info(), name=code.name, limits=limits)
        try:
            launch = getattr(hosts[number], "launch", None)
            if launch is not None:
                launch()
        except PolicyFailure as failure:
            for index in group:
                failures[index] = failure.summary()
    for number, group in enumerate(groups):
        if code is None or any(failures[index] for index in group):
            continue
        try:
            hosts[number].new_episodes([(e.id, e.seat, e.own_seed) for index in group for e in episodes_of[index]])
        except PolicyFailure as failure:
            for index in group:
                failures[index] = failure.summary()

    def fail(number: int, message: str) -> None:
        for index in groups[number]:
            if live[index] or failures[index] is None and not _finished(episodes_of[index]):
                failures[index] = message
            live[index] = []

    auto = spec.auto_action
    deadline = time.monotonic() + seconds
    live = [list(mine) if failures[i] is None else [] for i, mine in enumerate(episodes_of)]
    try:
        while any(live):
            if time.monotonic() > deadline:
                for index, mine in enumerate(live):
                    if mine:
                        failures[index] = f"timed out: the profile's {seconds:.0f} s were up"
                        live[index] = []
                break
            requests: list[list[tuple[_Episode, int, dict]]] = [[] for _ in groups]
            for number, group in enumerate(groups):
                for index in group:
                    still = []
                    for episode in live[index]:
                        state = episode.state
                        while True:
                            if state.is_chance_node():
                                state.apply_action(sample_chance(state, episode.rng))
                                continue
                            action = None if state.is_terminal() else auto(state)
                            if action is None:
                                break
                            state.apply_action(action)
                        if state.is_terminal():
                            continue
                        still.append(episode)
                        player = state.current_player()
                        seats = (0, 1) if player == pyspiel.PlayerId.SIMULTANEOUS else (player,)
                        pending = {}
                        for mover in seats:
                            if mover == episode.seat:
                                obs = episode.view.observe(state) if code is not None else None
                                requests[number].append((episode, mover, obs))
                            else:
                                pending[mover] = episode.agent.step(state)
                        episode.pending = pending
                    live[index] = still
            # Every host gets its batch before any answer is read (they think together).
            sent = []
            for number, batch in enumerate(requests):
                if not batch or code is None:
                    continue
                try:
                    if hosts[number].send_act([(e.id, obs) for e, _, obs in batch]):
                        sent.append(number)
                except PolicyFailure as failure:
                    fail(number, failure.summary())
            answers: dict[int, list] = {}
            for number in sent:
                try:
                    answers[number] = hosts[number].receive_act()
                except PolicyFailure as failure:
                    fail(number, failure.summary())
            for number, batch in enumerate(requests):
                if not any(live[index] for index in groups[number]):
                    continue
                for position, (episode, mover, obs) in enumerate(batch):
                    if code is not None:
                        answer = answers[number][position]
                    else:
                        answer = episode.view.action_probabilities(episode.state) or episode.view.step(episode.state)
                    distribution = answer if isinstance(answer, dict) else {int(answer): 1.0}
                    if count_situations and obs is not None:
                        _count(played, spec.situation(obs), names, distribution)
                    if obs is not None and conditions_of is not None:
                        for condition in conditions_of(obs):
                            _count_frequency(played, condition, names, distribution)
                    episode.pending[mover] = sample(distribution, episode.rng)
                    episode.decisions += 1
                for index in groups[number]:
                    for episode in live[index]:
                        pending = episode.pending
                        if len(pending) == 2:
                            episode.state.apply_actions([pending[0], pending[1]])
                        else:
                            (action,) = pending.values()
                            episode.state.apply_action(action)
                        _note_return(episode)
        if coverage is not None:
            for number, group in enumerate(groups):
                if hosts[number] is not None and not any(failures[index] for index in group):
                    coverage.report(hosts[number], [e.id for index in group for e in episodes_of[index]])
    finally:
        for host in hosts:
            if host is not None:
                host.close()

    for index, opponent in enumerate(opponents):
        finished = [e for e in episodes_of[index] if e.state.is_terminal()]
        returns: list[float | None] = [None] * len(episodes_of[index])
        thirds = np.zeros(3)
        trends: list[float | None] = [None] * len(episodes_of[index])  # last third minus first, per episode
        falls: list[int] = []
        for position, episode in enumerate(episodes_of[index]):
            if failures[index] is None and episode.state.is_terminal():
                returns[position] = float(episode.state.returns()[episode.seat])
                split = _thirds(episode)
                thirds += split
                trends[position] = float(split[2] - split[0])
                falls.append(_last_fall(episode))
        played_returns = [r for r in returns if r is not None]
        played.rows.append(ProbeRow(
            name=opponent.name,
            description=opponent.description,
            mean=float(np.mean(played_returns)) if played_returns else None,
            stderr=stderr_of(returns) if played_returns else None,
            thirds=[float(x) for x in thirds / len(finished)] if finished and failures[index] is None else [],
            trend_stderr=stderr_of(trends) if played_returns else None,
            episodes=len(played_returns),
            failure=failures[index],
            stops_falling_after=max(falls) if falls else None,
            moves=max((e.decisions for e in finished), default=0),
        ))
    return played


def _finished(episodes: list[_Episode]) -> bool:
    return all(episode.state.is_terminal() for episode in episodes)


def _note_return(episode: _Episode) -> None:
    now = float(episode.state.returns()[episode.seat])
    if now != episode.last:
        episode.deltas.append((episode.decisions, now - episode.last))
        episode.last = now


def _last_fall(episode: _Episode) -> int:
    """The decision after which the episode's running total last went down (0: never)."""
    return max((made for made, delta in episode.deltas if delta < 0), default=0)


def _thirds(episode: _Episode) -> np.ndarray:
    """The episode's return split by when it came: after the first, middle or last third of its decisions."""
    split = np.zeros(3)
    total = max(1, episode.decisions)
    for made, delta in episode.deltas:
        split[min(2, max(0, (made - 1) * 3 // total))] += delta
    return split


def _count_frequency(played: _Played, condition: str, names, distribution: dict) -> None:
    """One answer under `condition`: each move's probability, and its square (for the noise)."""
    entry = played.frequencies.setdefault(condition, [0, {}])
    entry[0] += 1
    for action in range(len(names)):
        probability = float(distribution.get(action, distribution.get(str(action), 0.0)))
        sums = entry[1].setdefault(names[action], [0.0, 0.0])
        sums[0] += probability
        sums[1] += probability * probability


def frequency_rows(frequencies: dict[str, list]) -> list[FrequencyRow]:
    """Each condition's move frequencies, with the standard error of each: the spread of the
    per-throw answers over the square root of their count (0 for a policy that answers the
    same distribution every throw, the binomial error for one that samples its own moves)."""
    rows = []
    for condition, (count, sums) in frequencies.items():
        distribution, stderr = {}, {}
        for word, (total, squares) in sums.items():
            mean = total / count
            variance = squares / count - mean * mean
            variance = variance if variance > 1e-12 else 0.0  # the same answer every throw: rounding, not noise
            distribution[word] = mean
            stderr[word] = (variance / (count - 1)) ** 0.5 if count > 1 else 0.0
        rows.append(FrequencyRow(condition, count, distribution, stderr))
    return rows


def _count(played: _Played, situation, names, distribution: dict) -> None:
    entry = played.situations.setdefault((situation.group, situation.label), [0, {}])
    entry[0] += 1
    for action, probability in distribution.items():
        word = situation.moves.get(int(action)) or (names[int(action)] if int(action) < len(names) else str(action))
        entry[1][word] = entry[1].get(word, 0.0) + float(probability)


def head_to_head(spec: "GameSpec", a: Participant, b: Participant, seed: int) -> dict:
    """A's mean return against B with its standard error (0 when exact)."""
    # imported when used, not at the top: keeps csro's start-up fast
    from csro_tui.evaluation.exact import exact_payoff
    from csro_tui.evaluation.referee import play_match
    from csro_tui.evaluation.sampling import derive

    if a.name == b.name and isinstance(b, CodePolicy):
        # The referee keys a match's sandbox hosts by name: a policy against itself
        # (`csro diff seed:X seed:X`) needs two.
        b = CodePolicy(f"{b.name} (B)", b.source)
    if spec.exact:
        result = exact_payoff(spec, a, b)
    else:
        result = play_match(spec, a, b, episodes=spec.default_episodes, seed=derive(seed, "head-to-head"))
    record = {"mean": result.mean, "stderr": None if result.exact or not result.stderr_measurable else result.stderr,
              "episodes": result.episodes, "exact": result.exact}
    if result.failure is not None:
        record["failure"] = result.failure.summary()
    return record
