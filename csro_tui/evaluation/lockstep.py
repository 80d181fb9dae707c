"""The lockstep engine behind the referee (see `referee` for the why).

Many episodes, of one or several matches, advance together: at each step
every live episode moves once, every code participant's host gets one
batched `act` call, and results are folded into `MatchResult`s as matches
end.
"""

from __future__ import annotations

import contextlib
import gc
import math
import random
import threading
import time
from typing import TYPE_CHECKING

import numpy as np
import pyspiel

from csro_tui.evaluation.participants import CodePolicy, find_bot
from csro_tui.evaluation.results import MatchResult
from csro_tui.evaluation.sampling import episode_plan, sample, sample_chance
from csro_tui.games.base import GameSpec
from csro_tui.sandbox.failures import FailureCategory, PolicyFailure

if TYPE_CHECKING:
    from csro_tui.evaluation.referee import MatchJob

TERMINAL = int(pyspiel.PlayerId.TERMINAL)
SIMULTANEOUS = int(pyspiel.PlayerId.SIMULTANEOUS)
CHANCE = int(pyspiel.PlayerId.CHANCE)

NEW_EPISODES_SLICE = 256  # episodes created per host call
PROGRESS_INTERVAL = 0.25  # seconds between progress reports within a step loop


class _SharedHost:
    """A code participant's sandbox host, shared by every match it plays."""

    def __init__(self, participant: CodePolicy):
        self.participant = participant
        self.name = participant.name
        self.host = None
        self.failure: PolicyFailure | None = None
        self.busy_seconds = 0.0  # time spent waiting for this host
        self.matches: list[_Match] = []
        self.new: list[tuple[int, int, int]] = []  # episodes to create at start
        self.targets: list[tuple[_Episode, int]] = []  # this step's (episode, seat) requests
        self.ended: list[int] = []  # this step's finished episodes
        self.sent = False  # this step's batch is in flight (send_act done, receive_act due)
        self.answers: list | None = None  # this step's answers when they came back at once


class _Match:
    def __init__(self, index: int, job: MatchJob, bots: tuple, hosts: tuple):
        self.index = index
        self.job = job
        self.bots = bots  # per role (a, b): BenchmarkBot or None
        self.hosts = hosts  # per role (a, b): _SharedHost or None
        # Every episode in play order: its seed, a's seat and the seeds it draws from.
        self.plan = episode_plan(job.seed, job.episodes, job.seat)
        self.returns: list[float | None] = [None] * len(self.plan)
        self.remaining = len(self.plan)
        self.failure: PolicyFailure | None = None
        self.result: MatchResult | None = None

    @property
    def over(self) -> bool:
        return self.result is not None


class _Episode:
    """One live episode: its state, generator, seats and per-seat players."""

    __slots__ = ("id", "match", "index", "state", "rng", "seat_of_a", "views", "agents", "hosts", "pending")

    def __init__(self, id, match, index, state, rng, seat_of_a, views, agents, hosts):
        self.id = id  # unique across the lockstep: the hosts' episode id
        self.match = match
        self.index = index  # position within its match
        self.state = state
        self.rng = rng
        self.seat_of_a = seat_of_a
        self.views = views  # per seat: ObservationView for a code seat, else None
        self.agents = agents  # per seat: BotAgent for a bot seat, else None
        self.hosts = hosts  # per seat: _SharedHost for a code seat, else None
        self.pending = [0, 0]  # the actions chosen this step, per seat


class Lockstep:
    """Plays `jobs` together; `start`, `run`, then always `close`; `results`."""

    def __init__(self, spec, jobs, limits, progress, on_result, host_factory, carried=None):
        self.spec = spec
        self.limits = limits
        self.progress = progress
        self.on_result = on_result
        self.hosts: dict[CodePolicy, _SharedHost] = {}  # this lockstep's
        # Hosts kept from an earlier wave and for a later one (referee.play_matches):
        # `close` leaves them open, `release_episodes` ends what they still hold.
        self.carried = carried
        self.matches: list[_Match] = []
        for index, job in enumerate(jobs):
            roles = (job.a, job.b)
            bots = tuple(None if isinstance(p, CodePolicy) else find_bot(spec, p.name) for p in roles)
            hosts = tuple(self._host_for(p) if isinstance(p, CodePolicy) else None for p in roles)
            match = _Match(index, job, bots, hosts)
            for host in set(filter(None, hosts)):
                host.matches.append(match)
            self.matches.append(match)
        needs_hosts = bool(self.hosts)
        self.factory = host_factory or (default_host_factory() if needs_hosts else None)
        self.live: list[_Episode] = []
        self.cut_short = False  # some match ended early: its episodes must go
        self.max_length = max(1, spec.load().max_game_length())
        # A deadline of the whole call (the evaluation's cap): (time.monotonic(), the failure's
        # message), or None; open matches end there, also while a host is being waited for.
        self.stop_at: tuple[float, str] | None = None
        self._deadline = math.inf  # the lockstep's match deadline, kept while it runs (`_hold`)
        self._limit = 0.0
        self._overrun_message = ""
        self._hog_stopped = False  # a host was stopped by the match deadline while waited for (`_hold`)

    def _host_for(self, participant: CodePolicy) -> _SharedHost:
        if participant not in self.hosts:
            if self.carried is not None:
                self.hosts[participant] = self.carried.setdefault(participant, _SharedHost(participant))
            else:
                self.hosts[participant] = _SharedHost(participant)
        return self.hosts[participant]

    # -- set-up and tear-down ------------------------------------------------

    def start(self) -> None:
        game = self.spec.load()
        next_id = 0
        for match in self.matches:
            for index, planned in enumerate(match.plan):
                seat_of_a = planned.seat_of_a
                role_seeds = (planned.a_seed, planned.b_seed)
                views, agents, hosts = [None, None], [None, None], [None, None]
                for role in (0, 1):
                    seat = seat_of_a if role == 0 else 1 - seat_of_a
                    host = match.hosts[role]
                    if host is not None:
                        views[seat] = self.spec.new_view(seat)
                        hosts[seat] = host
                        host.new.append((next_id, seat, role_seeds[role]))
                    else:
                        agents[seat] = match.bots[role].make(seat, role_seeds[role])
                self.live.append(
                    _Episode(
                        next_id, match, index, game.new_initial_state(),
                        random.Random(planned.referee_seed), seat_of_a, views, agents, hosts,
                    )
                )
                next_id += 1
        self._start_hosts()

    def _start_hosts(self) -> None:
        """Start every host and create its episodes (`host.new`)."""
        game_info = self.spec.game_info()
        # Launch every host before waiting for any (hosts that have `launch`):
        # they start up at the same time, not one after another.
        for host in self.hosts.values():
            if host.host is not None or host.failure is not None:  # kept from an earlier wave
                continue
            kwargs = {"name": host.name}
            if self.limits is not None:
                kwargs["limits"] = self.limits
            try:
                host.host = self.factory(host.participant.source, game_info, **kwargs)
                launch = getattr(host.host, "launch", None)
                if launch is not None:
                    launch()
            except PolicyFailure as error:
                self._fail_host(host, error)
        for host in self.hosts.values():
            if host.failure is None:
                try:
                    host.host.start()
                    create_episodes(host.host, host.new)
                except PolicyFailure as error:
                    self._fail_host(host, error)
            else:  # failed in an earlier wave: its matches here fail at once
                self._fail_host(host, host.failure)
            host.new = []
        self._finish_matches()

    def close(self) -> None:
        if self.carried is not None:  # the caller's, for the next wave
            self.release_episodes()
            return
        for host in self.hosts.values():
            if host.host is not None:
                host.host.close()

    def release_episodes(self) -> None:
        """End the episodes a host still holds (a lockstep cut short), so a
        carried host starts the next wave empty."""
        for host in self.hosts.values():
            if host.failure is None and getattr(host.host, "batch_in_flight", False):
                # cut short between sending a batch and reading it (a SIGTERM while unwinding):
                # nothing more can be asked of it, so it ends with its episodes
                host.host.close()
                continue
            live = getattr(host.host, "live_episodes", None) if host.failure is None else None
            if live:
                try:
                    host.host.end_episodes(live)
                except PolicyFailure as error:
                    self._fail_host(host, error)

    def results(self) -> list[MatchResult]:
        for match in self.matches:  # a match still open here was cut short by an error
            if match.result is None:
                match.result = _result(match)
            side_a = match.hosts[0]
            timing = getattr(side_a.host, "timing", None) if side_a is not None else None
            measured = timing() if timing is not None else None
            if measured is not None:
                match.result.timing = measured.to_dict()
        return [match.result for match in self.matches]

    # -- the step loop ---------------------------------------------------------

    def run(self, deadline: float, limit: float) -> None:
        """Advance every live episode one decision per iteration (see module doc).

        Kept lean on purpose: this loop runs once per move of every episode,
        so each state is asked for its current player once and everything else
        is plain list work.
        """
        with _fewer_gc_passes():
            self._run(self._deadlines(deadline, limit), limit)

    def _deadlines(self, deadline: float, limit: float) -> float:
        """Keep the match deadline for `_hold`; the time of the next check between steps."""
        self._deadline, self._limit = deadline, limit
        self._overrun_message = f"the match overran its limit of {limit:g} s"
        return deadline if self.stop_at is None else min(deadline, self.stop_at[0])

    def _hold(self, host: _SharedHost, now: float) -> None:
        """The deadlines hold while the host is waited for: it is stopped
        (and charged) once it is both past the lockstep's deadline and past
        its own share of the time (`limit` per match it serves, as
        `_overrun` judges between steps), or at the call's `stop_at`."""
        until = max(self._deadline, now + self._limit * len(host.matches) - host.busy_seconds)
        message = self._overrun_message
        if self.stop_at is not None and self.stop_at[0] < until:
            until, message = self.stop_at
        try:
            host.host.wait_limit = (until, message)
        except AttributeError:  # a host without it (a test double): the checks between steps
            pass

    def _run(self, deadline: float, limit: float) -> None:
        auto_action = self.spec.auto_action if _overrides_auto_action(self.spec) else None
        hosts = list(self.hosts.values())
        next_report = time.monotonic() + PROGRESS_INTERVAL
        while self.live:
            if self.cut_short:  # failed at start-up, or overran the time limit
                self.live = [episode for episode, _ in self._drop_cut_short([(e, 0) for e in self.live], hosts)]
                continue
            moving: list[tuple[_Episode, int]] = []  # (episode, acting player or SIMULTANEOUS)
            bot_moves: list[tuple[_Episode, int]] = []  # (episode, seat) where a bot acts
            finished = False
            for episode in self.live:
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
                    self._record(episode)
                    finished = True
                    continue
                moving.append((episode, player))
                for seat in ((0, 1) if player == SIMULTANEOUS else (player,)):
                    host = episode.hosts[seat]
                    if host is None:
                        bot_moves.append((episode, seat))
                    else:
                        host.targets.append((episode, seat))
            # One round trip per host, overlapped without threads: each host
            # gets its batch as soon as it is built, so it thinks while the
            # next host's observations are built, the other hosts think and
            # the bots step; only then are answers read.  (Threads were
            # measured slower: GIL hand-overs cost more than they won.)
            asking = [host for host in hosts if host.targets]
            for host in asking:
                self._send(host)
            for episode, seat in bot_moves:
                episode.pending[seat] = episode.agents[seat].step(episode.state)
            bot_moves.clear()
            for host in asking:
                self._receive(host)
            if finished:
                self._end_finished(hosts)
            if self.cut_short:
                moving = self._drop_cut_short(moving, hosts)
            for episode, player in moving:
                if player == SIMULTANEOUS:
                    episode.state.apply_actions(episode.pending)
                else:
                    episode.state.apply_action(episode.pending[player])
            self.live = [episode for episode, _ in moving]
            now = time.monotonic()
            if self.live and now > deadline:
                deadline = self._overrun(limit, now)
            if self.progress is not None and now >= next_report:
                next_report = now + PROGRESS_INTERVAL
                self._report_progress()
        self._report_progress()

    def _send(self, host: _SharedHost) -> None:
        """Send the host every observation it needs now, in one batch.

        Hosts without the split API (`send_act`/`receive_act`, e.g. test
        doubles) are asked with one `act` call here instead.
        """
        host.sent = False
        if host.failure is not None:
            return
        batch = [(episode.id, episode.views[seat].observe(episode.state)) for episode, seat in host.targets]
        started = time.monotonic()
        try:
            send = getattr(host.host, "send_act", None)
            if send is None:
                host.answers = host.host.act(batch)
            else:
                host.sent = send(batch)
                host.answers = None if host.sent else []
        except PolicyFailure as error:
            self._fail_host(host, error)
        finally:
            host.busy_seconds += time.monotonic() - started

    def _receive(self, host: _SharedHost) -> None:
        """Put the host's answers into the episodes (sampling distributions)."""
        targets = host.targets
        host.targets = []
        if host.failure is not None:
            return
        answers = host.answers
        if host.sent:
            started = time.monotonic()
            self._hold(host, started)
            try:
                answers = host.host.receive_act()
            except PolicyFailure as error:
                self._fail_host(host, error)
                return
            finally:
                host.busy_seconds += time.monotonic() - started
        host.answers = None
        for (episode, seat), answer in zip(targets, answers):
            episode.pending[seat] = answer if answer.__class__ is int else sample(answer, episode.rng)

    def _drop_cut_short(self, moving: list, hosts: list[_SharedHost]) -> list:
        """Drop the episodes of matches that failed; their hosts forget them."""
        self.cut_short = False
        kept = []
        for episode, player in moving:
            if episode.match.over:
                for host in episode.hosts:
                    if host is not None and host.failure is None:
                        host.ended.append(episode.id)
            else:
                kept.append((episode, player))
        self._end_finished(hosts)
        return kept

    def _record(self, episode: _Episode) -> None:
        match = episode.match
        if match.over:
            return
        match.returns[episode.index] = episode.state.returns()[episode.seat_of_a]
        match.remaining -= 1
        for host in episode.hosts:
            if host is not None:
                host.ended.append(episode.id)

    def _end_finished(self, hosts: list[_SharedHost]) -> None:
        for host in hosts:
            if host.ended and host.failure is None:
                try:
                    host.host.end_episodes(host.ended)
                except PolicyFailure as error:
                    self._fail_host(host, error)
            host.ended = []
        self._finish_matches()

    def _finish_matches(self) -> None:
        for match in self.matches:
            if match.result is None and (match.remaining == 0 or match.failure is not None):
                match.result = _result(match)
                if self.on_result is not None:
                    self.on_result(match.index, match.result)

    def _fail_host(self, host: _SharedHost, error: PolicyFailure) -> None:
        """The host is dead (the sandbox killed it): end every match it served."""
        host.failure = _blame(error, host.name)
        if host.failure.message == self._overrun_message:
            self._hog_stopped = True
        for match in host.matches:
            if match.failure is None and match.result is None:
                match.failure = host.failure
                self.cut_short = True
        self._finish_matches()

    def _overrun(self, limit: float, now: float) -> float:
        """The lockstep passed its deadline (`limit` per match); the next deadline.

        A host that used more than its share - `limit` for each match it
        serves - ends its open matches, charged to it; the other matches get
        a new deadline and play on, so one slow policy cannot time out
        matches it is not in (nor get its opponents blamed).  If no host
        used more than its share (the time went to bots, or was spread
        out), every open match ends, charged to its slowest code side.
        """
        if self.stop_at is not None and now >= self.stop_at[0]:
            self._stop_every_match(self.stop_at[1])
            return math.inf
        message = self._overrun_message
        hogs = [
            host for host in self.hosts.values()
            if host.busy_seconds > limit * len(host.matches) and any(m.result is None for m in host.matches)
        ]
        for host in hogs:
            for match in host.matches:
                if match.result is None and match.failure is None:
                    match.failure = PolicyFailure(FailureCategory.TIMEOUT, message, policy=host.name)
        # A hog stopped while it was waited for (`_hold`) has had its matches ended already.
        stopped, self._hog_stopped = self._hog_stopped, False
        if not hogs and not stopped:
            for match in self.matches:
                if match.result is None:
                    code = [host for host in match.hosts if host is not None]
                    culprit = max(code, key=lambda host: host.busy_seconds) if code else None
                    match.failure = PolicyFailure(
                        FailureCategory.TIMEOUT, message, policy=culprit.name if culprit else ""
                    )
        self._finish_matches()
        self.cut_short = True
        return self._deadlines(now + limit * sum(1 for match in self.matches if match.result is None), limit)

    def _stop_every_match(self, message: str) -> None:
        """The call's `stop_at` passed: every open match ends, charged to its slowest code side."""
        for match in self.matches:
            if match.result is None and match.failure is None:
                code = [host for host in match.hosts if host is not None]
                culprit = max(code, key=lambda host: host.busy_seconds) if code else None
                match.failure = PolicyFailure(FailureCategory.TIMEOUT, message, policy=culprit.name if culprit else "")
        self._finish_matches()
        self.cut_short = True

    def _report_progress(self) -> None:
        if self.progress is None:
            return
        done = 0.0
        partial: dict[int, float] = {}
        for episode in self.live:
            moved = min(1.0, episode.state.move_number() / self.max_length)
            partial[episode.match.index] = partial.get(episode.match.index, 0.0) + moved
        for match in self.matches:
            episodes = len(match.plan)
            if match.over:
                done += 1.0
            else:
                done += (episodes - match.remaining + partial.get(match.index, 0.0)) / episodes
        self.progress(done, len(self.matches))


# The step loop allocates a few small containers per move (observations,
# list deltas, batches), all freed by reference counting; at the default
# gen-0 threshold (700) the cyclic collector still runs every few hundred
# moves and now and then walks every episode's history lists.  Raising the
# threshold while locksteps run cut the referee's CPU per RRPS move by about
# a quarter (instant fake hosts, A/B in turns: median 36.4 -> 28.0 us per
# step of 100 episodes).  Counted, so
# overlapping locksteps on several threads restore the setting only once.
GC_THRESHOLD_WHILE_PLAYING = 10_000
_gc_lock = threading.Lock()
_gc_users = 0
_gc_saved: tuple[int, ...] = ()


@contextlib.contextmanager
def _fewer_gc_passes():
    global _gc_users, _gc_saved
    with _gc_lock:
        if _gc_users == 0:
            _gc_saved = gc.get_threshold()
            if _gc_saved[0] and _gc_saved[0] < GC_THRESHOLD_WHILE_PLAYING:  # 0: collection is off, leave it
                gc.set_threshold(GC_THRESHOLD_WHILE_PLAYING, *_gc_saved[1:])
        _gc_users += 1
    try:
        yield
    finally:
        with _gc_lock:
            _gc_users -= 1
            if _gc_users == 0:
                gc.set_threshold(*_gc_saved)


def create_episodes(host, episodes: list[tuple[int, int, int]]) -> None:
    """`host.new_episodes` in slices: bounded messages, and the host's
    per-call bookkeeping stays cheap however many episodes a lockstep has."""
    for start in range(0, len(episodes), NEW_EPISODES_SLICE):
        host.new_episodes(episodes[start : start + NEW_EPISODES_SLICE])


def _settle_chance(state, rng: random.Random) -> int:
    """Resolve chance nodes; the player to act next (or TERMINAL/SIMULTANEOUS)."""
    player = state.current_player()
    while player == CHANCE:
        state.apply_action(sample_chance(state, rng))
        player = state.current_player()
    return player


def _overrides_auto_action(spec) -> bool:
    """False when the spec keeps GameSpec's no-op, so the loop can skip the call."""
    return getattr(type(spec), "auto_action", None) is not GameSpec.auto_action


def _blame(error: PolicyFailure, name: str) -> PolicyFailure:
    """Make sure the failure names the participant it belongs to."""
    if not error.policy:
        error.policy = name
        error.args = (error.summary(),)
    return error


def _result(match: _Match) -> MatchResult:
    returns = match.returns
    played = [index for index, value in enumerate(returns) if value is not None]
    played_returns = [float(returns[index]) for index in played]
    seat = match.job.seat
    return MatchResult(
        a=match.job.a.name,
        b=match.job.b.name,
        mean=float(np.mean(played_returns)) if played_returns else 0.0,
        stderr=paired_stderr(returns) if seat is None else episode_stderr(played_returns),
        episodes=len(played),
        # Seat-swapped: episodes 2k and 2k+1 share seed k (a in seat 0, then in seat 1).
        seeds=[match.plan[index].seed for index in played],
        returns=played_returns,
        failure=match.failure,
        seat=seat,
    )


def paired_stderr(returns: list[float | None]) -> float:
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


def episode_stderr(returns: list[float]) -> float:
    """Standard error of the mean of independent episodes (a seat-fixed match:
    every episode has its own seed, so each is a sample); 0 below two."""
    if len(returns) < 2:
        return 0.0
    return float(np.std(returns, ddof=1) / math.sqrt(len(returns)))


def default_host_factory():
    from csro_tui.sandbox.sandbox import PolicyHost  # start-up time: importing it loads orjson, rich

    return PolicyHost
