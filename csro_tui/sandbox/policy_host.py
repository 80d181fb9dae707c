"""`PolicyHost`: one policy's code in its own sandboxed process, seen from the parent.

The façade over the parent side's parts: the host process (host_process.py:
spawned or adopted from a pool, set up, killed), its channel (channel.py:
whole lines over its pipes), the wire (wire.py: messages and observations
as bytes) and the checks (checks.py: nothing a host sends is trusted), with
the clock (clock.py) armed for every request.  What is left here is the
order of things: a host's life (launch, load, episodes, acts, end, close),
request and reply in step, and the episodes and the lists each one holds.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from typing import Callable

from csro_tui.errors import ConfigError
from csro_tui.sandbox import zygote
from csro_tui.sandbox.channel import DeadlinePassed, HostChannel, HostDied
from csro_tui.sandbox.checks import (
    HostFault,
    check_act_reply,
    check_layers,
    check_printed,
    check_reply,
    child_failure,
    death_report,
)
from csro_tui.sandbox.clock import (
    KIND_ACT,
    KIND_END,
    KIND_INIT,
    KIND_LOAD,
    CallTiming,
    HostClock,
    HostUsage,
    ProgressPage,
    kill_host_process,
    watchdog,
)
from csro_tui.sandbox.failures import FailureCategory, PolicyFailure
from csro_tui.sandbox.host_process import StartedProcess, kill_process, load_message, log_tail, start_host_process
from csro_tui.sandbox.isolation import isolation_mode, kernel_boundary_problem, kernel_layers
from csro_tui.sandbox.limits import SandboxLimits
from csro_tui.sandbox.validation import imported_modules
from csro_tui.sandbox.wire import (
    ReplyBound,
    act_reply_bound,
    column_legal_lists,
    column_message,
    decode_reply,
    encode_message,
    encode_observation,
    reply_bound,
)


class PolicyHost:
    """One sandboxed process running one policy for many concurrent episodes.

    Not thread-safe: use one host from one thread.  Calls start the host if
    needed.  Any failure kills the host and raises a `PolicyFailure`; the
    same failure is raised again by every later call.
    """

    def __init__(
        self, source: str, game_info: dict, *, name: str = "policy", limits: SandboxLimits | None = None
    ) -> None:
        if not isinstance(source, str):
            raise TypeError(f"policy source must be str, not {type(source).__name__}")
        try:
            json.dumps(game_info)
        except (TypeError, ValueError) as error:
            raise ValueError(f"game_info must be JSON-serialisable: {error}") from None
        self.source = source
        self.game_info = game_info
        self.name = name
        self.limits = limits or SandboxLimits()
        self.failure: PolicyFailure | None = None
        self.mode: str | None = None
        self.layers: dict | None = None  # the kernel layers the host confirmed
        self._process: subprocess.Popen | None = None
        self._temp_dir: str | None = None
        self._closed = False
        self._seq = 0
        self._channel: HostChannel | None = None
        self._in_flight: tuple | None = None  # (requests, legal lists, what, reply bound) of a sent act
        self._reply_bound = reply_bound(self.limits.output_tail_chars)  # of every reply but act's
        self._launching = False  # launched: the module load not confirmed yet
        self._prepared = False  # its reply to `prepare` read at launch (zygote hosts)
        self._page: ProgressPage | None = None
        self._clock: HostClock | None = None
        self._timing: CallTiming | None = None  # the page's last figures, once it is closed
        # What the policy printed (to nowhere: the host discards it), as its replies report it:
        # bytes in all and the first PRINTED_HEAD_CHARS characters, untrusted.
        self.printed_bytes = 0
        self.printed_head = ""
        self._prestarted: StartedProcess | None = None  # adopted from a pool, not launched yet
        # episode id -> {observation key -> (last list object, the child's copy)}
        self._episodes: dict[int, dict[str, tuple[list, list]]] = {}
        # (episode id, key) of lists the policy changed in place, which the host
        # dropped: `send_act_columns` must send them whole (`send_act` does so itself)
        self.dropped_lists: set[tuple[int, str]] = set()
        self._mirrors = False  # send_act has kept copies of lists in _episodes
        # The caller's own limit on waiting for the next reply (the referee's
        # match deadline, the evaluation's cap): (time.monotonic() deadline,
        # the failure's message), or None; that wait uses it up.  Past it the
        # host is stopped, charged with that message, as when a call overruns.
        self.wait_limit: tuple[float, str] | None = None

    # -- lifecycle -------------------------------------------------------------

    def __enter__(self) -> PolicyHost:
        return self

    def __exit__(self, *_exc) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass

    def start(self) -> None:
        """Spawn the host and load the module (no-op when already running)."""
        self.launch()
        if self._launching:
            self._launching = False
            # The reply to `prepare` (start_host_process; read at launch for a
            # host forked by the zygote), then to the load.
            if not self._prepared:
                self._receive("setting up the sandbox", expected_seq=0)
                self._clock.note_started()
            reply = self._receive("loading the module")
            self._clock.disarm()
            self.layers = self._checked(check_layers, reply.get("layers"), kernel_layers())

    def adopt(self, started: "StartedProcess") -> None:
        """Run this policy in a process started beforehand (`host_pool.HostPool`)
        instead of spawning one at `launch`.  The process must be fresh: it
        was spawned by `start_host_process` and has never been sent a module;
        each one is adopted once (and killed with this host)."""
        if self._process is not None or self._prestarted is not None or self._closed:
            raise RuntimeError(f"policy host {self.name!r} already has a process")
        started.claim()
        self._prestarted = started

    def launch(self) -> None:
        """The first half of `start`: spawn the host and send it the module,
        without waiting for it to load (no-op once launched).

        A caller starting several hosts launches them all, then calls
        `start` on each: the hosts start up at the same time (interpreter,
        sandbox and imports take a few hundred ms each) instead of one after
        another.  `start` (or any other call) then waits for the module.
        """
        self._check_usable()
        if self._process is not None:
            return
        self.mode = isolation_mode()
        problem = kernel_boundary_problem()
        if problem:
            raise ConfigError(problem)
        launched_at = time.monotonic()
        imported = imported_modules(self.source)
        uses_numpy = "numpy" in imported
        started, self._prestarted = self._prestarted, None
        if started is not None and (started.mode != self.mode or started.process.poll() is not None):
            started.discard()  # started for another isolation mode, or dead: not trusted with this policy
            started = None
        if (started is not None and uses_numpy and isinstance(started.process, zygote.ZygoteHost)
                and not started.process.numpy and zygote.numpy_zygote_enabled()):
            started.discard()  # a fork from the zygote that has numpy loaded is cheaper than numpy's import
            started = None
        if started is None:
            try:
                started = start_host_process(self.mode, numpy=uses_numpy)
            except OSError as error:
                raise self._could_not_start(error) from None
        if isinstance(started.process, zygote.ZygoteHost):
            started = self._proven(started)
        self._process, self._temp_dir, self._page = started.process, started.temp_dir, started.page
        started.page = None  # this host's now (closed with it)
        self._clock = HostClock(self._page, self._process, self.limits, HostUsage(self._process))
        if self._prepared:
            self._clock.note_started()
        watchdog().register(self._clock)
        self._channel = HostChannel(self._process, self.limits.max_message_bytes)
        # The rest of its set-up came with `start_host_process`.
        config = load_message(self.source, self.game_info, self.limits, imported)
        self._clock.arm(1, (KIND_LOAD,), at=launched_at)  # from spawn on: start-up, imports, module code
        self._send(config, "loading the module")
        self._launching = True

    def _proven(self, started: StartedProcess) -> StartedProcess:
        """A host forked by the zygote proves its layers (its `prepare` reply)
        before the policy's module is sent; one that cannot is replaced by a
        spawned host, and the policy is not charged with it."""
        problem = zygote.prepared(started.process, self.limits.init_timeout)
        if problem is None:
            self._prepared = True
            return started
        zygote.log.warning("a host forked by the zygote could not prove its sandbox (%s); spawning one instead",
                           problem)
        started.discard()
        try:
            return start_host_process(self.mode, fork=False)
        except OSError as error:
            raise self._could_not_start(error) from None

    def _could_not_start(self, error: OSError) -> PolicyFailure:
        """The failure (kept, as every failure is) of a host that could not be
        started; this host is closed."""
        self.failure = PolicyFailure(FailureCategory.CRASH, f"could not start the policy host: {error}", "", self.name)
        self.close()
        return self.failure

    def new_episodes(self, episodes: list[tuple[int, int, int]]) -> None:
        """Construct `Policy(player, game)` for each (episode_id, player, seed)."""
        self.start()
        batch = []
        batch_ids: set[int] = set()
        for entry in episodes:
            try:
                episode, player, seed = entry
            except (TypeError, ValueError):
                raise ValueError(f"an episode must be (episode_id, player, seed), not {entry!r}") from None
            for label, value in (("episode id", episode), ("player", player), ("seed", seed)):
                if type(value) is not int:
                    raise ValueError(f"{label} must be an int, not {value!r}")
            if not -1 << 63 < episode < 1 << 63:  # the host echoes it in its replies (wire.act_reply_bound)
                raise ValueError(f"episode id {episode} does not fit 64 bits")
            if episode in self._episodes or episode in batch_ids:
                raise ValueError(f"episode {episode} is already running on this host")
            batch_ids.add(episode)
            batch.append([episode, player, seed])
        if not batch:
            return
        # Each episode runs the module's code afresh (init_timeout) and then
        # Policy.__init__ (move_timeout), each call on its own deadline.
        self._clock.arm(2 * len(batch), (KIND_LOAD, KIND_INIT), [entry[0] for entry in batch])
        self._call({"op": "new", "eps": batch}, f"constructing {len(batch)} episode(s)")
        self._clock.disarm()
        for episode, _player, _seed in batch:
            self._episodes[episode] = {}

    def act(self, requests: list[tuple[int, dict]]) -> list[int | dict[int, float]]:
        """One round trip for the whole batch; answers in request order.

        Each answer is a legal action id, or a distribution over legal
        actions normalised to sum to 1.  Same as `send_act` then `receive_act`.
        """
        if not self.send_act(requests):
            return []
        return self.receive_act()

    def send_act(self, requests: list[tuple[int, dict]]) -> bool:
        """The first half of `act`: send the batch and return without waiting.

        Lets a caller with several hosts send every host its batch before
        reading any answer, so the hosts think at the same time (and while
        the caller encodes the next batch) instead of one after another.
        Then `receive_act` must be called before any other call on this host.
        Returns False for an empty batch (nothing sent, nothing to receive).
        """
        self.start()
        if not requests:
            return False
        encoded = []
        legal_lists = []
        self._mirrors = True
        legal_actions = list_keys = key_characters = 0  # what the reply may hold (wire.act_reply_bound)
        # Locals: this loop runs once per move of every episode.
        episodes, encode = self._episodes, self._encode_observation
        for entry in requests:
            try:
                episode, obs = entry
            except (TypeError, ValueError):
                raise ValueError(f"a request must be (episode_id, obs), not {type(entry).__name__}") from None
            sent = episodes.get(episode)
            if sent is None:
                raise ValueError(f"episode {episode!r} is not running on this host; call new_episodes first")
            legal = obs.get("legal_actions") if isinstance(obs, dict) else None
            if not isinstance(legal, (list, tuple)):
                raise ValueError(f"the observation of episode {episode} must be a dict with a legal_actions list")
            encoded.append(encode(episode, obs, sent))
            legal_lists.append(legal)
            legal_actions += len(legal)
            if sent:  # the lists the host holds for the episode, each of which may come back in `resync`
                list_keys += len(sent)
                key_characters += sum(map(len, map(str, sent)))  # str: a key as JSON sends it
        what = f"act for {len(requests)} episode(s)"
        bound = act_reply_bound(self.limits.output_tail_chars, len(requests), legal_actions, list_keys, key_characters)
        self._clock.arm(len(requests), (KIND_ACT,), [entry[0] for entry in encoded])
        self._send({"op": "act", "reqs": encoded}, what)
        self._in_flight = (requests, legal_lists, what, bound)
        return True

    def receive_act(self) -> list[int | dict[int, float]]:
        """The second half of `act`: wait for the answers of the batch sent last."""
        if self._in_flight is None:
            raise RuntimeError(f"policy host {self.name!r} has no act batch in flight")
        requests, legal_lists, what, bound = self._in_flight
        self._in_flight = None
        reply = self._receive(what, bound)
        self._clock.disarm()
        answers, resync = self._checked(check_act_reply, reply, requests, legal_lists)
        if resync:
            self._forget_lists(resync)
        return answers

    def send_act_columns(
        self,
        episodes: list[int],
        *,
        keys: list[str],
        same: dict | None = None,
        each: dict[str, list] | None = None,
        grown: dict[str, tuple] | None = None,
        whole: list[tuple[int, str, list]] = (),
    ) -> bool:
        """`send_act` for a batch whose observations share their keys, sent by
        column: a few flat lists to encode and decode instead of a dict per
        request.  Then `receive_act`, as after `send_act`.

        `episodes`: an episode id per observation.  Each of `keys` (the
        observations' keys, in order) takes its values from one of:
        `same` {key: value}: one value for all, a JSON scalar or a list of
            scalars (every observation gets its own copy);
        `each` {key: [a value per observation]};
        `grown` {key: (length, items)}: the list the host holds for that
            episode and key, which has `length` items (an int for all, or a
            list with one per observation), with items[i] appended;
        `whole` [(index, key, list)]: a `grown` key's list sent whole for the
            observation at `index` instead (its first observation, or a list
            in `dropped_lists`, which the policy changed in place).
        `legal_actions` must come from `same` or `each`.  The caller owns the
        lists: no copy is kept here, and the host fails as out of step if a
        length is wrong.  Returns False for an empty batch.
        """
        self.start()
        count = len(episodes)
        if not count:
            return False
        same, each, grown = same or {}, each or {}, grown or {}
        legal_lists = column_legal_lists(count, keys, same, each, grown)
        batch = set(episodes)
        if len(batch) != count or not batch.issubset(self._episodes.keys()):
            unknown = sorted(batch.difference(self._episodes))[:3]
            raise ValueError(
                f"episodes {unknown} are not running on this host; call new_episodes first"
                if unknown else "an episode appears twice in one batch"
            )
        if self.dropped_lists:
            covered = {(episodes[index], key) for index, key, _list in whole}
            missing = [(e, key) for e, key in self.dropped_lists if e in batch and key in grown and (e, key) not in covered]
            if missing:
                raise ValueError(f"lists the host dropped must be sent whole: {missing[:3]}")
            self.dropped_lists -= covered
        if self._mirrors:  # send_act's copies of these episodes' lists no longer match the host's
            for episode in episodes:
                self._episodes[episode].clear()
        message = column_message(episodes, keys, same, each, grown, whole)
        what = f"act for {count} episode(s)"
        legal_actions = count * len(legal_lists[0]) if "legal_actions" in same else sum(map(len, legal_lists))
        bound = act_reply_bound(self.limits.output_tail_chars, count, legal_actions, count * len(grown),
                                count * sum(map(len, map(str, grown))))
        self._clock.arm(count, (KIND_ACT,), episodes)
        self._send(message, what)
        self._in_flight = (list(zip(episodes, legal_lists)), legal_lists, what, bound)
        return True

    def end_episodes(self, episode_ids: list[int]) -> None:
        """Drop the episodes' policy instances (unknown ids are ignored)."""
        self._check_usable()
        known = [episode for episode in episode_ids if episode in self._episodes]
        if not known or self._process is None:
            return
        for episode in known:
            del self._episodes[episode]
        if self.dropped_lists:
            self.dropped_lists = {entry for entry in self.dropped_lists if entry[0] in self._episodes}
        self._clock.arm(len(known), (KIND_END,), known)
        self._call({"op": "end", "ids": known}, "ending episodes")
        self._clock.disarm()

    def close(self) -> None:
        """Kill the host's process group, reap it and remove its temp dir."""
        self._mark_closed()
        self._kill()
        self._stop_clock()
        if self._temp_dir is not None:
            shutil.rmtree(self._temp_dir, ignore_errors=True)
            self._temp_dir = None

    def close_later(self) -> "Callable[[], None]":
        """`close` in two halves: SIGKILL the host's process group now (it runs
        nothing more), and return the rest (reap it, close its pipes, remove
        its temp dir) for the caller to run later, e.g. on a background
        thread: a killed bwrap takes ~10 ms to tear its namespaces down."""
        self._mark_closed()
        kill_host_process(self._process)
        self._stop_clock()
        process, temp_dir = self._process, self._temp_dir
        # The process is `finish`'s now: a later `close` (or `__del__`) here must not reap it
        # on this thread too, racing the reaper (found in review).
        self._process, self._temp_dir = None, None

        def finish() -> None:
            kill_process(process)
            if temp_dir is not None:
                shutil.rmtree(temp_dir, ignore_errors=True)

        return finish

    def _mark_closed(self) -> None:
        """No further calls; a process adopted but never launched is discarded."""
        self._closed = True
        if self._prestarted is not None:
            self._prestarted.discard()
            self._prestarted = None

    def timing(self) -> CallTiming | None:
        """How long the policy's calls took so far, as its host measured them,
        and what it printed (discarded)."""
        timing = self._page.timing() if self._page is not None else self._timing
        if timing is not None:
            timing.printed_bytes, timing.printed_head = self.printed_bytes, self.printed_head
        return timing

    @property
    def time_used(self) -> tuple[float, int]:
        """(seconds charged to the policy's act budget, decisions), by the parent's clock."""
        clock = self._clock
        return (clock.play_used, clock.decisions) if clock is not None else (0.0, 0)

    @property
    def batch_in_flight(self) -> bool:
        """An act batch was sent and its answers not read yet (`send_act` without `receive_act`)."""
        return self._in_flight is not None

    @property
    def live_episodes(self) -> list[int]:
        """The ids of the episodes this host holds (constructed, not ended)."""
        return list(self._episodes)

    @property
    def pid(self) -> int | None:
        """Process id of the host (bwrap's in bubblewrap mode), or None."""
        return self._process.pid if self._process is not None else None

    # -- plumbing --------------------------------------------------------------

    def _check_usable(self) -> None:
        if self.failure is not None:
            raise self.failure
        if self._closed:
            raise RuntimeError(f"policy host {self.name!r} is closed")

    def _kill(self) -> None:
        clock = self._clock
        if clock is None:
            kill_process(self._process)
            return
        with clock.lock:  # never reaped while the watchdog may be signalling it
            clock.disarm()
            kill_process(self._process)

    def _stop_clock(self) -> None:
        """The watchdog stops watching this host; its page is closed."""
        clock, self._clock = self._clock, None
        if clock is not None:
            watchdog().unregister(clock)
            with clock.lock:
                clock.disarm()
                clock.close()
        if self._page is not None:
            self._timing = self._page.timing()
            self._page.close()
            self._page = None

    def _fail(self, category: FailureCategory, message: str, traceback_text: str = "") -> None:
        self._in_flight = None
        self._launching = False
        self.failure = PolicyFailure(category, message, traceback_text, self.name)
        self._kill()
        raise self.failure

    def _checked(self, check, *args):
        """`check(*args)` (checks.py); a `HostFault` it raises fails the host."""
        try:
            return check(*args)
        except HostFault as fault:
            problem = fault.args
        self._fail(*problem)  # outside the handler: the failure carries no HostFault context

    def _call(self, message: dict, what: str) -> dict:
        """Send one request, wait for its reply; fail the host on any problem."""
        self._send(message, what)
        return self._receive(what)

    def _send(self, message: dict, what: str) -> None:
        self._check_usable()
        if self._in_flight is not None:
            raise RuntimeError(f"policy host {self.name!r} has an act batch in flight; call receive_act first")
        self._seq += 1
        message["seq"] = self._seq
        data = encode_message(message, what)
        try:
            self._channel.write(data)
        except HostDied:
            self._fail(*self._death_report(what))

    def _receive(self, what: str, bound: ReplyBound | None = None, expected_seq: int | None = None) -> dict:
        """The next reply, read and parsed only within `bound` (what its
        request allows: by default a reply that answers nothing), waited
        for until the request's deadline (the clock's, from when it was
        sent) or the caller's `wait_limit`, whichever comes first; the
        watchdog may stop the host sooner."""
        bound = bound or self._reply_bound
        clock = self._clock
        deadline = clock.deadline() if clock is not None else None
        limit, self.wait_limit = self.wait_limit, None
        if limit is not None and (deadline is None or limit[0] < deadline):
            deadline = limit[0]
        try:
            line = self._checked(self._channel.read_line, bound.any_bytes, deadline)
        except HostDied:
            self._fail(*self._death_report(what))
        except DeadlinePassed:
            self._fail(*self._overran(limit))
        verdict = clock.verdict if clock is not None else None
        if verdict is not None:  # killed just after it replied: the clock's word stands
            self._fail(*verdict)
        try:
            reply = decode_reply(line)
        except (ValueError, RecursionError):  # RecursionError: nested too deep to parse
            self._fail(FailureCategory.MALFORMED, f"host sent a reply that is not JSON while {what}")
        self._checked(check_reply, reply, self._seq if expected_seq is None else expected_seq, what, len(line),
                      bound.ok_bytes)
        if "printed" in reply:
            self._note_printed(reply["printed"])
        if not reply["ok"]:
            self._fail(*child_failure(reply, self.limits))
        return reply

    def _overran(self, limit: tuple[float, str] | None) -> tuple[FailureCategory, str]:
        """What a wait that reached its deadline says: the watchdog's verdict
        if it stopped the host meanwhile, the caller's limit's message, or
        the request's overrun (the clock's words)."""
        now = time.monotonic()
        clock = self._clock
        with clock.lock:  # the watchdog may be judging the same deadline
            if clock.verdict is not None:
                return clock.verdict
            if limit is not None and now >= limit[0]:
                return FailureCategory.TIMEOUT, limit[1]
            return FailureCategory.TIMEOUT, clock.overrun(now)

    def _note_printed(self, printed) -> None:
        """Keep a reply's `printed: [bytes, first characters]`, checked (checks.check_printed)."""
        self.printed_bytes, self.printed_head = self._checked(check_printed, printed, self.printed_bytes)

    def _death_report(self, what: str) -> tuple[FailureCategory, str, str]:
        """Classify a host that stopped talking: by signal, exit code and log."""
        process = self._process
        if self._clock is not None:
            with self._clock.lock:  # from here on the process may be reaped
                self._clock.disarm()
        try:
            process.wait(timeout=1.0)
        except subprocess.TimeoutExpired:
            self._kill()
        log = log_tail(self._temp_dir)
        verdict = self._clock.verdict if self._clock is not None else None
        if verdict is not None:  # the clock killed it
            return verdict[0], verdict[1], log
        return death_report(process.returncode, self.mode, log, self.limits, what)

    # -- observations and answers ------------------------------------------------

    def _forget_lists(self, resync: list) -> None:
        """Lists the policy changed in place (a reply's checked `resync`): send them whole next time."""
        for episode, key in resync:
            sent = self._episodes.get(episode)
            if sent is not None:
                sent.pop(key, None)
                self.dropped_lists.add((episode, key))

    _encode_observation = staticmethod(encode_observation)
