"""RRPS code against code, without OpenSpiel states (the referee's fast path).

In repeated Rock-Paper-Scissors the history *is* the state: no chance, no
hidden information, both players move at every throw, and the return is the
sum of the throws' scores.  So for matches between two code policies this
lockstep keeps every episode's throws in one array (throw x episode x seat)
and its running score in another, and works on all episodes of a host at
once with numpy instead of stepping one `pyspiel.State` and one view per
episode.  Every episode of the lockstep is at the same throw, so each host
gets one batch per throw, sent by column (`PolicyHost.send_act_columns`):
its seat's newest move and the opponent's as two columns, the scores as a
third, the round and the legal actions once.

Everything else is the general `Lockstep`'s: the same episode ids, seats and
seeds (seat-swapped pairs or seat-fixed episodes, `sampling.episode_plan`),
the same per-episode referee generator for sampling returned distributions
(sampled in the same order: hosts in lockstep order), the
same failure, time-limit and end-of-episode handling.  OpenSpiel stays the
referee of record: tests play the same matches through both and compare
returns and every throw.  Bots need a state to step on, so any lockstep
with a bot (or a policy playing itself) takes the general path.
"""

from __future__ import annotations

import random
import time

import numpy as np

from csro_tui.evaluation.lockstep import Lockstep, _fewer_gc_passes
from csro_tui.evaluation.participants import CodePolicy
from csro_tui.evaluation.sampling import sample
from csro_tui.sandbox.failures import PolicyFailure

# The observation's keys in RRPSView's order; legal actions never change.
KEYS = ["round", "my_moves", "opp_moves", "my_score", "legal_actions"]
LEGAL = [0, 1, 2]
# SCORE[mine, theirs]: +1 win, -1 loss, 0 tie (games.rrps.throw_score as a table).
SCORE = np.array([[0, -1, 1], [1, 0, -1], [-1, 1, 0]], dtype=np.int64)


def applies(spec, jobs) -> bool:
    """True when every job is between two different code policies in a game whose
    history is the whole state (`GameSpec.history_is_state`: RRPS)."""
    if not getattr(spec, "history_is_state", False):
        return False
    return all(
        isinstance(job.a, CodePolicy) and isinstance(job.b, CodePolicy) and job.a != job.b for job in jobs
    )


class _Plan:
    """One host's part of a throw: the rows (episodes) it plays and its seat in each."""

    def __init__(self, rows: list[int], seats: list[int]) -> None:
        self.ids = rows  # episode id == row
        self.rows = np.array(rows, dtype=np.intp)
        self.seats = np.array(seats, dtype=np.intp)
        self.others = 1 - self.seats
        self.sign = 1 - 2 * self.seats  # seat 0 keeps score0, seat 1 its negation
        # Positions in a throw's (episode, seat) array, flattened: one take/put each.
        self.mine = self.rows * 2 + self.seats
        self.theirs = self.rows * 2 + self.others
        self.count = len(rows)
        self.lists: list[tuple[list, list]] | None = None  # hosts without send_act_columns


class RRPSLockstep(Lockstep):
    """`Lockstep` for RRPS code-vs-code jobs (see module doc); same interface."""

    def __init__(self, spec, jobs, limits, progress, on_result, host_factory, carried=None):
        super().__init__(spec, jobs, limits, progress, on_result, host_factory, carried)
        self.throws = spec.num_repetitions
        self.throw = 0
        self.row_match: list = []  # per row: its match
        self.row_index: list[int] = []  # per row: its position within the match
        self.row_seat_of_a: list[int] = []
        self.rngs: list[random.Random] = []  # per row: the referee's generator
        self.plans: dict = {}
        self.history = None
        self.score0 = None

    def start(self) -> None:
        seats_of: dict = {host: ([], []) for host in self.hosts.values()}
        row = 0
        for match in self.matches:
            for index, planned in enumerate(match.plan):
                seat_of_a = planned.seat_of_a
                role_seeds = (planned.a_seed, planned.b_seed)
                for role in (0, 1):
                    seat = seat_of_a if role == 0 else 1 - seat_of_a
                    host = match.hosts[role]
                    host.new.append((row, seat, role_seeds[role]))
                    seats_of[host][0].append(row)
                    seats_of[host][1].append(seat)
                self.row_match.append(match)
                self.row_index.append(index)
                self.row_seat_of_a.append(seat_of_a)
                self.rngs.append(random.Random(planned.referee_seed))
                row += 1
        self.history = np.zeros((self.throws, row, 2), dtype=np.int8)
        self.score0 = np.zeros(row, dtype=np.int64)
        self.plans = {host: _Plan(*seats_of[host]) for host in self.hosts.values()}
        self._start_hosts()

    # -- the step loop ---------------------------------------------------------

    def run(self, deadline: float, limit: float) -> None:
        with _fewer_gc_passes():
            self._run_throws(self._deadlines(deadline, limit), limit)

    def _run_throws(self, deadline: float, limit: float) -> None:
        hosts = list(self.hosts.values())
        history, score0 = self.history, self.score0
        next_report = time.monotonic() + 0.25
        self._replan(hosts)
        while self.throw < self.throws:
            if self.cut_short:
                self._drop_finished_matches(hosts)
            asking = [host for host in hosts if host.failure is None and self.plans[host].count]
            if not asking:
                break
            for host in asking:
                self._send_throw(host)
            for host in asking:
                self._receive_throw(host)
            if self.cut_short:  # a host failed: its matches end, the others play this throw
                self._drop_finished_matches(hosts)
            now_moves = history[self.throw]
            score0 += SCORE[now_moves[:, 0], now_moves[:, 1]]
            self.throw += 1
            now = time.monotonic()
            if now > deadline and self.throw < self.throws:
                deadline = self._overrun(limit, now)
            if self.progress is not None and now >= next_report:
                next_report = now + 0.25
                self._report_progress()
        if self.cut_short:
            self._drop_finished_matches(hosts)
        if self.throw == self.throws:
            self._record_all(hosts)
        self._report_progress()

    def _replan(self, hosts) -> None:
        """Plans without the rows of matches that are over (after a failure)."""
        for host in hosts:
            plan = self.plans[host]
            keep = [i for i, row in enumerate(plan.ids) if not self.row_match[row].over]
            if len(keep) != plan.count:
                lists = plan.lists
                plan.__init__([plan.ids[i] for i in keep], [int(plan.seats[i]) for i in keep])
                if lists is not None:
                    plan.lists = [lists[i] for i in keep]

    def _drop_finished_matches(self, hosts) -> None:
        """The rows of ended matches go: their hosts forget the episodes."""
        self.cut_short = False
        for host in hosts:
            if host.failure is None:
                plan = self.plans[host]
                host.ended.extend(row for row in plan.ids if self.row_match[row].over)
        self._end_finished(hosts)
        self._replan(hosts)

    def _send_throw(self, host) -> None:
        host.sent = False
        plan = self.plans[host]
        throw = self.throw
        started = time.monotonic()
        try:
            send = getattr(host.host, "send_act_columns", None)
            if send is None:
                self._send_dicts(host, plan, throw)
                return
            whole = []
            if throw:
                last = self.history[throw - 1].ravel()
                mine = last.take(plan.mine).tolist()
                theirs = last.take(plan.theirs).tolist()
                dropped = host.host.dropped_lists
                if dropped:
                    whole = self._whole_lists(plan, dropped, throw)
            else:  # the first throw: every list starts empty
                mine = theirs = [0] * plan.count
                whole = [(i, key, []) for i in range(plan.count) for key in ("my_moves", "opp_moves")]
            length = max(throw - 1, 0)
            host.sent = send(
                plan.ids,
                keys=KEYS,
                same={"round": throw, "legal_actions": LEGAL},
                each={"my_score": (self.score0.take(plan.rows) * plan.sign).tolist()},
                grown={"my_moves": (length, mine), "opp_moves": (length, theirs)},
                whole=whole,
            )
            host.answers = None if host.sent else []
        except PolicyFailure as error:
            self._fail_host(host, error)
        finally:
            host.busy_seconds += time.monotonic() - started

    def _whole_lists(self, plan: _Plan, dropped, throw: int) -> list:
        """Lists the policy changed in place, sent whole (rows' full histories)."""
        position = {row: i for i, row in enumerate(plan.ids)}
        whole = []
        for row, key in sorted(dropped):
            i = position.get(row)
            if i is not None and key in ("my_moves", "opp_moves"):
                seat = plan.seats[i] if key == "my_moves" else plan.others[i]
                whole.append((i, key, self.history[:throw, row, seat].tolist()))
        return whole

    def _send_dicts(self, host, plan: _Plan, throw: int) -> None:
        """Hosts without the column API (test doubles): one observation dict
        per episode, as RRPSView builds it, with lists that only grow."""
        if plan.lists is None:
            plan.lists = [([], []) for _ in range(plan.count)]
        if throw:
            last = self.history[throw - 1]
            for (my_moves, opp_moves), mine, theirs in zip(
                plan.lists, last[plan.rows, plan.seats].tolist(), last[plan.rows, plan.others].tolist()
            ):
                my_moves.append(mine)
                opp_moves.append(theirs)
        scores = (self.score0[plan.rows] * plan.sign).tolist()
        batch = [
            (row, {"round": throw, "my_moves": my_moves, "opp_moves": opp_moves, "my_score": score,
                   "legal_actions": list(LEGAL)})
            for row, (my_moves, opp_moves), score in zip(plan.ids, plan.lists, scores)
        ]
        send = getattr(host.host, "send_act", None)
        if send is None:
            host.answers = host.host.act(batch)
        else:
            host.sent = send(batch)
            host.answers = None if host.sent else []

    def _receive_throw(self, host) -> None:
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
        plan = self.plans[host]
        try:
            moves = np.fromiter(answers, dtype=np.int8, count=plan.count)
        except TypeError:  # distributions among the answers: the referee samples them
            rngs = self.rngs
            moves = np.array(
                [answer if answer.__class__ is int else sample(answer, rngs[row]) for answer, row in zip(answers, plan.ids)],
                dtype=np.int8,
            )
        self.history[self.throw].ravel()[plan.mine] = moves

    # -- the end ---------------------------------------------------------------

    def _record_all(self, hosts) -> None:
        """Every live episode is over: returns, then the hosts forget them."""
        score0 = self.score0.tolist()
        for row, match in enumerate(self.row_match):
            if match.over:
                continue
            match.returns[self.row_index[row]] = float(score0[row] if self.row_seat_of_a[row] == 0 else -score0[row])
            match.remaining -= 1
        for host in hosts:
            if host.failure is None:
                host.ended.extend(row for row in self.plans[host].ids if not self.row_match[row].over)
        self._end_finished(hosts)

    def _report_progress(self) -> None:
        if self.progress is None:
            return
        done = 0.0
        moved = self.throw / self.throws
        for match in self.matches:
            done += 1.0 if match.over else moved
        self.progress(done, len(self.matches))

    def throws_of(self, row: int) -> list[tuple[int, int]]:
        """The joint actions (seat 0, seat 1) played so far in episode `row`."""
        return [tuple(pair) for pair in self.history[: self.throw, row].tolist()]
