"""What the engine needs from evaluation, behind one small interface.

The engine asks an `Evaluator` for four things: static issues of source,
a batch of matches (sampled or exact), the benchmark bots' names and the
exploitability of a mixture.  `GameEvaluator` answers with the real
sandbox, referee and exact evaluator; tests answer with a fake.

Every match is described by a `MatchJob` with its own seed, derived from
the session seed and the matchup's identity (`derive_seed`), so a recorded
evaluation can be re-run exactly (`csro replay --verify`).  Code policies
take their population id as their name, so a failure's `policy` field says
which side failed.
"""

from __future__ import annotations

import dataclasses
import hashlib
import threading
from collections import OrderedDict
from typing import TYPE_CHECKING, Any, Protocol, Sequence

from csro_tui.errors import EvaluationInterrupted
from csro_tui.evaluation.participants import BotPolicy, CodePolicy
from csro_tui.records import Bot, MatchJob, PolicyRecord
from csro_tui.sandbox.failures import PolicyFailure
from csro_tui.sandbox.validation import validate_source

if TYPE_CHECKING:
    from csro_tui.games.base import GameSpec

# Name a candidate plays under in smoke runs and previews (never a member id).
CANDIDATE = "candidate"
# Sampled results remembered by GameEvaluator (see its docstring).
RESULT_CACHE_SIZE = 4096


class MatchOutcome(Protocol):
    """What a match returns (`csro_tui.evaluation.results.MatchResult` fits)."""

    mean: float
    stderr: float
    episodes: int
    seeds: list[int]
    exact: bool
    failure: PolicyFailure | None


class Evaluator(Protocol):
    exact: bool  # payoff entries are computed exactly

    def static_issues(self, source: str) -> list[dict[str, Any]]:
        """Validation issues as {line, col, message}; empty when the code is valid."""

    def run(self, jobs: Sequence[MatchJob]) -> list[MatchOutcome]:
        """Evaluate every job (possibly in parallel); results in the jobs' order."""

    def bots(self) -> list[str]:
        """Names of the game's benchmark bots (empty when it has none)."""

    def exploitability(self, members: Sequence[PolicyRecord], weights: Sequence[float]) -> float | None:
        """Exploitability of the mixture, or None when the game has no exact evaluation."""

    def forfeit(self) -> float:
        """The payoff a policy that fails in a match is charged (the game's worst)."""

    def close(self) -> None: ...


def derive_seed(*parts: object) -> int:
    """A stable 63-bit seed from the parts (the same across runs and machines).

    63 bits, not fewer: a policy sees seeds derived from a match seed by a
    keyed hash (evaluation.sampling.derive), and a narrow match seed could be
    found by brute force from inside the sandbox.
    """
    digest = hashlib.sha256("\x1f".join(map(str, parts)).encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") >> 1


def as_code(record: PolicyRecord):
    return CodePolicy(record.id, record.source)


class GameEvaluator:
    """The real evaluator: static validation, sandboxed referee, exact evaluation.

    Sampled jobs all go through the runner (`evaluate_matchups`): a small
    batch plays in one lockstep in this process (one sandbox per code
    policy, however many of the batch's matches it plays), a larger one in
    a process pool of referees that the evaluator keeps until `close`, so
    worker start-up is paid once per session, not per batch.  `workers=1`
    keeps everything in this process.

    Sampled results are deterministic given their job (the participants'
    code, seed, episodes and seat), so successful ones are remembered: the same
    job asked again (a candidate's benchmark preview and, once it is
    accepted, the member's benchmark use the same seeds) is not played twice.
    """

    def __init__(
        self,
        spec: "GameSpec",
        *,
        limits: Any = None,
        workers: int | None = None,
        backend: str = "local",
        ray_address: str = "",
    ) -> None:
        self.spec = spec
        self.exact = bool(spec.exact)
        self.limits = limits
        self.workers = workers
        # "ray": sampled batches go to actors on a Ray cluster (ray_backend.py);
        # exact entries are still computed here.
        self.backend = backend
        self.ray_address = ray_address
        # on_cluster_status(ClusterStatus), called from the evaluating thread
        # about 4 times a second while the Ray backend plays a batch.
        self.on_cluster_status = None
        # on_progress(done, total): matchups of the batch being played, from the
        # evaluating thread while the runner reports (the TUI shows counts and time left)
        self.on_progress = None
        # Set by the engine to its stop event: a sampled evaluation in progress is then abandoned
        # at its next progress report (EvaluationInterrupted) instead of playing to its end.
        self.cancel: threading.Event | None = None
        self._pool = None
        self._pool_lock = threading.Lock()
        # Exact games: sandbox hosts started ahead of need (policies/host_pool.py),
        # so tabularising a new policy costs one load, not one process start.
        self._hosts = None
        self._results: OrderedDict[tuple, Any] = OrderedDict()

    def static_issues(self, source: str) -> list[dict[str, Any]]:
        return [
            {"line": issue.line, "col": issue.col, "message": issue.message}
            for issue in validate_source(source)
        ]

    def _participant(self, side: PolicyRecord | Bot):
        return BotPolicy(side.name) if isinstance(side, Bot) else as_code(side)

    def run(self, jobs: Sequence[MatchJob]) -> list[MatchOutcome]:
        results: list[MatchOutcome | None] = [None] * len(jobs)
        to_play = []
        for index, job in enumerate(jobs):
            if job.exact:
                continue
            known = self._results.get(_result_key(job))
            if known is not None:
                results[index] = dataclasses.replace(
                    known, a=job.a.id, b=_side_name(job.b), seeds=list(known.seeds), returns=list(known.returns)
                )
            else:
                to_play.append(index)
        if to_play:
            # start-up time: importing it loads pyspiel
            from csro_tui.evaluation.runner import MatchJob as RunnerJob, evaluate_matchups

            batch = [
                RunnerJob(
                    self._participant(jobs[i].a), self._participant(jobs[i].b), jobs[i].episodes, jobs[i].seed,
                    jobs[i].seat,
                )
                for i in to_play
            ]
            played = evaluate_matchups(
                self.spec, batch, workers=self.workers, limits=self.limits, exact=False, pool=self._referee_pool(),
                progress=self._progress_report,
            )
            for index, result in zip(to_play, played):
                results[index] = result
                if result.failure is None:
                    self._remember(_result_key(jobs[index]), result)
        for index, job in enumerate(jobs):
            if results[index] is None:
                results[index] = self._run_one(job)
        return results  # type: ignore[return-value]

    def _referee_pool(self):
        if self.workers == 1 and self.backend == "local":
            return None
        with self._pool_lock:
            if self._pool is None:
                if self.backend == "ray":
                    # start-up time: importing it loads pyspiel
                    from csro_tui.evaluation.ray_backend import RayRefereePool

                    self._pool = RayRefereePool(
                        self.spec, self.workers, address=self.ray_address, status=self._cluster_report
                    )
                else:
                    from csro_tui.evaluation.runner import RefereePool  # start-up time: importing it loads pyspiel

                    self._pool = RefereePool(self.spec, self.workers)
            return self._pool

    def cluster_status(self):
        """The Ray backend's latest `ClusterStatus` (jobs done/total, workers alive), else None."""
        return getattr(self._pool, "last_status", None)

    def _progress_report(self, done: float, total: int) -> None:
        if self.cancel is not None and self.cancel.is_set():
            raise EvaluationInterrupted("evaluation abandoned: a stop was requested")
        listener = self.on_progress
        if listener is not None:
            listener(done, total)

    def _cluster_report(self, status) -> None:
        # Set by a display (csro run, the TUI) to follow a Ray evaluation live.
        listener = getattr(self, "on_cluster_status", None)
        if listener is not None:
            listener(status)

    def _remember(self, key: tuple, result: Any) -> None:
        self._results[key] = result
        while len(self._results) > RESULT_CACHE_SIZE:
            self._results.popitem(last=False)

    def _run_one(self, job: MatchJob) -> MatchOutcome:
        from csro_tui.evaluation.exact import exact_payoff  # start-up time: importing it loads open_spiel, pyspiel
        from csro_tui.evaluation.referee import play_match  # start-up time: importing it loads pyspiel

        a, b = self._participant(job.a), self._participant(job.b)
        if job.exact:
            return exact_payoff(self.spec, a, b, limits=self.limits, host_factory=self._host_factory(), seat=job.seat)
        return play_match(self.spec, a, b, episodes=job.episodes, seed=job.seed, limits=self.limits, seat=job.seat)

    def bots(self) -> list[str]:
        return [bot.name for bot in self.spec.benchmark()]

    def exploitability(self, members: Sequence[PolicyRecord], weights: Sequence[float]) -> float | None:
        """OpenSpiel's exploitability of the meta-strategy: the mixture of `members` in both
        seats, or with two populations (members with a seat) the joint profile in which seat 0
        plays its members' mixture and seat 1 its own (NashConv / 2)."""
        if not self.exact:
            return None
        # start-up time: importing it loads open_spiel, pyspiel
        from csro_tui.evaluation.exact import joint_policy, mixture_policy, policy_exploitability

        def mixture(chosen: Sequence[tuple[PolicyRecord, float]]):
            return mixture_policy(
                self.spec, [as_code(m) for m, _ in chosen], [w for _, w in chosen], limits=self.limits,
                host_factory=self._host_factory(),
            )

        weighted = list(zip(members, weights))
        if any(m.seat is not None for m in members):
            by_seat = [[(m, w) for m, w in weighted if m.seat == seat] for seat in (0, 1)]
            if not all(by_seat):
                raise ValueError("the exploitability of two populations needs members of both seats")
            return policy_exploitability(self.spec, joint_policy(self.spec, mixture(by_seat[0]), mixture(by_seat[1])))
        return policy_exploitability(self.spec, mixture(weighted))

    def forfeit(self) -> float:
        return float(self.spec.load().min_utility())

    def _host_factory(self):
        """The session's pool of warm sandbox hosts (exact games), started on first use."""
        with self._pool_lock:
            if self._hosts is None:
                from csro_tui.sandbox.host_pool import HostPool  # start-up time: importing it loads orjson, rich

                self._hosts = HostPool()
            return self._hosts

    def close(self) -> None:
        """End the referee pool's worker processes and the warm hosts, if any were started."""
        with self._pool_lock:
            pool, self._pool = self._pool, None
            hosts, self._hosts = self._hosts, None
        if pool is not None:
            pool.close()
        if hosts is not None:
            hosts.close()

    def policy_table(self, source: str):
        """The code's action probabilities at every information state (exact games), or None.

        Tabularised in the sandbox and cached by source, so a candidate the
        exact validation already asked costs nothing more; None when the
        game is not exact or the code fails.
        """
        if not self.exact:
            return None
        from csro_tui.evaluation.exact import tabularize  # start-up time: importing it loads open_spiel, pyspiel

        try:
            table = tabularize(
                self.spec, CodePolicy(CANDIDATE, source), limits=self.limits, host_factory=self._host_factory()
            )
            return table.action_probability_array
        except PolicyFailure:
            return None


def _side_name(side: PolicyRecord | Bot) -> str:
    return side.name if isinstance(side, Bot) else side.id


def _result_key(job: MatchJob) -> tuple:
    """What a sampled result depends on: the code (not the names), seed, episodes, seat."""
    b = ("bot", job.b.name) if isinstance(job.b, Bot) else ("code", job.b.source)
    return (job.a.source, b, job.seed, job.episodes, job.seat)
