"""Evaluation on a Ray cluster: the runner's lockstep chunks played by Ray actors.

`RayRefereePool` is a drop-in for `runner.RefereePool` (`processes`, `run`,
`close`): `evaluate_matchups(..., pool=RayRefereePool(spec, address=...))`
plays the same chunks with the same `play_matches`, so every result is the
one the local backend gives for the same job (each job's result depends
only on the job, never on which chunk or machine played it).

Each actor is one referee process on some node of the cluster.  It loads the
game once and stays up between calls (warm, as the local pool's workers do),
and it runs every code policy in its own sandbox host exactly as the local
backend does: before playing, it checks that its node isolates policies at
least as strongly as this machine (`isolation_mode()`: bubblewrap >
rlimits) and runs the same csro-tui code; a node that cannot refuses, and
says why.

Faults.  Actors are created with `max_restarts` / `max_task_retries`: when an
actor's process (or its node) dies mid-chunk, Ray starts it again (on any
node with a free CPU) and re-runs the chunk.  If an actor is lost for good,
its chunk goes to another actor.  A chunk's results come back only when the
whole chunk is done, and each job's slot is filled once, so a retry never
loses or duplicates a payoff; the engine records payoffs only after the
whole batch returns, so the session log stays the one source of truth.

Progress: while chunks play, actors are asked (a second, threaded method)
how far their lockstep has got; the runner's `progress(done, total)` gets
jobs done, and the pool's `status` callback, if any, a `ClusterStatus`
(jobs done/total, workers alive); `last_status` keeps the latest.
"""

from __future__ import annotations

import hashlib
import logging
import os
import socket
import threading
import time
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Sequence

from csro_tui.errors import ConfigError, CsroError
from csro_tui.evaluation.referee import MatchJob
from csro_tui.evaluation.results import MatchResult
from csro_tui.evaluation.runner import RefereePool

if TYPE_CHECKING:
    from csro_tui.games.base import GameSpec

__all__ = ["ClusterStatus", "RayRefereePool", "SandboxRefused", "connect", "ray_available"]

# A chunk is re-run this many times after its actor's process dies.
MAX_RETRIES = 3
# How long to wait for every actor asked for before going on with those up.
START_SECONDS = 30.0
# How often the driver asks busy actors how far they are (seconds).
PROGRESS_INTERVAL = 0.25
# Object store of a Ray instance started by csro itself (no --ray-address):
# jobs ship policy source and results, a few kB each, so keep it small.
LOCAL_OBJECT_STORE_BYTES = 200_000_000
# Stronger isolation ranks higher; a node must offer at least the driver's.
ISOLATION_RANK = {"rlimits": 1, "bubblewrap": 2}

StatusCallback = Callable[["ClusterStatus"], None]


class SandboxRefused(CsroError):
    """A node cannot run policies as this machine would; the message says why."""


@dataclass(frozen=True)
class ClusterStatus:
    """What a display shows about a Ray evaluation in flight."""

    done: float  # jobs, fractional while matches play
    total: int
    workers_alive: int
    workers: int  # actors asked for

    def line(self) -> str:
        return f"ray: {self.done:.0f}/{self.total} jobs, {self.workers_alive}/{self.workers} workers alive"


RAY_INSTALL = ".venv/bin/pip install -e '.[ray]'"


def ray_available() -> bool:
    try:
        import ray  # optional extra: the ray extra; noqa: F401
    except ImportError:
        return False
    return True


def _ray():
    try:
        import ray  # optional extra: the ray extra
    except ImportError:
        # The install the README gives (a checkout, installed editable); one command, the same everywhere.
        raise ConfigError(f"the ray backend needs Ray, which is not installed: run {RAY_INSTALL} in the csro-tui checkout") from None
    return ray


_connect_lock = threading.Lock()


def connect(address: str = "") -> None:
    """Connect this process to the cluster at `address` (once per process).

    An empty address uses $RAY_ADDRESS, else starts a small Ray instance on
    this machine (Ray's own default).  An address that does not answer is one
    clear error, not a long hang.
    """
    ray = _ray()
    with _connect_lock:
        if ray.is_initialized():
            return
        address = address or os.environ.get("RAY_ADDRESS", "")
        _check_reachable(address)
        options: dict[str, Any] = {
            "log_to_driver": False,
            "configure_logging": False,
            "include_dashboard": False,
        }
        if not address:
            options["object_store_memory"] = LOCAL_OBJECT_STORE_BYTES
        # Ray warns on stderr when started off the main thread (the TUI's
        # workers): no SIGTERM handler there, which csro does not need.
        ray_logger = logging.getLogger("ray")
        level = ray_logger.level
        ray_logger.setLevel(logging.ERROR)
        try:
            if address:
                _token_auth_like_ray_start()
            try:
                ray.init(address=address or None, **options)
            except ValueError as error:
                # No address, but `ray start` left a cluster on this machine:
                # Ray connects to it, and sizing its object store is refused.
                if address or "existing cluster" not in str(error):
                    raise
                options.pop("object_store_memory")
                ray.init(address=None, **options)
        except (ConnectionError, RuntimeError, ValueError) as error:
            where = f"at {address}" if address else "on this machine"
            raise CsroError(f"cannot use the Ray cluster {where}: {_first_line(error)}") from None
        finally:
            ray_logger.setLevel(level)
        _cluster_messages_to_stderr()


def _cluster_messages_to_stderr() -> None:
    """Ray prints the cluster's error messages for this driver ("(raylet) A
    worker died ...") on stdout; stdout is csro's output (tables, --json),
    so send them to stderr, where progress and warnings go."""
    try:
        import ray._private.worker as ray_worker  # optional extra: the ray extra

        original = ray_worker.print_to_stdstream
    except (ImportError, AttributeError):  # another Ray: leave it as it is
        return
    if getattr(original, "csro_to_stderr", False):
        return

    def to_stderr(data, ignore_prefix):
        original(dict(data, is_err=True), ignore_prefix)

    to_stderr.csro_to_stderr = True
    ray_worker.print_to_stdstream = to_stderr


def _token_auth_like_ray_start() -> None:
    """Send Ray's auth token when `ray start` would have turned token auth on.

    `ray start` enables token authentication when RAY_AUTH_MODE is unset and
    a token exists (~/.ray/auth_token, which any `ray.init()` that started a
    local Ray writes), but a connecting driver does not; the cluster then
    refuses it.  Deciding the same way here makes the two agree.
    """
    try:
        from ray._private.authentication.authentication_token_setup import (  # optional extra: the ray extra
            maybe_enable_token_auth_if_token_available,
        )
    except ImportError:  # a Ray without token authentication
        return
    maybe_enable_token_auth_if_token_available(warn_if_disabled=False)


def _check_reachable(address: str, timeout: float = 3.0) -> None:
    """host:port addresses: refuse at once when nothing listens there."""
    if not address or address == "auto" or address.startswith("ray://") or ":" not in address:
        return
    host, _, port = address.rpartition(":")
    try:
        with socket.create_connection((host, int(port)), timeout=timeout):
            return
    except ValueError:
        raise ConfigError(f"--ray-address {address!r}: use HOST:PORT, auto or ray://HOST:PORT") from None
    except OSError as error:
        raise CsroError(f"cannot reach the Ray cluster at {address}: {error.strerror or error}") from None


@lru_cache(maxsize=1)
def code_fingerprint() -> str:
    """A hash of the csro_tui code that decides results (everything but the TUI).

    Driver and workers must agree on it: a node running other code could
    give other payoffs for the same seeds.
    """
    root = Path(__file__).resolve().parents[1]
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        relative = path.relative_to(root)
        if relative.parts[0] == "tui" or "__pycache__" in relative.parts or not path.is_file():
            continue
        if path.suffix in (".py", ".json", ".npz", ".txt"):
            digest.update(str(relative).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def local_isolation() -> str:
    """This machine's isolation, which every node must match or exceed."""
    from csro_tui.sandbox.sandbox import isolation_mode  # start-up time: importing it loads orjson, rich

    return isolation_mode()


def refusal(node: dict[str, Any], required_isolation: str, fingerprint: str) -> str | None:
    """Why a node (as an actor described it) cannot take the work, or None."""
    where = f"Ray node {node.get('node', '?')}"
    if node.get("problem"):
        return f"{where} cannot run the policy sandbox: {node['problem']}"
    if ISOLATION_RANK.get(node.get("isolation"), 0) < ISOLATION_RANK.get(required_isolation, 0):
        return (
            f"{where} isolates policies with {node.get('isolation')}, weaker than this machine's "
            f"{required_isolation}; install bubblewrap there (or run csro with CSRO_SANDBOX=rlimits)"
        )
    if node.get("fingerprint") != fingerprint:
        return f"{where} runs different csro-tui code ({node.get('fingerprint')} != {fingerprint}); install the same version"
    return None


class _RefereeActor:
    """One referee process on a Ray node: the game loaded, kept between calls.

    Threaded (max_concurrency 2) so `progress` answers while `play` runs.
    """

    def __init__(self, spec: "GameSpec") -> None:
        self.spec = spec
        spec.load()
        # Matches play in a child process, not in this one: a Ray worker's own
        # threads call libc random(), which most RRPS bots draw from, so a bot
        # stepped here would not replay its seed (see games/rrps.py).
        self._referee = RefereePool(spec, 1)
        self.done = 0.0
        self.description: dict[str, Any] = {
            "node": socket.gethostname(),
            "pid": os.getpid(),
            "fingerprint": code_fingerprint(),
            "isolation": None,
            "problem": None,
        }
        try:
            self.description["isolation"] = local_isolation()
        except ConfigError as error:
            self.description["problem"] = str(error)

    def describe(self) -> dict[str, Any]:
        return dict(self.description, pid=os.getpid())

    def progress(self) -> float:
        return self.done

    def play(self, indexed_jobs: list[tuple[int, MatchJob]], limits: Any, required_isolation: str, fingerprint: str):
        """("ok", [(job index, result dict)]) or ("refused", reason)."""
        reason = refusal(self.describe(), required_isolation, fingerprint)
        if reason:
            return ("refused", reason)
        self.done = 0.0

        def on_progress(done: float, _total: int) -> None:
            self.done = done

        jobs = [job for _, job in indexed_jobs]
        results = self._referee.run(jobs, [list(range(len(jobs)))], on_progress, limits)
        # Dicts cross back: PolicyFailure does not survive pickling on its own.
        return ("ok", [(index, result.to_dict(timing=True)) for (index, _), result in zip(indexed_jobs, results)])


class RayRefereePool:
    """Ray actors playing lockstep chunks of one game's matches, kept between calls.

    Like `RefereePool`: actors start on first use, calls are serialised, an
    interrupted or failed call ends the actors (the next call starts fresh
    ones), `close` ends them.  `processes` (the number of actors) defaults to
    the cluster's CPUs.  `min_steps = 0` and `remote = True` tell
    `evaluate_matchups` to send every sampled batch here, however small.
    """

    min_steps = 0
    remote = True

    def __init__(
        self,
        spec: "GameSpec",
        processes: int | None = None,
        *,
        address: str = "",
        status: StatusCallback | None = None,
        max_retries: int = MAX_RETRIES,
        runtime_env: dict[str, Any] | None = None,
    ) -> None:
        self.spec = spec
        self.address = address
        self.status = status
        self.max_retries = max_retries
        self.runtime_env = runtime_env
        self._processes = processes
        self._actors: list[Any] = []
        self._lock = threading.Lock()
        self.last_status: ClusterStatus | None = None

    @property
    def processes(self) -> int:
        if self._processes is None:
            connect(self.address)
            cpus = int(_ray().cluster_resources().get("CPU", 1))
            self._processes = max(1, cpus)
        return self._processes

    def actor_pids(self) -> list[int]:
        """The actors' process ids (tests kill one to check retries)."""
        ray = _ray()
        return [ray.get(actor.describe.remote())["pid"] for actor in self._actors]

    def run(self, jobs: Sequence[MatchJob], chunks: list[list[int]], progress, limits) -> list[MatchResult]:
        """Play the chunks (job indices) on the actors; results in job order."""
        with self._lock:
            if not self._actors:
                self._start()
            try:
                return self._collect(jobs, chunks, progress, limits)
            except BaseException:
                self._kill_actors()
                raise

    def close(self) -> None:
        with self._lock:
            self._kill_actors()

    # ---------------------------------------------------------------- internals

    def _start(self) -> None:
        ray = _ray()
        connect(self.address)
        required, fingerprint = local_isolation(), code_fingerprint()
        options: dict[str, Any] = {
            "num_cpus": 1,
            "max_concurrency": 2,
            "max_restarts": self.max_retries,
            "max_task_retries": self.max_retries,
        }
        if self.runtime_env:
            options["runtime_env"] = self.runtime_env
        actor_class = ray.remote(_RefereeActor).options(**options)
        actors = [actor_class.remote(self.spec) for _ in range(self.processes)]
        asked = {actor.describe.remote(): actor for actor in actors}
        try:
            # Actors the cluster cannot place soon (its CPUs are taken, e.g. by
            # another csro) are given up once at least one is up: waiting for
            # all could wait forever on a shared cluster.
            ready, _ = ray.wait(list(asked), num_returns=len(asked), timeout=START_SECONDS)
            if not ready:
                ready, _ = ray.wait(list(asked), num_returns=1)
            described = [(asked[ref], ray.get(ref)) for ref in ready]
        except Exception as error:
            for actor in actors:
                ray.kill(actor, no_restart=True)
            raise CsroError(f"Ray workers could not start: {_first_line(error)}") from None
        reasons = [refusal(node, required, fingerprint) for _, node in described]
        self._actors = [actor for (actor, _), reason in zip(described, reasons) if reason is None]
        kept = {id(actor) for actor in self._actors}
        for actor in actors:
            if id(actor) not in kept:
                ray.kill(actor, no_restart=True)
        if not self._actors:
            raise SandboxRefused(next(reason for reason in reasons if reason))

    def _kill_actors(self) -> None:
        if not self._actors:
            return
        ray = _ray()
        for actor in self._actors:
            try:
                ray.kill(actor, no_restart=True)
            except Exception:  # already gone
                pass
        self._actors = []

    def _collect(self, jobs, chunks, progress, limits) -> list[MatchResult]:
        ray = _ray()
        import ray.exceptions  # optional extra: the ray extra

        lost_errors = tuple(
            getattr(ray.exceptions, name)
            for name in ("RayActorError", "ActorDiedError", "ActorUnavailableError")
            if hasattr(ray.exceptions, name)
        )
        required, fingerprint = local_isolation(), code_fingerprint()
        results: list[MatchResult | None] = [None] * len(jobs)
        waiting = list(range(len(chunks)))  # chunk numbers not yet handed out
        idle = list(self._actors)
        running: dict[Any, tuple[int, Any]] = {}  # result ref -> (chunk, actor)
        asked: dict[Any, Any] = {}  # progress ref -> actor
        chunk_done = [0.0] * len(chunks)
        finished_jobs = 0
        last_report = 0.0

        def report() -> None:
            done = finished_jobs + sum(chunk_done[c] for c, _ in running.values())
            self.last_status = ClusterStatus(done, len(jobs), len(self._actors), self.processes)
            if progress is not None:
                progress(done, len(jobs))
            if self.status is not None:
                self.status(self.last_status)

        report()
        while waiting or running:
            while waiting and idle:
                number, actor = waiting.pop(0), idle.pop(0)
                ref = actor.play.remote([(i, jobs[i]) for i in chunks[number]], limits, required, fingerprint)
                running[ref] = (number, actor)
            ready, _ = ray.wait(list(running), num_returns=1, timeout=PROGRESS_INTERVAL)
            for ref in ready:
                number, actor = running.pop(ref)
                try:
                    kind, payload = ray.get(ref)
                except lost_errors:
                    # Lost for good (Ray's restarts used up): another actor plays it.
                    self._actors.remove(actor)
                    if not self._actors:
                        raise CsroError("every Ray worker died; the evaluation was not recorded") from None
                    waiting.insert(0, number)
                    chunk_done[number] = 0.0
                    continue
                if kind == "refused":
                    # Restarted on a node that cannot sandbox as this machine does.
                    self._actors.remove(actor)
                    ray.kill(actor, no_restart=True)
                    if not self._actors:
                        raise SandboxRefused(payload)
                    waiting.insert(0, number)
                    chunk_done[number] = 0.0
                    continue
                for index, data in payload:
                    if results[index] is None:
                        finished_jobs += 1
                    results[index] = MatchResult.from_dict(data)
                chunk_done[number] = 0.0
                idle.append(actor)
            now = time.monotonic()
            if now - last_report >= PROGRESS_INTERVAL:
                self._ask_progress(ray, running, asked, chunk_done)
                last_report = now
            report()
        missing = [index for index, result in enumerate(results) if result is None]
        if missing:
            raise CsroError(f"Ray evaluation returned no result for {len(missing)} job(s)")
        return results  # type: ignore[return-value]

    def _ask_progress(self, ray, running, asked, chunk_done) -> None:
        """Collect answers to earlier progress questions, ask busy actors again."""
        if asked:
            ready, _ = ray.wait(list(asked), num_returns=len(asked), timeout=0)
            for ref in ready:
                actor = asked.pop(ref)
                try:
                    value = float(ray.get(ref))
                except Exception:  # the actor died; its chunk's retry reports afresh
                    continue
                for number, busy in running.values():
                    if busy is actor:
                        chunk_done[number] = value
        pending = set(asked.values())
        for _number, actor in running.values():
            if actor not in pending:
                asked[actor.progress.remote()] = actor


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__
