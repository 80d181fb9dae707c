"""Policy host: the child process that runs one untrusted policy module.

Started by `csro_tui.sandbox.host_process.start_host_process` as
`python -s -S -P host_start.py` (which imports this module, so its bytecode
is cached; running this file directly works too), possibly inside
bubblewrap.  STDLIB ONLY, and it never imports csro_tui: it starts fast and
the policy cannot reach the application's code.  Everything it needs
(allowed imports, limits, forbidden names) arrives as data in the first two
messages.

The host in layers, one file each, each readable alone:

- host_kernel.py  isolation set-up: resource limits, dropping root, then
                  Landlock and seccomp (the kernel-enforced boundary);
- host_channel.py the JSON channel to the parent, the bounded output tail,
                  each policy call's own wall-clock timer;
- host_guard.py   the runtime guard (restricted builtins, audit hook, stubs);
- host_main.py    (this file) the episode runner: a fresh module per
                  episode, every policy call under its timer, answers read
                  as exact built-in types, failures reported without calling
                  policy code; and `main`, which sets the layers up in order.

Protocol: one JSON object per line, both ways, over the stdin/stdout pipes,
which are moved to private descriptors at once so the policy's prints can
neither flood nor corrupt the channel.  The first request is `prepare`
(sent as soon as the host is spawned; the parent reads its reply when it
gives the host a policy), the second `load` (the policy's module); then
`new` (construct episodes), `act` (one batch of observations, one object
each), `cols` (one batch sent by column: see `act_columns`) and `end`.
Every reply echoes the request's `seq`.  A failure reply has `ok: false`, a
category (crash, memory, forbidden, timeout), a one-line message, the
policy's traceback and the tail of what it printed; the parent then kills us.

The set-up comes in two parts, so a pre-started (pooled) host waits for its
policy with the kernel layers already in place.  `prepare`, in this order:
the core-dump limit, modules allowed modules import lazily, no-new-privs
and the parent-death signal, the call timer's signal handlers, Landlock,
SIGSYS's handler, seccomp's allow-list.  `load`, before the module runs:
the policy's resource limits, the modules it imports (numpy's submodules
with numpy), no new executable memory from then on, dropping root to its
own uid (and the parent-death signal again), captured output, the guard's
patches; then the audit hook, and the policy.  No policy code exists
before all of it holds.  A system call seccomp refused while serving a
request turns its reply into a `forbidden` failure that names the call.
"""

import sys

sys.dont_write_bytecode = True  # never write .pyc files into the installation

import builtins  # noqa: E402

# The host's own names for every builtin, bound now: a policy that reaches
# the builtins module and replaces `type` or `repr` there must not make the
# host's code (failure reports, answer checks) run its functions.
globals().update({name: value for name, value in vars(builtins).items() if not name.startswith("__")})

import gc  # noqa: E402
import itertools  # noqa: E402
import linecache  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import resource  # noqa: E402
import signal  # noqa: E402
import traceback  # noqa: E402
import types  # noqa: E402


# The isolation layer lives next to this script (also inside bubblewrap);
# -P keeps the script's directory off sys.path, so add it for this one import.
_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, _HERE)
try:
    import host_channel  # noqa: E402
    import host_guard  # noqa: E402
    import host_kernel  # noqa: E402
finally:
    sys.path.remove(_HERE)
from host_channel import EXIT_AFTER_FAILURE as _EXIT_AFTER_FAILURE, CallTimeout, _CallTimer, _Channel, _OutputTail, _Progress  # noqa: E402
from host_guard import ForbiddenOperation, _Guard  # noqa: E402

# Mutable host state lives in closures and locals, not here, so a policy that
# somehow reached this module's globals would find little to tamper with.
_MAX_DIST_ENTRIES = 100_000
_MAX_ACTION_BITS = 63  # larger ints cannot be action ids (and may not fit the JSON channel)


class _ProtocolError(Exception):
    """The parent sent something this host cannot act on."""


# -- answers: exact built-in types only ------------------------------------------
#
# Nothing a policy returns is asked anything: no __index__, __eq__, __hash__,
# __float__ or __str__ of a policy-defined class ever runs in the host.  Only
# exact int/float (and numpy's own integer/float scalar types, converted by
# numpy's C code) are read; every other type is reported by name.

_TYPE_NAME = type.__dict__["__name__"].__get__  # the real name, whatever a metaclass defines
_EXCEPTION_ARGS = BaseException.__dict__["args"].__get__
_EXCEPTION_TRACEBACK = BaseException.__dict__["__traceback__"].__get__


def _plain_str(text) -> str:
    """An exact str copy of a str (or str subclass), with no method of it called."""
    return str.__add__("", text) if issubclass(type(text), str) else "?"


def _type_name(value) -> str:
    return _plain_str(_TYPE_NAME(type(value)))


class _AnswerTypes:
    """Exact types accepted as action ids and probabilities (numpy's when loaded).

    What they become is sent as an answer whose size its request bounds
    (wire.act_reply_bound): a type name is cut to `type_name_chars`, and a
    distribution carries at most one entry per legal action and the one
    entry the parent refuses."""

    def __init__(self, type_name_chars: int | None = None) -> None:
        self.type_name_chars = type_name_chars
        self.integers = frozenset()
        self.floats = frozenset({float})
        numpy = sys.modules.get("numpy")
        if numpy is not None:
            self.integers = frozenset(
                getattr(numpy, name) for name in
                ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "intc", "uintc",
                 "int_", "uint", "longlong", "ulonglong", "intp", "uintp")
                if type(getattr(numpy, name, None)) is type
            )
            self.floats = frozenset({float} | {getattr(numpy, name) for name in ("float16", "float32", "float64")
                                               if type(getattr(numpy, name, None)) is type})

    def type_report(self, value) -> dict:
        return {"type": _type_name(value)[: self.type_name_chars]}

    def action_id(self, value):
        kind = type(value)
        if kind is int:
            number = value
        elif kind in self.integers:
            number = int(value)  # numpy's own C conversion
        else:
            return self.type_report(value)
        bits = int.bit_length(number)
        if bits > _MAX_ACTION_BITS:
            return {"type": f"{bits}-bit int"}
        return number

    def probability(self, value):
        kind = type(value)
        if kind is float or kind is int:
            return float(value) if kind is float or int.bit_length(value) <= 1023 else {"type": "huge int"}
        if kind in self.floats or kind in self.integers:
            return float(value)
        return self.type_report(value)

    def encode(self, answer, legal):
        """What act() returned as JSON that keeps its type visible: an int, or
        {"dist": [[key, probability], ...]}, or {"type": name} (malformed).
        `legal`: the request's legal actions, as the parent sent them."""
        kind = type(answer)
        if kind is dict:
            size = dict.__len__(answer)
            if size > _MAX_DIST_ENTRIES:
                return {"type": f"dict with {size} entries"}
            return {"dist": self.distribution(answer, legal)}
        return self.action_id(answer)

    def distribution(self, answer: dict, legal) -> list:
        """The [key, probability] entries of a dict answer the parent reads
        (checks.check_distribution), in order: those on legal actions, not
        those with zero weight on an illegal one (the parent skips them), and
        none after the first it refuses (it stops there).  So an honest reply
        stays within what its request allows, whatever the dict's size."""
        # Exact ints only: nothing of the policy's is hashed or compared.
        allowed = {item for item in legal if type(item) is int} if type(legal) is list else ()
        pairs = []
        skipped = None
        for key, value in dict.items(answer):
            # The common entry, an exact int key that fits 63 bits and an exact
            # float, is read inline (literal bounds: nothing a policy could rebind).
            if type(key) is not int or not -0x8000000000000000 < key < 0x8000000000000000:
                key = self.action_id(key)
            if type(value) is not float:
                value = self.probability(value)
            if type(key) is int and type(value) is float:
                if key in allowed:
                    pairs.append([key, value])
                    continue
                if value == 0.0:
                    skipped = skipped or [key, value]
                    continue
            pairs.append([key, value])
            break
        # All skipped: one of them, for the parent to say the weights sum to 0.
        return pairs or ([skipped] if skipped else [])


def _ignore_unraisable(_unraisable) -> None:
    """sys.unraisablehook: an error the policy's __del__ raised goes unreported."""


def _exception_text(error: BaseException) -> tuple[str, str]:
    """(type name, message) of an exception without calling its methods: the
    message is its first argument when that is an exact str (or int)."""
    name = _type_name(error)
    try:
        args = _EXCEPTION_ARGS(error)
    except BaseException:  # noqa: BLE001
        return name, ""
    if type(args) is not tuple or not args:
        return name, ""
    first = args[0]
    if type(first) is str:
        return name, first
    if type(first) is int and len(args) > 1 and type(args[1]) is str:  # OSError(errno, text)
        return name, args[1]
    if type(first) is int or type(first) is float:
        return name, repr(first)
    return name, ""


def _peak_kb() -> int:
    """The host's peak resident memory so far, in kB."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def _fingerprint(items: list) -> tuple:
    """Length and five sampled elements: O(1), catches appends, pops,
    clears and most sorts or reversals of a history list."""
    n = len(items)
    if not n:
        return (0,)
    return (n, items[0], items[n >> 2], items[n >> 1], items[(3 * n) >> 2], items[-1])


def _same_fingerprint(before: tuple, after: tuple) -> bool:
    if len(before) != len(after) or before[0] != after[0]:
        return False
    return all([b is a for b, a in zip(before[1:], after[1:])])


def _unchanged(items: list, before: tuple) -> bool:
    """`_same_fingerprint(before, _fingerprint(items))` without building the
    second tuple: runs after every act, for every history list."""
    n = len(items)
    if n != before[0]:
        return False
    return not n or (
        items[0] is before[1]
        and items[n >> 2] is before[2]
        and items[n >> 1] is before[3]
        and items[(3 * n) >> 2] is before[4]
        and items[-1] is before[5]
    )


class _Host:
    """Episode runner: a fresh module per episode, every policy call under its timer."""

    def __init__(self, channel: _Channel, config: dict, guard: _Guard, output: _OutputTail,
                 timer: _CallTimer, layers: dict, reserve: bytearray) -> None:
        self.channel = channel
        self.guard = guard
        self.output = output
        self.reported_printed = 0  # output.printed as the last reply reported it
        self.timer = timer
        self.progress = timer.progress
        self.layers = layers
        self.filename = config["policy_filename"]
        self.game_json = json.dumps(config["game_info"])
        self.load_seconds = float(config["limits"].get("load_seconds", 10.0))
        # What a reply may carry (wire.py): type names and failure texts cut to these lengths.
        self.type_name_chars = config.get("type_name_chars")
        channel.text_limit = config.get("failure_text_chars")
        self.instances: dict = {}
        self.modules: dict = {}  # episode id -> that episode's module globals
        self.ended_modules: list = []
        self.lists: dict = {}  # episode id -> {observation key -> reconstructed list}
        self.code = None
        self.source_lines: list = []
        self.answers = None
        self.current_seq = None
        # Freed on MemoryError so the failure can still be reported.
        self.reserve = reserve
        self.base_kb = 0

    # -- failures --------------------------------------------------------------

    def _policy_traceback(self, error: BaseException) -> tuple[str, str]:
        """(traceback of the policy's own frames, 'line N, in f').

        Lines come from the source the host holds, never from a file: a
        policy that compiled code under another file name cannot make the
        host read that file.  Frames are read with the guard's leave (and the
        cyclic GC off, so no __del__ runs meanwhile)."""
        lines, where = [], ""
        reading = self.guard.host_reading
        enabled = gc.isenabled()
        gc.disable()
        reading[0] = True
        try:
            tb = _EXCEPTION_TRACEBACK(error)
            count = 0
            while tb is not None and count < 200:
                count += 1
                code = tb.tb_frame.f_code
                if type(code.co_filename) is str and code.co_filename == self.filename:
                    number = tb.tb_lineno
                    name = _plain_str(code.co_name)
                    lines.append(f'  File "{self.filename}", line {number}, in {name}\n')
                    if type(number) is int and 0 < number <= len(self.source_lines):
                        lines.append("    " + self.source_lines[number - 1].strip() + "\n")
                    where = f"{self.filename} line {number}, in {name}"
                tb = tb.tb_next
        except BaseException:  # noqa: BLE001 - formatting must never hide the real failure
            pass
        finally:
            reading[0] = False
            if enabled:
                gc.enable()
        name, message = _exception_text(error)
        text = ("Traceback (most recent call last):\n" + "".join(lines)) if lines else ""
        text += f"{name}: {message}\n" if message else f"{name}\n"
        return text, where

    def failure(self, seq, error: BaseException, phase: str) -> dict:
        kind = type(error)
        if issubclass(kind, MemoryError):
            self.reserve = None
        text, where = self._policy_traceback(error)
        detail = f" ({where})" if where else ""
        name, message = _exception_text(error)
        if self.guard.violations:
            category, message = "forbidden", f"{self.guard.violations[0]} in {phase}{detail}"
        elif self.timer.expired or issubclass(kind, CallTimeout):
            category, message = "timeout", f"{self.timer.message()}{detail}"
        elif issubclass(kind, ForbiddenOperation):
            category, message = "forbidden", f"{message} in {phase}{detail}"
        elif issubclass(kind, MemoryError):
            category, message = "memory", f"ran out of memory in {phase}{detail}{self._memory_note()}"
        else:
            first = message.strip().splitlines()[0] if message.strip() else ""
            category, message = "crash", f"{name}{': ' + first if first else ''} in {phase}{detail}"
        return {
            "seq": seq,
            "ok": False,
            "category": category,
            "message": message,
            "traceback": text,
            "output": self.output.tail(),
        }

    def _memory_note(self) -> str:
        """', with N episodes live, about M MB each': how the host's memory was
        shared when it ran out (peak resident memory beyond the host's own,
        measured after the module's first load)."""
        live = len(self.instances)
        try:
            grown = _peak_kb() - self.base_kb
        except Exception:  # noqa: BLE001 - the report must go out regardless
            return f", with {live} episodes live"
        each = f", about {grown / 1024 / live:.1f} MB each" if live and grown > 0 else ""
        return f", with {live} episodes live{each}"

    def violation(self, seq, phase: str) -> dict:
        return {
            "seq": seq,
            "ok": False,
            "category": "forbidden",
            "message": f"{self.guard.violations[0]} in {phase} (the policy caught the error, but it still counts)",
            "traceback": "",
            "output": self.output.tail(),
        }

    def timed_out(self, seq, phase: str) -> dict:
        return {"seq": seq, "ok": False, "category": "timeout",
                "message": f"{self.timer.message()} (the policy caught the timeout, but it still counts)",
                "traceback": "", "output": self.output.tail()}

    def _after_call(self, seq, phase: str):
        """The failure a call left behind even though it returned, or None."""
        if self.guard.violations:
            return self.violation(seq, phase)
        if self.timer.expired:
            return self.timed_out(seq, phase)
        return None

    # -- modules ---------------------------------------------------------------

    def _new_module(self, seq, limit: float) -> dict:
        """Run the policy's module code in a fresh module (its own globals and
        builtins), under the call timer; returns its globals."""
        module = types.ModuleType("policy")
        namespace = module.__dict__
        namespace["__builtins__"] = self.guard.make_builtins()
        self.guard.policy_ids.add(id(namespace))
        # Modules such as dataclasses look the policy's module up by name.
        sys.modules["policy"] = module
        self.progress.tick()
        self.timer.start(seq, "module load", limit)
        try:
            exec(self.code, namespace)
        finally:
            self.timer.stop()
        return namespace

    # -- operations ------------------------------------------------------------

    def load(self, seq, source: str) -> dict:
        self.source_lines = source.splitlines()
        # The policy's own traceback formatting (traceback, warnings) finds
        # its lines here instead of opening a file.
        linecache.cache[self.filename] = (len(source), None, source.splitlines(True), self.filename)
        # An exception in __del__ (or a finaliser) would be printed with its
        # traceback by Python itself, reading files and calling the policy's
        # __str__: the host reports nothing for it instead.
        sys.unraisablehook = _ignore_unraisable
        self.guard.install_hook(globals())
        try:
            self.code = compile(source, self.filename, "exec", dont_inherit=True)
            namespace = self._new_module(seq, self.load_seconds)
        except BaseException as error:  # noqa: BLE001 - policy code may raise anything
            return self.failure(seq, error, "module load")
        self.answers = _AnswerTypes(self.type_name_chars)  # after the policy's own imports (numpy)
        try:
            self.base_kb = _peak_kb()  # the host and the module, before any episode
        except Exception:  # noqa: BLE001
            pass
        failed = self._after_call(seq, "module load")
        if failed:
            return failed
        self.ended_modules.append(namespace)  # the load's module plays no episode
        if not issubclass(type(namespace.get("Policy")), type):
            return {
                "seq": seq,
                "ok": False,
                "category": "crash",
                "message": "the module does not define `class Policy`",
                "traceback": "",
                "output": self.output.tail(),
            }
        return {"seq": seq, "ok": True, "layers": self.layers}

    def new_episodes(self, seq, episodes) -> dict:
        episode = None
        timer, progress, clock = self.timer, self.progress, self.timer._monotonic
        count, total, longest = 0, 0.0, 0.0
        try:
            for episode, player, seed in episodes:
                game = json.loads(self.game_json)
                game["player"] = player
                game["seed"] = seed
                # One module per episode: nothing a policy keeps in its
                # globals or class attributes reaches its next episode.
                namespace = self._new_module(seq, self.load_seconds)
                progress.tick()
                timer.start(seq, f"Policy.__init__ (episode {episode})")
                try:
                    self.instances[episode] = namespace.get("Policy")(player, game)
                finally:
                    timer.stop()
                elapsed = clock() - timer.call_started
                count, total, longest = count + 1, total + elapsed, max(longest, elapsed)
                self.modules[episode] = namespace
                self.lists[episode] = {}
        except BaseException as error:  # noqa: BLE001
            return self.failure(seq, error, f"Policy.__init__ (episode {episode})")
        finally:
            progress.add(4, count, total, longest)
        return self._after_call(seq, f"Policy.__init__ (episode {episode})") or {"seq": seq, "ok": True}

    def _reconstruct(self, episode, obs: dict, deltas: dict) -> list:
        """Put the full lists into obs from the appended suffixes.

        The policy gets the reconstructed list itself (copying would make
        each move cost grow with the history).  Returns fingerprints to
        check afterwards whether the policy changed it in place.
        """
        old = self.lists.get(episode, {})
        kept = {}
        fingerprints = []
        for key, (start, suffix) in deltas.items():
            if start:
                full = old.get(key)
                if full is None or len(full) != start:
                    raise _ProtocolError(f"list {key!r} of episode {episode} is out of step")
                full.extend(suffix)
            else:
                full = suffix
            kept[key] = full
            obs[key] = full
            # _fingerprint(full), inlined: this runs for every list of every request.
            n = len(full)
            fingerprint = (n, full[0], full[n >> 2], full[n >> 1], full[(3 * n) >> 2], full[-1]) if n else (0,)
            fingerprints.append((key, full, fingerprint))
        self.lists[episode] = kept
        return fingerprints

    def act(self, seq, requests) -> dict:
        answers = []
        resync = []
        instances = self.instances
        encode = self.answers.encode
        timer = self.timer
        try:
            return self._act(seq, requests, answers, resync, instances, encode, timer)
        except CallTimeout as error:  # an alarm that landed between two calls
            timer.stop()
            return self.failure(seq, error, f"act (episode {timer.episode})")
        finally:
            timer.stop()  # once per batch: each call re-arms the timers

    def _act(self, seq, requests, answers, resync, instances, encode, timer) -> dict:
        episode = None
        timer.start(seq, "act")  # armed once per batch; each call below only restarts the clock
        clock = timer._monotonic
        ticks = self.progress.counts
        tick = ticks[0]
        longest = 0.0
        started = first = clock()  # then each call's end is the next one's start: one clock read per call
        for episode, obs, deltas in requests:
            instance = instances.get(episode)
            if instance is None:
                raise _ProtocolError(f"act for unknown episode {episode}")
            fingerprints = None
            if deltas:
                fingerprints = self._reconstruct(episode, obs, deltas)
            elif self.lists.get(episode):
                self.lists[episode] = {}
            legal = obs.get("legal_actions")  # before the policy holds obs
            try:
                timer.episode = episode
                tick += 1
                ticks[0] = tick  # the parent's clock: a call starts (a store: cheaper than +=)
                timer.call_started = started  # timer.start(seq, "act", None, episode), inlined
                answer = instance.act(obs)
                ended = clock()
                if ended - started > longest:
                    longest = ended - started
                started = ended
                # The common answer, a plain int that fits 63 bits (literal
                # bounds: nothing a policy could rebind), skips encode.
                if type(answer) is not int or not -0x8000000000000000 < answer < 0x8000000000000000:
                    answer = encode(answer, legal)
                answers.append(answer)
            except BaseException as error:  # noqa: BLE001 - policy code may raise anything
                timer.stop()
                return self.failure(seq, error, f"act (episode {episode})")
            if timer.expired:
                timer.stop()
                return self.timed_out(seq, f"act (episode {episode})")
            if fingerprints:
                for key, full, fingerprint in fingerprints:
                    if not _unchanged(full, fingerprint):
                        # The policy changed its list: forget it and have the
                        # parent send it whole next time.
                        del self.lists[episode][key]
                        resync.append([episode, key])
        self.progress.add(1, len(answers), started - first, longest)
        if self.guard.violations:
            return self.violation(seq, f"act (episode {episode})")
        reply = {"seq": seq, "ok": True, "answers": answers}
        if resync:
            reply["resync"] = resync
        return reply

    def act_columns(self, seq, message) -> dict:
        """`act` for a batch sent by column (op "cols", see PolicyHost.send_act_columns).

        Every observation has the keys `keys`, in that order: a value per
        observation from `each`, a copy of the batch's value from `same`
        (a scalar, or a list of scalars), or, from `grown`, the list this
        host holds for that episode and key with one item appended (the
        parent gives the length it must have before: an int for the whole
        batch or one per observation), or the list sent whole in `whole`
        ([index, key, list] entries: the first time, or after a resync).
        The policy gets the held list itself, fingerprinted as in `act`.
        """
        plan, ids, whole = self._column_plan(message)
        answers = []
        resync = []
        timer = self.timer
        try:
            return self._act_columns(seq, plan, ids, whole, answers, resync, timer)
        except CallTimeout as error:  # an alarm that landed between two calls
            timer.stop()
            return self.failure(seq, error, f"act (episode {timer.episode})")
        finally:
            timer.stop()

    @staticmethod
    def _column_plan(message) -> tuple:
        """(plan, ids, whole) of a "cols" message, its shape checked before any
        policy code runs: plan holds (key, kind, column, items) per key."""
        ids, keys = message["ids"], message["keys"]
        each, same, grown = message.get("each") or {}, message.get("same") or {}, message.get("grown") or {}
        if type(ids) is not list or type(keys) is not list or not all(type(e) is int for e in ids):
            raise _ProtocolError("cols: ids and keys must be lists")
        if type(each) is not dict or type(same) is not dict or type(grown) is not dict:
            raise _ProtocolError("cols: each, same and grown must be objects")
        count = len(ids)
        plan = []
        for key in keys:
            if key in each:
                column = each[key]
                if type(column) is not list or len(column) != count:
                    raise _ProtocolError(f"cols: column {key!r} does not have {count} values")
                plan.append((key, 0, column, None))
            elif key in same:
                value = same[key]
                if type(value) is list:
                    if not all(type(item) in (int, float, str, bool) or item is None for item in value):
                        raise _ProtocolError(f"cols: shared list {key!r} must hold scalars only")
                    plan.append((key, 1, value, None))
                elif type(value) in (int, float, str, bool) or value is None:
                    plan.append((key, 2, value, None))
                else:
                    raise _ProtocolError(f"cols: shared value {key!r} must be a scalar or a list of scalars")
            elif key in grown:
                entry = grown[key]
                if type(entry) is not list or len(entry) != 2:
                    raise _ProtocolError(f"cols: grown list {key!r} must be [length, items]")
                at, items = entry
                if type(items) is not list or len(items) != count or not (
                    type(at) is int or (type(at) is list and len(at) == count and all(type(n) is int for n in at))
                ):
                    raise _ProtocolError(f"cols: grown list {key!r} does not have {count} items")
                plan.append((key, 3, at, items))
            else:
                raise _ProtocolError(f"cols: no values for key {key!r}")
        whole = {}
        for entry in message.get("whole") or ():
            if not (type(entry) is list and len(entry) == 3 and type(entry[0]) is int and 0 <= entry[0] < count
                    and type(entry[1]) is str and entry[1] in grown and type(entry[2]) is list):
                raise _ProtocolError("cols: a whole list must be [index, grown key, list]")
            whole[(entry[0], entry[1])] = entry[2]
        return plan, ids, whole

    def _act_columns(self, seq, plan, ids, whole, answers, resync, timer) -> dict:
        instances, held_lists, encode = self.instances, self.lists, self.answers.encode
        for episode in ids:
            if episode not in instances:
                raise _ProtocolError(f"act for unknown episode {episode}")
        # The observations, key by key (one tight loop per key, not a dispatch
        # per key and request), and per observation its grown lists with their
        # fingerprints (_fingerprint's five samples, inlined, with the
        # positions they were taken at), checked after its act as _unchanged
        # does.
        observations = [{} for _ in ids]
        prints = [[] for _ in ids]
        helds = None
        for key, kind, column, items in plan:
            if kind == 0:
                for obs, value in zip(observations, column):
                    obs[key] = value
            elif kind == 1:
                for obs in observations:
                    obs[key] = list(column)  # every observation its own copy
            elif kind == 2:
                for obs in observations:
                    obs[key] = column
            else:
                if helds is None:
                    helds = [held_lists[episode] for episode in ids]
                if column.__class__ is int and not whole:
                    # The common case: every list of the batch one item longer, at the same length.
                    before = column
                    n = before + 1
                    q, h, t = n >> 2, n >> 1, (3 * n) >> 2
                    for episode, obs, held, item, fingerprints in zip(ids, observations, helds, items, prints):
                        full = held.get(key)
                        if full is None or len(full) != before:
                            raise _ProtocolError(f"list {key!r} of episode {episode} is out of step")
                        full.append(item)
                        obs[key] = full
                        fingerprints.append((key, full, n, q, h, t, full[0], full[q], full[h], full[t], item))
                    continue
                lengths = column if column.__class__ is list else None
                for index, episode in enumerate(ids):
                    held = helds[index]
                    full = whole.get((index, key)) if whole else None
                    if full is None:
                        full = held.get(key)
                        n = column if lengths is None else lengths[index]
                        if full is None or len(full) != n:
                            raise _ProtocolError(f"list {key!r} of episode {episode} is out of step")
                        full.append(items[index])
                        n += 1
                    else:
                        held[key] = full
                        n = len(full)
                    observations[index][key] = full
                    if n:
                        q, h, t = n >> 2, n >> 1, (3 * n) >> 2
                        prints[index].append((key, full, n, q, h, t, full[0], full[q], full[h], full[t], full[-1]))
                    else:
                        prints[index].append((key, full, 0, 0, 0, 0, None, None, None, None, None))
        episode = None
        timer.start(seq, "act")  # armed once per batch; each call below only restarts the clock
        clock = timer._monotonic
        ticks = self.progress.counts
        tick = ticks[0]
        longest = 0.0
        started = first = clock()  # then each call's end is the next one's start: one clock read per call
        for episode, obs, fingerprints, legal in zip(ids, observations, prints, _legal_lists(plan)):
            try:
                timer.episode = episode
                tick += 1
                ticks[0] = tick  # the parent's clock: a call starts (a store: cheaper than +=)
                timer.call_started = started
                answer = instances[episode].act(obs)
                ended = clock()
                if ended - started > longest:
                    longest = ended - started
                started = ended
                if type(answer) is not int or not -0x8000000000000000 < answer < 0x8000000000000000:
                    answer = encode(answer, legal)
                answers.append(answer)
            except BaseException as error:  # noqa: BLE001 - policy code may raise anything
                timer.stop()
                return self.failure(seq, error, f"act (episode {episode})")
            if timer.expired:
                timer.stop()
                return self.timed_out(seq, f"act (episode {episode})")
            for key, full, n, q, h, t, first_item, quarter, half, three_quarters, last in fingerprints:
                if len(full) != n or n and not (
                    full[0] is first_item
                    and full[q] is quarter
                    and full[h] is half
                    and full[t] is three_quarters
                    and full[-1] is last
                ):
                    del held_lists[episode][key]  # changed in place: the parent sends it whole next time
                    resync.append([episode, key])
        self.progress.add(1, len(answers), started - first, longest)
        if self.guard.violations:
            return self.violation(seq, f"act (episode {episode})")
        reply = {"seq": seq, "ok": True, "answers": answers}
        if resync:
            reply["resync"] = resync
        return reply

    def end_episodes(self, seq, episode_ids) -> dict:
        timer = self.timer
        try:
            for episode in episode_ids:
                self.progress.tick()
                timer.start(seq, f"end of episode {episode}")
                try:
                    # Dropping the instance may run its __del__: under the timer and the guard.
                    self.instances.pop(episode, None)
                    namespace = self.modules.pop(episode, None)
                    if namespace is not None:
                        # Emptied, but kept: its id stays a policy's (never
                        # reused by a library's dict) at ~100 bytes an episode.
                        self.ended_modules.append(namespace)
                        dict.clear(namespace)
                finally:
                    timer.stop()
                self.lists.pop(episode, None)
        except BaseException as error:  # noqa: BLE001 - __del__ in policy code
            return self.failure(seq, error, "end of episode")
        return self._after_call(seq, "end of episode") or {"seq": seq, "ok": True}

    def serve(self) -> None:
        while True:
            message = self.channel.receive()
            if message is None:
                return  # the parent closed the channel
            seq = self.current_seq = message.get("seq")
            op = message.get("op")
            try:
                if op == "cols":
                    reply = self.act_columns(seq, message)
                elif op == "act":
                    reply = self.act(seq, message["reqs"])
                elif op == "new":
                    reply = self.new_episodes(seq, message["eps"])
                elif op == "end":
                    reply = self.end_episodes(seq, message["ids"])
                else:
                    raise _ProtocolError(f"unknown operation {op!r}")
            except (_ProtocolError, ValueError, KeyError, TypeError) as error:
                reply = {"seq": seq, "ok": False, "category": "crash",
                         "message": f"sandbox protocol error: {type(error).__name__}: {error}",
                         "traceback": "", "output": ""}
            reply = _with_refusal(reply, op)
            if self.output.printed != self.reported_printed:  # one comparison a request; nothing when silent
                reply = _with_printed(reply, self)
            self.progress.tick()  # the request is done: its reply follows
            self.channel.send(reply)
            if not reply["ok"]:
                os._exit(_EXIT_AFTER_FAILURE)


def _legal_lists(plan: list):
    """The legal-action list of each observation of a "cols" batch, as the
    parent sent it (a shared list's copies are the policy's; the list
    itself is not)."""
    for key, kind, column, _items in plan:
        if key == "legal_actions":
            if kind == 0:
                return column
            if kind == 1:
                return itertools.repeat(column)
    return itertools.repeat(None)


def _with_printed(reply: dict, host: "_Host") -> dict:
    """The reply with `printed: [bytes printed so far, the first characters]`
    when the policy printed anything since the last reply said so (its output
    goes nowhere else: the parent tells the person it was discarded)."""
    output = host.output
    if output.printed != host.reported_printed:
        host.reported_printed = output.printed
        reply["printed"] = [output.printed, output.head]
    return reply


def _with_refusal(reply: dict, op) -> dict:
    """The reply, turned into a `forbidden` failure naming the system call if
    seccomp refused one while it was made (host_kernel.install_refusal_reporting):
    a call missing from the allow-list is diagnosable, and a policy that
    catches the EPERM still fails."""
    refusals = host_kernel.refusals
    number = refusals.new() if refusals is not None else None
    if number is None:
        return reply
    # "#N": the parent puts the call's name in (checks.child_failure).
    what = f"the sandbox refused system call #{number} (seccomp) while serving {op!r}"
    if reply.get("ok"):
        return {"seq": reply.get("seq"), "ok": False, "category": "forbidden", "message": what,
                "traceback": "", "output": "", "syscall": number}
    if reply.get("category") == "crash":  # most likely the refused call's EPERM
        return {**reply, "category": "forbidden", "message": f"{what}: {reply.get('message', '')}",
                "syscall": number}
    return {**reply, "message": f"{reply.get('message', '')} (the sandbox also refused system call #{number})",
            "syscall": number}


def main() -> None:
    parent = os.getppid()  # before anything: the process whose death must end this one
    # Move the protocol off fds 0/1 at once; 0 and 1 become /dev/null, 2 stays
    # the crash log the parent reads if the interpreter itself dies.
    in_fd, out_fd = os.dup(0), os.dup(1)
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    os.dup2(devnull, 1)
    os.close(devnull)
    channel = _Channel(in_fd, out_fd)
    prepare = channel.receive()
    if prepare is None:
        return
    # Part one, before any policy exists (a pooled host does it while it
    # waits): the kernel layers and everything that does not depend on the
    # policy.  A failure is reported against the next request, the load.
    try:
        if prepare.get("op") != "prepare":
            raise _ProtocolError(f"the first request must be prepare, not {prepare.get('op')!r}")
        guard, timer, layers, ctypes, reserve = _prepare(channel, prepare, parent)
    except Exception as error:  # the host could not even be set up
        _setup_failed(channel, error, prepare.get("seq") if type(prepare) is dict else None)
    channel.send({"seq": prepare.get("seq"), "ok": True})
    config = channel.receive()
    if config is None:
        return
    seq = config.get("seq")
    # Part two, when the policy's module arrives: its limits, its imports,
    # dropping root, the guard's patches and hook; then the module.
    try:
        if config.get("op") != "load":
            raise _ProtocolError(f"the second request must be load, not {config.get('op')!r}")
        output = _load_limits(config, guard, timer, ctypes, prepare.get("drop_to"), parent, layers)
        del ctypes
        host = _Host(channel, config, guard, output, timer, layers, reserve)
        del reserve
    except Exception as error:
        _setup_failed(channel, error, seq)
    reply = _with_printed(_with_refusal(host.load(seq, config["source"]), "load"), host)
    host.progress.tick()
    channel.send(reply)
    if not reply["ok"]:
        os._exit(_EXIT_AFTER_FAILURE)
    try:
        host.serve()
    except BaseException as error:  # noqa: BLE001 - e.g. the policy broke builtins the host relies on
        _last_words(channel, host, guard, error)


def _prepare(channel: _Channel, config: dict, parent: int) -> tuple:
    """Part one of the set-up: every layer that does not depend on the policy.

    In this order: modules the parent asks for (what allowed modules import
    lazily, while the installation is readable), ctypes, no-new-privs and
    the parent-death signal, the call timer's signal handlers, the guard
    (not armed yet), Landlock and seccomp.  Also, off the policy's path: the
    compiler's one-time set-up (the first compile in a process costs ~5 ms
    more than the next) and the memory reserve.  Returns (guard, timer,
    layers, ctypes, reserve)."""
    sys.path.extend(config.get("site_dirs", []))
    host_kernel.set_limit(resource.RLIMIT_CORE, 0)
    _preimport(config.get("preimport", []))
    compile("class C:\n    def f(self, x):\n        return {'a': [x, 1.0, f'{x}']}\n", "<host warm-up>", "exec",
            dont_inherit=True)
    reserve = bytearray(1 << 20)  # freed on MemoryError so the failure can still be reported
    ctypes = host_kernel.load_ctypes()
    host_kernel.set_parent_death_signal(ctypes, parent)  # also no-new-privs, which Landlock needs
    guard = _Guard(config)
    timer = _CallTimer(channel, 1.0, 2.0)  # its limits come with the policy (_load_limits)
    timer.progress = _Progress(config.get("clock_fd"))  # mapped before seccomp, which may refuse mmap of it later
    timer.install()  # before patch_modules stubs signal.signal, and before seccomp freezes the handlers
    layers = _apply_kernel_layers(config.get("kernel", {}), guard, config.get("drop_to"))
    return guard, timer, layers, ctypes, reserve


def _load_limits(config: dict, guard: _Guard, timer: _CallTimer, ctypes, drop, parent: int,
                 layers: dict) -> "_OutputTail":
    """Part two of the set-up, before the policy's module runs: its resource
    limits, the modules it imports (still as root where the installation is
    root's), dropping root (the parent-death signal set again: changing
    credentials clears it), captured output, its call limits, the guard's
    patches.  Returns the captured output."""
    limits = config["limits"]
    host_kernel.apply_limits(limits)
    _preimport(config.get("preimport", []))
    if layers.get("seccomp"):
        # Every extension module the policy may use is loaded: no new
        # executable memory from here on (no JIT, no shellcode).
        host_kernel.forbid_executable_memory()
    if limits.get("max_processes"):
        host_kernel.set_limit(resource.RLIMIT_NPROC, int(limits["max_processes"]))
    if drop and os.geteuid() == 0:
        host_kernel.drop_privileges(int(drop[0]), int(drop[1]))
        host_kernel.set_parent_death_signal(ctypes, parent)
    output = _OutputTail(int(config.get("output_tail_chars", 2000)), int(config.get("output_head_chars", 0)))
    sys.stdout = sys.stderr = output
    timer.set_limits(float(limits.get("call_seconds", 1.0)), float(limits.get("call_grace_seconds", 2.0)))
    guard.recursion_cap = int(config.get("recursion_limit", guard.recursion_cap))
    guard.patch_modules()
    return output


def _preimport(names) -> None:
    for name in names:
        try:
            __import__(name)
        except Exception:
            pass  # the policy's own import reports the problem


def _setup_failed(channel: _Channel, error: BaseException, seq) -> None:
    """Report a failure of the host's own set-up as the reply to `seq`, then exit."""
    channel.send({"seq": seq, "ok": False, "category": "crash",
                  "message": f"sandbox setup failed: {type(error).__name__}: {error}",
                  "traceback": traceback.format_exc(), "output": ""})
    os._exit(_EXIT_AFTER_FAILURE)


def _apply_kernel_layers(wanted: dict, guard: "_Guard", drop_to=None) -> dict:
    """Landlock and seccomp (host_kernel.py), as the parent asked; a layer the
    parent asked for and the kernel refused is fatal (the parent checked the
    kernel offers it, so refusing means something is wrong)."""
    applied = {"landlock": 0, "seccomp": 0}
    if wanted.get("seccomp"):
        host_kernel._load_libseccomp()  # while /usr/lib is still readable
    if wanted.get("landlock"):
        roots = [root.rstrip("/") or "/" for root in guard.read_roots]
        applied["landlock"] = host_kernel.restrict_filesystem_and_network(roots)
    if wanted.get("seccomp"):
        host_kernel.install_refusal_reporting()  # SIGSYS's handler, while memory may still be made executable
        try:
            drop = (int(drop_to[0]), int(drop_to[1])) if drop_to and os.geteuid() == 0 else None
        except (TypeError, ValueError, IndexError):
            drop = None  # no credential change allowed; the load reports the bad value
        applied["seccomp"] = host_kernel.install_syscall_filter((signal.SIGALRM, signal.SIGPROF), drop)
    return applied


def _last_words(channel: _Channel, host: "_Host", guard: _Guard, error: BaseException) -> None:
    """Report a failure of the host's own code as plainly as possible, then exit."""
    # No traceback.format_exc(): it would call the policy's exception methods
    # and read whatever files its frames name.
    name, _message = _exception_text(error)
    try:
        os.write(2, ("host failure: " + name + "\n").encode("utf-8", "replace"))
    except BaseException:  # noqa: BLE001
        pass
    if guard.violations:
        category, message = "forbidden", guard.violations[0] + " (the host could not continue)"
    else:
        category, message = "crash", "the host failed while serving the policy: " + name
    try:
        channel.send({"seq": host.current_seq, "ok": False, "category": category, "message": message,
                      "traceback": "", "output": ""})
    finally:
        os._exit(_EXIT_AFTER_FAILURE)


if __name__ == "__main__":
    main()
