"""Running the adversarial corpus: static validation and real matches.

Every file in `corpus/` is one hostile policy that tries ONE thing.  Its
expected outcome is declared in the file itself, as a dict literal that this
module reads without importing (or even decoding) the file:

    EXPECT = {
        "tries": "one line: what the policy attempts",
        "static": "invalid",       # or "valid": what validate_source says
        "runtime": "forbidden",    # outcome in a real match, when validation
                                   # is bypassed: ok, timeout, memory, crash,
                                   # forbidden, illegal_action, malformed; or
                                   # {"rlimits": ..., "bubblewrap": ...}
        "message": "blocked os",   # regex the failure summary must match
        # optional:
        "game": "kuhn_poker",      # default rrps(num_repetitions=20)
        "limits": {"memory_mb": 256},  # SandboxLimits overrides
        "match_seconds": 1.0,      # the referee's per-match wall limit
        "pad_bytes": 150_000,      # the harness appends a comment this long
        "leak": True,              # the policy encodes secrets in its actions
        "actions": [0],            # every answer it gives must be one of these (or
                                   # {"rlimits": [...], "bubblewrap": [...]})
        "static_lines": [1],       # lines of static issues not marked in the source
        "seconds": 8,              # the match must end within this many seconds
        "parent_mb": 8,            # the parent's peak Python allocations while the
                                   # matches play stay within this many MB (tracemalloc)
    }

Lines ending in `# <- rejected` are where static validation must report an
issue; the issues must be on exactly those lines (plus `static_lines`).

Sources are templates: `@@NAME@@` placeholders are replaced by the paths and
port of an `Arena` (a sentinel directory, a sessions directory, a fake home
and a loopback listener made for the run) before validation or play.

`play_case` plays the case in a real referee lockstep: the hostile policy
against a seed policy (the opponent), plus a clean bystander match against
the same opponent host, so the opponent's and the referee's behaviour can be
compared with a clean run.  Used by test_corpus.py and make_table.py.
"""

from __future__ import annotations

import pytest

import signal

import ast
import hashlib
import os
import re
import secrets
import shutil
import socket
import stat
import tempfile
import time
import tracemalloc
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Iterator

from csro_tui.evaluation.participants import CodePolicy
from csro_tui.evaluation.referee import MatchJob, play_match, play_matches
from csro_tui.evaluation.results import MatchResult
from csro_tui.games.registry import get_game
from csro_tui.sandbox.sandbox import PolicyHost, SandboxLimits
from csro_tui.sandbox.validation import ValidationIssue, validate_source

CORPUS_DIR = Path(__file__).with_name("corpus")
MODES = ("bubblewrap", "rlimits")
OUTCOMES = frozenset({"ok", "timeout", "memory", "crash", "forbidden", "illegal_action", "malformed"})
DEFAULT_GAME = "rrps(num_repetitions=20)"
EPISODES = 2
SEED = 20240611
BYSTANDER_SEED = 777
REJECTED_MARK = "# <- rejected"
MARKER_PREFIX = "csro-pwned"  # every file a hostile policy tries to create starts with this
SECRET_ENV = "OPENAI_API_KEY"

# Small limits: a working policy answers in microseconds, so only the cases
# that wait for a deadline on purpose pay for them (about 2 s each); still
# generous enough for a loaded machine running other tests at the same time.
LIMITS = SandboxLimits(
    init_timeout=15.0, move_timeout=0.5, batch_timeout=1.0, memory_mb=512, cpu_seconds=30
)

# Per game: (the hostile policy's opponent, the bystander that also plays it).
OPPONENTS = {
    "rrps": ("frequency_counter", "markov_predictor"),
    "kuhn_poker": ("card_rules", "uniform"),
}

_EXPECT = re.compile(r"^EXPECT = (\{.*?^\})", re.M | re.S)
_KEYS = {"tries", "static", "runtime", "message", "game", "limits", "match_seconds", "pad_bytes", "leak",
         "static_lines", "actions", "seconds", "parent_mb"}


@dataclass(frozen=True)
class Case:
    name: str
    raw: bytes  # the file as stored (may not be UTF-8)
    expect: dict

    @property
    def tries(self) -> str:
        return self.expect["tries"]

    @property
    def static(self) -> str:
        return self.expect["static"]

    def runtime(self, mode: str) -> str:
        runtime = self.expect["runtime"]
        return runtime[mode] if isinstance(runtime, dict) else runtime

    @property
    def game(self) -> str:
        return self.expect.get("game", DEFAULT_GAME)

    @property
    def limits(self) -> SandboxLimits:
        return replace(LIMITS, **self.expect.get("limits", {}))

    def source_bytes(self, arena: "Arena | None" = None) -> bytes:
        """The policy as handed to validation: placeholders filled, padding added."""
        data = self.raw
        if arena is not None:
            for name, value in arena.placeholders(self.name).items():
                data = data.replace(f"@@{name}@@".encode(), value.encode())
        pad = self.expect.get("pad_bytes")
        if pad:
            line = b"# " + b"x" * 98 + b"\n"
            data += line * (pad // len(line) + 1)
        return data

    def source_text(self, arena: "Arena | None" = None) -> str:
        """The policy as a str for the sandbox (which only takes str): bytes
        that are not UTF-8 become lone surrogates, as a careless caller would
        make them."""
        return self.source_bytes(arena).decode("utf-8", "surrogateescape")

    def marked_lines(self) -> set[int]:
        text = self.raw.decode("utf-8", "replace")
        lines = {number for number, line in enumerate(text.splitlines(), 1) if line.rstrip().endswith(REJECTED_MARK)}
        return lines | set(self.expect.get("static_lines", []))


def parse_expect(raw: bytes, name: str = "?") -> dict:
    """The EXPECT dict of a corpus file, read as text, never executed."""
    match = _EXPECT.search(raw.decode("latin-1"))
    if match is None:
        raise ValueError(f"{name}: no `EXPECT = {{...}}` block")
    expect = ast.literal_eval(match.group(1))
    unknown = set(expect) - _KEYS
    if unknown:
        raise ValueError(f"{name}: unknown EXPECT keys {sorted(unknown)}")
    if expect.get("static") not in ("valid", "invalid"):
        raise ValueError(f"{name}: EXPECT['static'] must be 'valid' or 'invalid'")
    runtime = expect.get("runtime")
    values = runtime.values() if isinstance(runtime, dict) else [runtime]
    if isinstance(runtime, dict) and set(runtime) != set(MODES):
        raise ValueError(f"{name}: EXPECT['runtime'] needs an outcome for each of {MODES}")
    if not all(value in OUTCOMES for value in values):
        raise ValueError(f"{name}: EXPECT['runtime'] must be one of {sorted(OUTCOMES)}")
    if not isinstance(expect.get("tries"), str):
        raise ValueError(f"{name}: EXPECT['tries'] must say what the case tries")
    return expect


def load_cases() -> list[Case]:
    cases = []
    for path in sorted(CORPUS_DIR.glob("*.py")):
        raw = path.read_bytes()
        cases.append(Case(path.stem, raw, parse_expect(raw, path.name)))
    return cases


def static_issues(case: Case, arena: "Arena | None" = None) -> list[ValidationIssue]:
    return validate_source(case.source_bytes(arena))


# -- the arena: what a hostile policy may aim at --------------------------------------


class Arena:
    """Targets outside the sandbox, made reachable on purpose.

    A world-traversable root (under /tmp, not under pytest's private temp
    dirs) holding a world-writable sentinel directory and file, a sessions
    directory with a session log, and a fake $HOME with a dotfile and a
    secret file; plus a TCP listener on 127.0.0.1.  With file permissions
    out of the way, only the sandbox stands between the policy and these.
    """

    def __init__(self) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="csro-adv-"))
        os.chmod(self.root, 0o755)
        self.secret = "sk-csro-" + secrets.token_hex(12)
        self.sentinel = self._dir("sentinel", 0o777)
        self._file(self.sentinel / "sentinel.txt", "original sentinel\n", 0o666)
        self.sessions = self._dir("sessions", 0o777)
        session = self.sessions / "20240101-000000-rrps-scripted"
        session.mkdir(mode=0o777)
        os.chmod(session, 0o777)
        self._file(session / "events.jsonl", '{"v": 1, "seq": 1, "type": "session_started"}\n', 0o666)
        self.session_log = session / "events.jsonl"
        self.home = self._dir("home", 0o777)
        self._file(self.home / ".bashrc", "# a user's shell profile\n", 0o666)
        self.secret_file = self.home / "openai_key.txt"
        self._file(self.secret_file, self.secret + "\n", 0o644)
        self.listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(8)
        self.listener.setblocking(False)
        self.port = self.listener.getsockname()[1]

    def _dir(self, name: str, mode: int) -> Path:
        path = self.root / name
        path.mkdir()
        os.chmod(path, mode)
        return path

    @staticmethod
    def _file(path: Path, text: str, mode: int) -> None:
        path.write_text(text)
        os.chmod(path, mode)

    def placeholders(self, case_name: str) -> dict[str, str]:
        return {
            "SENTINEL": str(self.sentinel),
            "SESSIONS": str(self.sessions),
            "SESSION_LOG": str(self.session_log),
            "HOME": str(self.home),
            "SECRET_FILE": str(self.secret_file),
            "PORT": str(self.port),
            "MARKER": f"{MARKER_PREFIX}-{case_name}",
        }

    def snapshot(self) -> dict[str, tuple]:
        """Every path under the root with its type, mode, owner and content hash."""
        entries: dict[str, tuple] = {}
        for directory, dirs, files in os.walk(self.root):
            for name in dirs + files:
                path = os.path.join(directory, name)
                info = os.lstat(path)
                digest = ""
                if stat.S_ISREG(info.st_mode):
                    digest = hashlib.sha256(Path(path).read_bytes()).hexdigest()
                entries[os.path.relpath(path, self.root)] = (
                    stat.S_IFMT(info.st_mode), stat.S_IMODE(info.st_mode), info.st_uid, info.st_size, digest
                )
        return entries

    def connections(self) -> int:
        """Connections made to the listener so far (accepted and closed)."""
        count = 0
        while True:
            try:
                connection, _ = self.listener.accept()
            except (BlockingIOError, InterruptedError):
                return count
            connection.close()
            count += 1

    def close(self) -> None:
        self.listener.close()
        shutil.rmtree(self.root, ignore_errors=True)


def stray_markers() -> list[str]:
    """Files named like a hostile policy's marker in the usual places outside the arena."""
    found = []
    for directory in {Path("/tmp"), Path.cwd(), Path(__file__).resolve().parents[2], Path.home()}:
        try:
            found += [str(p) for p in directory.iterdir() if p.name.startswith(MARKER_PREFIX)]
        except OSError:
            pass
    return sorted(found)


@contextmanager
def environment(**values: str) -> Iterator[None]:
    """Set environment variables for the duration, then restore them."""
    saved = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def arena_environment(arena: Arena):
    """The parent's environment during a run: a fake API key, HOME and sessions dir."""
    return environment(**{SECRET_ENV: arena.secret, "HOME": str(arena.home), "CSRO_SESSIONS_DIR": str(arena.sessions)})


# -- playing a case ---------------------------------------------------------------------


class RecordingHost(PolicyHost):
    """A PolicyHost that keeps every answer its policy gave, per episode."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.answers: dict[int, list] = {}
        self._batch: list = []

    def _keep(self, requests, answers) -> None:
        for (episode, _obs), answer in zip(requests, answers):
            self.answers.setdefault(episode, []).append(answer)

    # The referee may use act, or its two halves send_act (or send_act_columns)/receive_act.
    def act(self, requests):
        if hasattr(PolicyHost, "send_act"):
            return super().act(requests)  # goes through the two halves below
        answers = super().act(requests)
        self._keep(requests, answers)
        return answers

    def send_act(self, requests):
        self._batch = list(requests)
        return super().send_act(requests)

    def send_act_columns(self, episodes, **columns):  # the RRPS fast path's wire
        self._batch = [(episode, None) for episode in episodes]
        return super().send_act_columns(episodes, **columns)

    def receive_act(self):
        answers = super().receive_act()
        self._keep(self._batch, answers)
        return answers


class Recorder:
    """A host factory for the referee that remembers the hosts it made."""

    def __init__(self) -> None:
        self.hosts: dict[str, RecordingHost] = {}

    def __call__(self, source, game_info, **kwargs) -> RecordingHost:
        host = RecordingHost(source, game_info, **kwargs)
        self.hosts[host.name] = host
        return host

    def answers(self, name: str) -> dict[int, list]:
        host = self.hosts.get(name)
        return dict(host.answers) if host is not None else {}


@dataclass
class CaseRun:
    case: Case
    mode: str
    result: MatchResult  # the hostile policy's match
    bystander: MatchResult  # the clean match against the same opponent host
    actions: dict[int, list]  # what the hostile policy answered, per episode
    connections: int = 0  # made to the arena's listener
    host_pids: list[int] = field(default_factory=list)  # every host the referee started
    seconds: float = 0.0  # how long the matches took, hosts' start-up included
    parent_mb: float | None = None  # the parent's peak Python allocations meanwhile (when the case bounds them)

    @property
    def outcome(self) -> str:
        return self.result.failure.category.value if self.result.failure else "ok"

    @property
    def summary(self) -> str:
        return self.result.failure.summary() if self.result.failure else "completed"


def participants(case: Case, source: str) -> tuple[Any, CodePolicy, CodePolicy, CodePolicy]:
    spec = get_game(case.game)
    opponent_name, bystander_name = OPPONENTS[case.game.split("(")[0]]
    seeds = spec.seed_policies()
    return (
        spec,
        CodePolicy("adversary", source),
        CodePolicy("opponent", seeds[opponent_name]),
        CodePolicy("bystander", seeds[bystander_name]),
    )


def play_case(case: Case, arena: Arena, mode: str) -> CaseRun:
    """The case's policy (validation bypassed) in a real lockstep; see module doc."""
    spec, adversary, opponent, bystander = participants(case, case.source_text(arena))
    traced = "parent_mb" in case.expect and not tracemalloc.is_tracing()
    with environment(CSRO_SANDBOX=mode):
        recorder = Recorder()
        if traced:
            tracemalloc.start()
        started = time.monotonic()
        try:
            hostile, clean = play_matches(
            spec,
            [MatchJob(adversary, opponent, EPISODES, SEED), MatchJob(bystander, opponent, EPISODES, BYSTANDER_SEED)],
                limits=case.limits,
                match_seconds=case.expect.get("match_seconds"),
                host_factory=recorder,
            )
            seconds = time.monotonic() - started
            peak = tracemalloc.get_traced_memory()[1] / (1 << 20) if traced else None
        finally:
            if traced:
                tracemalloc.stop()
    return CaseRun(
        case, mode, hostile, clean, recorder.answers("adversary"), arena.connections(),
        [host.pid for host in recorder.hosts.values() if host.pid is not None], seconds, peak,
    )


_REFERENCE: dict[tuple[str, str], MatchResult] = {}


def clean_bystander_result(case: Case, mode: str) -> MatchResult:
    """The bystander's match against the opponent with nobody hostile around (cached)."""
    key = (case.game, mode)
    if key not in _REFERENCE:
        spec, _, opponent, bystander = participants(case, "")
        with environment(CSRO_SANDBOX=mode):
            _REFERENCE[key] = play_match(
                spec, bystander, opponent, episodes=EPISODES, seed=BYSTANDER_SEED, limits=LIMITS
            )
    return _REFERENCE[key]


def secret_encoding(secret: str, num_actions: int) -> list[int]:
    """How the corpus's `leak` cases would spell a secret in actions (see env_api_key.py)."""
    return [ord(character) % num_actions for character in secret]


def spells(actions: dict[int, list], pattern: list[int], length: int = 16) -> bool:
    """Whether any episode's actions hold the first `length` items of `pattern` in a row."""
    needle = pattern[:length]
    for answers in actions.values():
        plain = [a if isinstance(a, int) else None for a in answers]
        if any(plain[i : i + len(needle)] == needle for i in range(len(plain) - len(needle) + 1)):
            return True
    return False


@dataclass
class Row:
    """One line of the corpus table (make_table.py)."""

    case: str
    tries: str
    static: str
    outcomes: dict[str, str] = field(default_factory=dict)


CASES = load_cases()
IDS = [case.name for case in CASES]


def check_runtime_layers(case, mode, arena) -> None:
    """A case played with validation bypassed, straight into a sandbox host in a real referee lockstep:
    every run-time check of test_corpus.py (shared with test_corpus_pooled.py)."""
    before = arena.snapshot()
    strays = stray_markers()
    handlers = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGCHLD)}
    group = os.getpgrp()

    with arena_environment(arena):
        run = play_case(case, arena, mode)

    # The match ended as declared, with a one-line summary naming the culprit.
    failure = run.result.failure
    assert run.outcome == case.runtime(mode), run.summary
    if failure is not None:
        summary = failure.summary()
        assert "\n" not in summary and len(summary) < 400, summary
        # Policy-made text arrives without terminal controls (C0 but tab and newline, DEL, C1).
        for text in (summary, failure.traceback):
            assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]", text), repr(text)
        assert failure.policy == "adversary"
        assert re.search(case.expect["message"], summary), summary
        assert arena.secret not in failure.message + failure.traceback
    else:
        assert run.result.episodes == EPISODES and len(run.result.returns) == EPISODES
    if "seconds" in case.expect:  # a stated bound on how long the policy can hold an evaluation
        assert run.seconds <= case.expect["seconds"], f"took {run.seconds:.1f} s"
    if run.parent_mb is not None:  # a stated bound on what the policy can make the parent hold
        assert run.parent_mb <= case.expect["parent_mb"], f"the parent's allocations peaked at {run.parent_mb:.1f} MB"

    # Nothing outside the hosts' temporary directories changed; nothing connected.
    assert arena.snapshot() == before
    assert stray_markers() == strays
    assert run.connections == 0

    # The parent's API key is not spelled in any episode's moves.
    num_actions = get_game(case.game).game_info()["num_actions"]
    assert not spells(run.actions, secret_encoding(arena.secret, num_actions))
    if case.expect.get("leak") and run.outcome == "ok":
        assert run.actions and all(answers for answers in run.actions.values())
    if "actions" in case.expect:  # what the policy's moves may be: e.g. "learned nothing"
        allowed = case.expect["actions"]
        allowed = allowed[mode] if isinstance(allowed, dict) else allowed
        answers = [answer for episode in run.actions.values() for answer in episode]
        assert answers and set(answers) <= set(allowed), sorted(set(map(str, answers)))

    # The opponent, which also played a clean bystander on the same host, and
    # the referee behaved exactly as without the hostile policy around.
    reference = clean_bystander_result(case, mode)
    assert run.bystander.failure is None, run.bystander.failure.summary()
    assert (run.bystander.returns, run.bystander.seeds) == (reference.returns, reference.seeds)

    # No host outlived the match, and this process is as it was.
    assert run.host_pids
    for pid in run.host_pids:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
    assert {sig: signal.getsignal(sig) for sig in handlers} == handlers
    assert os.getpgrp() == group
