"""The referee: plays sampled matches between two participants.

The referee is trusted.  It owns every OpenSpiel state, samples chance
outcomes and the distributions policies return, applies the game's automatic
actions, steps benchmark bots in-process and sends each code policy only its
own observations, through that policy's sandbox host.

Speed comes from lockstep: all episodes of a match advance together, and at
each step every code participant gets one batched `host.act` call covering
every live episode in which it must act.  The cost of crossing the process
boundary is paid once per step, not once per move.

Seats and seeds.  Episodes come in pairs that share one seed: in the first
of a pair participant `a` sits in seat 0, in the second in seat 1.  Sharing
the seed deals the same cards to the seats in both episodes (duplicate
format), which cancels much of the luck of the deal; the standard error is
therefore computed over pair means.  An odd episode count is rounded up to
the next even number so both seats are played equally often.
"""

from __future__ import annotations

import ctypes
import math
import random
import time
from typing import TYPE_CHECKING, Any, Callable

import numpy as np
import pyspiel

from csro_tui.evaluation.participants import BotPolicy, CodePolicy, Participant, find_bot
from csro_tui.evaluation.results import MatchResult
from csro_tui.policies.failures import FailureCategory, PolicyFailure

if TYPE_CHECKING:
    from csro_tui.games.base import GameSpec

# progress(done_episodes, total_episodes)
Progress = Callable[[int, int], None]
# host_factory(source, game_info, name=..., limits=...) -> a PolicyHost-like object
HostFactory = Callable[..., Any]

TERMINAL = int(pyspiel.PlayerId.TERMINAL)
SIMULTANEOUS = int(pyspiel.PlayerId.SIMULTANEOUS)
CHANCE = int(pyspiel.PlayerId.CHANCE)

# Used when neither the caller nor the sandbox limits give one; generous,
# because a match of thousands of episodes is legitimately long.
DEFAULT_MATCH_SECONDS = 600.0


def episode_seeds(seed: int, pairs: int) -> list[int]:
    """One seed per pair of seat-swapped episodes, derived from the match seed."""
    return [int(s) for s in np.random.SeedSequence(seed).generate_state(pairs)]


def episode_streams(episode_seed: int) -> tuple[int, int, int]:
    """(referee rng seed, seed for participant a, seed for participant b).

    Derived from the episode seed alone, so one recorded seed replays an
    episode exactly.
    """
    referee, seed_a, seed_b = np.random.SeedSequence(episode_seed).generate_state(3)
    return int(referee), int(seed_a), int(seed_b)


def seed_native_rng(seed: int) -> None:
    """Seed libc's random(), which most OpenSpiel RRPS bots draw from.

    Those bots call the C library's global `random()` without a seed of their
    own, so without this their play changes from run to run.  Seeding it at
    the start of a match makes a match deterministic given its seed as long
    as no other thread of this process plays a match with such bots at the
    same time (the runner uses processes, so it never does).
    """
    try:
        ctypes.CDLL(None).srandom(ctypes.c_uint(seed & 0xFFFFFFFF))
    except (OSError, AttributeError):  # no libc random() here: nothing to seed
        pass


def sample(distribution: dict[int, float], rng: random.Random) -> int:
    """Draw one action; actions are taken in ascending order for determinism."""
    threshold = rng.random()
    cumulative = 0.0
    action = None
    for action in sorted(distribution):
        cumulative += distribution[action]
        if threshold < cumulative:
            return action
    return action  # rounding left the threshold just above the total


def sample_chance(state, rng: random.Random) -> int:
    threshold = rng.random()
    cumulative = 0.0
    action = None
    for action, probability in state.chance_outcomes():
        cumulative += probability
        if threshold < cumulative:
            return action
    return action


class _Episode:
    """One live episode: its state, generator, seats and per-seat players."""

    __slots__ = ("id", "state", "rng", "seat_of_a", "views", "agents", "pending")

    def __init__(self, id: int, state, rng: random.Random, seat_of_a: int, views: list, agents: list):
        self.id = id
        self.state = state
        self.rng = rng
        self.seat_of_a = seat_of_a
        self.views = views  # per seat: ObservationView for a code side, else None
        self.agents = agents  # per seat: BotAgent for a bot side, else None
        self.pending = [0, 0]  # the actions chosen this step, per seat


class _Side:
    """One participant of the match: a sandboxed code policy or a bot."""

    def __init__(self, participant: Participant, spec: "GameSpec"):
        self.participant = participant
        self.name = participant.name
        self.is_code = isinstance(participant, CodePolicy)
        self.bot = None if self.is_code else find_bot(spec, participant.name)
        self.host = None
        self.busy_seconds = 0.0  # time spent waiting for this side's host


def play_match(
    spec: "GameSpec",
    a: Participant,
    b: Participant,
    *,
    episodes: int,
    seed: int,
    limits: Any = None,
    progress: Progress | None = None,
    match_seconds: float | None = None,
    host_factory: HostFactory | None = None,
) -> MatchResult:
    """Play `episodes` episodes of a against b, seats swapped; a's view of it.

    A code policy failure ends the match and is returned in
    `MatchResult.failure` (never raised); so is overrunning the per-match
    wall-time limit, charged to the code side that used the most time.
    """
    if episodes < 1:
        raise ValueError("a match needs at least one episode")
    pairs = (episodes + 1) // 2
    limit = _match_time_limit(match_seconds, limits)
    sides = [_Side(a, spec), _Side(b, spec)]
    factory = host_factory or (_default_host_factory() if any(side.is_code for side in sides) else None)
    seeds = episode_seeds(seed, pairs)
    seed_native_rng(seed)
    returns: list[float | None] = [None] * (2 * pairs)
    try:
        _start_hosts(spec, sides, factory, limits)
        live = _new_episodes(spec, sides, seeds)
        _play_lockstep(spec, sides, live, returns, limit, progress)
        failure = None
    except PolicyFailure as error:
        failure = error
    finally:
        for side in sides:
            if side.host is not None:
                side.host.close()
    return _result(a, b, seeds, returns, failure)


def _match_time_limit(match_seconds: float | None, limits: Any) -> float:
    if match_seconds is not None:
        return match_seconds
    from_limits = getattr(limits, "match_seconds", None)
    return float(from_limits) if from_limits else DEFAULT_MATCH_SECONDS


def _default_host_factory() -> HostFactory:
    from csro_tui.policies.sandbox import PolicyHost

    return PolicyHost


def _start_hosts(spec, sides: list[_Side], factory: HostFactory, limits: Any) -> None:
    game_info = spec.game_info()
    for side in sides:
        if not side.is_code:
            continue
        kwargs = {"name": side.name}
        if limits is not None:
            kwargs["limits"] = limits
        try:
            side.host = factory(side.participant.source, game_info, **kwargs)
            side.host.start()
        except PolicyFailure as error:
            raise _blame(error, side) from None


def _new_episodes(spec, sides: list[_Side], seeds: list[int]) -> list[_Episode]:
    game = spec.load()
    episodes: list[_Episode] = []
    host_requests: list[list[tuple[int, int, int]]] = [[], []]
    for pair, pair_seed in enumerate(seeds):
        referee_seed, *side_seeds = episode_streams(pair_seed)
        for seat_of_a in (0, 1):
            episode_id = 2 * pair + seat_of_a
            views, agents = [None, None], [None, None]
            for side_index, side in enumerate(sides):
                seat = seat_of_a if side_index == 0 else 1 - seat_of_a
                if side.is_code:
                    views[seat] = spec.new_view(seat)
                    host_requests[side_index].append((episode_id, seat, side_seeds[side_index]))
                else:
                    agents[seat] = side.bot.make(seat, side_seeds[side_index])
            episodes.append(
                _Episode(
                    id=episode_id,
                    state=game.new_initial_state(),
                    rng=random.Random(referee_seed),
                    seat_of_a=seat_of_a,
                    views=views,
                    agents=agents,
                )
            )
    for side, requests in zip(sides, host_requests):
        if side.host is not None:
            try:
                side.host.new_episodes(requests)
            except PolicyFailure as error:
                raise _blame(error, side) from None
    return episodes


def _play_lockstep(spec, sides, live, returns, limit, progress) -> None:
    """Advance every live episode one decision per iteration (see module doc).

    Kept lean on purpose: this loop runs once per move of every episode, so
    each state is asked for its current player once and everything else is
    plain list work.
    """
    deadline = time.monotonic() + limit
    auto_action = spec.auto_action if _overrides_auto_action(spec) else None
    total = len(live)
    done = 0
    code_a, code_b = sides[0].is_code, sides[1].is_code
    while live:
        # Per code side: the batch for its host and where each answer goes.
        batches: tuple[list, list] = ([], [])
        targets: tuple[list, list] = ([], [])
        moving: list[tuple[_Episode, int]] = []  # (episode, acting player or SIMULTANEOUS)
        finished: list[int] = []
        for episode in live:
            state = episode.state
            player = state.current_player()
            if player == CHANCE:
                player = _settle_chance(state, episode.rng)
            if auto_action is not None and player != TERMINAL:
                action = auto_action(state)
                while action is not None:
                    state.apply_action(action)
                    player = _settle_chance(state, episode.rng)
                    action = None if player == TERMINAL else auto_action(state)
            if player == TERMINAL:
                returns[episode.id] = state.returns()[episode.seat_of_a]
                finished.append(episode.id)
                continue
            moving.append((episode, player))
            for seat in ((0, 1) if player == SIMULTANEOUS else (player,)):
                agent = episode.agents[seat]
                if agent is not None:
                    episode.pending[seat] = agent.step(state)
                else:
                    side_index = 0 if seat == episode.seat_of_a else 1
                    batches[side_index].append((episode.id, episode.views[seat].observe(state)))
                    targets[side_index].append((episode, seat))
        if code_a and batches[0]:
            _ask_host(sides[0], batches[0], targets[0])
        if code_b and batches[1]:
            _ask_host(sides[1], batches[1], targets[1])
        for episode, player in moving:
            if player == SIMULTANEOUS:
                episode.state.apply_actions(episode.pending)
            else:
                episode.state.apply_action(episode.pending[player])
        if finished:
            _end_episodes(sides, finished)
            done += len(finished)
            if progress is not None:
                progress(done, total)
            live = [episode for episode, _ in moving]
        if live and time.monotonic() > deadline:
            raise _overrun(sides, limit)


def _settle_chance(state, rng: random.Random) -> int:
    """Resolve chance nodes; the player to act next (or TERMINAL/SIMULTANEOUS)."""
    player = state.current_player()
    while player == CHANCE:
        state.apply_action(sample_chance(state, rng))
        player = state.current_player()
    return player


def _overrides_auto_action(spec) -> bool:
    """False when the spec keeps GameSpec's no-op, so the loop can skip the call."""
    try:
        from csro_tui.games.base import GameSpec
    except ImportError:
        return True
    return getattr(type(spec), "auto_action", None) is not GameSpec.auto_action


def _ask_host(side: _Side, batch: list, targets: list) -> None:
    """One round trip: every observation this side needs now, in one batch."""
    started = time.monotonic()
    try:
        answers = side.host.act(batch)
    except PolicyFailure as error:
        raise _blame(error, side) from None
    finally:
        side.busy_seconds += time.monotonic() - started
    for (episode, seat), answer in zip(targets, answers):
        episode.pending[seat] = answer if answer.__class__ is int else sample(answer, episode.rng)


def _end_episodes(sides: list[_Side], episode_ids: list[int]) -> None:
    for side in sides:
        if side.host is not None:
            try:
                side.host.end_episodes(episode_ids)
            except PolicyFailure as error:
                raise _blame(error, side) from None


def _blame(error: PolicyFailure, side: _Side) -> PolicyFailure:
    """Make sure the failure names the participant it belongs to."""
    if not error.policy:
        error.policy = side.name
        error.args = (error.summary(),)
    return error


def _overrun(sides: list[_Side], limit: float) -> PolicyFailure:
    code_sides = [side for side in sides if side.is_code]
    culprit = max(code_sides, key=lambda side: side.busy_seconds) if code_sides else None
    return PolicyFailure(
        FailureCategory.TIMEOUT,
        f"the match overran its limit of {limit:g} s",
        policy=culprit.name if culprit else "",
    )


def _result(a, b, seeds, returns, failure) -> MatchResult:
    played = [index for index, value in enumerate(returns) if value is not None]
    played_returns = [float(returns[index]) for index in played]
    return MatchResult(
        a=a.name,
        b=b.name,
        mean=float(np.mean(played_returns)) if played_returns else 0.0,
        stderr=_paired_stderr(returns),
        episodes=len(played),
        # Episode 2k and 2k+1 share seed k (a in seat 0, then in seat 1).
        seeds=[seeds[index // 2] for index in played],
        returns=played_returns,
        failure=failure,
    )


def _paired_stderr(returns: list[float | None]) -> float:
    """Standard error of the mean over seat-swapped pairs (see module doc).

    With a single pair there is no spread of pair means to measure; the spread
    of its two episodes stands in as a rough figure.
    """
    pair_means = [
        (returns[i] + returns[i + 1]) / 2
        for i in range(0, len(returns) - 1, 2)
        if returns[i] is not None and returns[i + 1] is not None
    ]
    if len(pair_means) >= 2:
        return float(np.std(pair_means, ddof=1) / math.sqrt(len(pair_means)))
    played = [value for value in returns if value is not None]
    if len(played) >= 2:
        return float(np.std(played, ddof=1) / math.sqrt(len(played)))
    return 0.0
