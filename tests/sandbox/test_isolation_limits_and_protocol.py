"""The policy sandbox: isolation, limits, failure reports and the protocol.

Tests that depend on isolation run in both modes (`sandbox_mode` fixture);
bubblewrap mode is skipped only where bwrap does not work.  Several fixture
policies in tests/sandbox_policies/ would be rejected by static validation:
they are handed to the host directly to test the runtime guard.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from csro_tui.errors import ConfigError
from csro_tui.sandbox.failures import FailureCategory, PolicyFailure
from csro_tui.sandbox.sandbox import (
    PolicyHost,
    SandboxLimits,
    bubblewrap_problem,
    describe_isolation,
    isolation_mode,
)

FIXTURES = Path(__file__).parents[1] / "sandbox_policies"
# Generous deadlines: a working policy never waits for them, and a loaded
# test machine must not turn a slow start into a failure.  SHORT is only for
# tests that wait for a deadline on purpose.
LIMITS = SandboxLimits(init_timeout=30.0, move_timeout=10.0, batch_timeout=10.0, memory_mb=512)
SHORT = SandboxLimits(init_timeout=30.0, move_timeout=0.4, batch_timeout=0.4, memory_mb=512)
GAME = {"name": "test", "num_players": 2, "num_actions": 3, "action_names": ["a", "b", "c"], "params": {}}
LEGAL = [0, 1, 2]
SECRET_NAME = "CSRO_FAKE_SECRET"


@pytest.fixture
def rlimits_mode(monkeypatch):
    monkeypatch.setenv("CSRO_SANDBOX", "rlimits")


def source_of(name: str) -> str:
    return (FIXTURES / name).read_text()


def make_host(policy: str, limits: SandboxLimits = LIMITS, *, name: str | None = None) -> PolicyHost:
    """A host for a fixture file name or inline source."""
    source = source_of(policy) if policy.endswith(".py") else policy
    return PolicyHost(source, GAME, name=name or policy[:20], limits=limits)


def act_once(policy: str, obs: dict, limits: SandboxLimits = LIMITS, seed: int = 0):
    """Start a host, play one move of one episode, close; return the answer."""
    with make_host(policy, limits) as host:
        host.new_episodes([(1, 0, seed)])
        return host.act([(1, obs)])[0]


def failure_of(policy: str, obs: dict, limits: SandboxLimits = LIMITS) -> PolicyFailure:
    with pytest.raises(PolicyFailure) as caught:
        act_once(policy, obs, limits)
    return caught.value


# -- working policies --------------------------------------------------------------


def test_seeded_policy_is_reproducible_and_legal(sandbox_mode):
    def play(seed: int) -> list[int]:
        with make_host("random_policy.py") as host:
            host.new_episodes([(7, 0, seed)])
            return [host.act([(7, {"legal_actions": LEGAL})])[0] for _ in range(30)]

    first, again, other = play(11), play(11), play(12)
    assert first == again
    assert first != other  # equal by chance with probability 3**-30
    assert set(first) <= set(LEGAL)


def test_batch_of_many_episodes_in_one_round_trip(sandbox_mode):
    with make_host("counter.py") as host:
        host.new_episodes([(episode, episode % 2, episode) for episode in range(40)])
        legal = list(range(200))
        answers = host.act([(episode, {"legal_actions": legal}) for episode in range(40)])
        # A fresh module per episode: each episode's counter starts at 0.
        assert answers == [1] * 40
        host.end_episodes(list(range(0, 40, 2)) + [999])  # unknown ids are ignored
        answers = host.act([(episode, {"legal_actions": legal}) for episode in range(1, 40, 2)])
        assert answers == [2] * 20
        host.new_episodes([(100, 0, 1)])  # a new episode learns nothing from the ended ones
        assert host.act([(100, {"legal_actions": legal})]) == [1]
        with pytest.raises(ValueError, match="not running"):
            host.act([(0, {"legal_actions": legal})])
        assert host.failure is None


def test_numpy_policy(sandbox_mode):
    with make_host("numpy_policy.py") as host:
        host.new_episodes([(1, 0, 3)])
        distribution = host.act([(1, {"legal_actions": LEGAL})])[0]
        assert set(distribution) == set(LEGAL)
        assert all(type(action) is int for action in distribution)
        assert abs(sum(distribution.values()) - 1.0) < 1e-12
        action = host.act([(1, {"legal_actions": LEGAL, "as_int": True})])[0]
        assert type(action) is int and action in LEGAL


def test_library_idioms_work_under_the_guard(sandbox_mode):
    with make_host("idioms.py") as host:
        host.new_episodes([(1, 0, 0), (2, 1, 0)])
        for _ in range(3):
            answers = host.act([(1, {"legal_actions": LEGAL}), (2, {"legal_actions": [1, 2]})])
            assert [set(a) for a in answers] == [set(LEGAL), {1, 2}]


def test_game_info_reaches_the_policy_with_player_and_seed(rlimits_mode):
    source = """
class Policy:
    def __init__(self, player, game):
        self.code = 100 * player + game["seed"] + (1000 if game["name"] == "test" else 0)
        game["params"]["mutated"] = True  # must not leak into other episodes
    def act(self, obs):
        return self.code
"""
    with make_host(source) as host:
        host.new_episodes([(1, 0, 5), (2, 1, 7)])
        legal = list(range(2000))
        assert host.act([(1, {"legal_actions": legal}), (2, {"legal_actions": legal})]) == [1005, 1107]


def test_two_hosts_share_no_state(sandbox_mode):
    with make_host("counter.py") as first, make_host("counter.py") as second:
        first.new_episodes([(1, 0, 0)])
        second.new_episodes([(1, 0, 0)])
        legal = list(range(10))
        assert [first.act([(1, {"legal_actions": legal})])[0] for _ in range(3)] == [1, 2, 3]
        assert second.act([(1, {"legal_actions": legal})]) == [1]


def test_print_flood_does_not_break_the_channel(sandbox_mode):
    with make_host("print_flood.py") as host:
        host.new_episodes([(1, 0, 0)])
        for _ in range(3):
            assert host.act([(1, {"legal_actions": LEGAL})]) == [0]
        assert host.failure is None


def test_failure_report_includes_tail_of_printed_output(rlimits_mode):
    source = """
class Policy:
    def __init__(self, player, game):
        pass
    def act(self, obs):
        for i in range(10000):
            print("thinking", i)
        raise ValueError("gave up")
"""
    failure = failure_of(source, {"legal_actions": LEGAL})
    assert failure.category is FailureCategory.CRASH
    assert "ValueError: gave up" in failure.message
    assert "thinking 9999" in failure.traceback
    assert "thinking 0\n" not in failure.traceback  # only a bounded tail is kept


# -- answers -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "kind, category, fragment",
    [
        ("illegal", FailureCategory.ILLEGAL_ACTION, "action 99"),
        ("illegal_dist", FailureCategory.ILLEGAL_ACTION, "action 99"),
        ("nan", FailureCategory.MALFORMED, "nan"),
        ("negative", FailureCategory.MALFORMED, "negative"),
        ("bad_sum", FailureCategory.MALFORMED, "sum to 0.9"),
        ("string", FailureCategory.MALFORMED, "str"),
        ("float", FailureCategory.MALFORMED, "float"),
        ("bool", FailureCategory.MALFORMED, "bool"),
        ("none", FailureCategory.MALFORMED, "NoneType"),
        ("string_key", FailureCategory.MALFORMED, "key of type str"),
        ("empty_dist", FailureCategory.MALFORMED, "empty"),
    ],
)
def test_bad_answers(rlimits_mode, kind, category, fragment):
    failure = failure_of("answers.py", {"legal_actions": LEGAL, "kind": kind})
    assert failure.category is category
    assert fragment in failure.summary()
    assert failure.policy == "answers.py"


def test_good_answers_are_checked_and_normalised(rlimits_mode):
    with make_host("answers.py") as host:
        host.new_episodes([(1, 0, 0)])
        assert host.act([(1, {"legal_actions": LEGAL, "kind": "ok"})]) == [2]
        unnormalised = host.act([(1, {"legal_actions": LEGAL, "kind": "unnormalised"})])[0]
        assert set(unnormalised) == {0, 1}
        assert sum(unnormalised.values()) == pytest.approx(1.0, abs=1e-15)
        # zero weight on an illegal action is dropped, not an error
        assert host.act([(1, {"legal_actions": LEGAL, "kind": "zero_on_illegal"})]) == [{0: 0.25, 1: 0.75}]


# -- failures ----------------------------------------------------------------------


def test_exception_is_a_crash_with_the_policy_line(sandbox_mode):
    failure = failure_of("crash.py", {"legal_actions": LEGAL})
    assert failure.category is FailureCategory.CRASH
    assert "ZeroDivisionError" in failure.message
    assert "line 11" in failure.message
    assert 'File "policy.py", line 11, in act' in failure.traceback
    assert "return self.count // divisor" in failure.traceback
    assert "host_main" not in failure.traceback  # host frames are trimmed


def test_infinite_loop_in_act_times_out(sandbox_mode):
    failure = failure_of("loop_act.py", {"legal_actions": LEGAL}, SHORT)
    assert failure.category is FailureCategory.TIMEOUT


def test_infinite_loop_in_init_times_out(sandbox_mode):
    with make_host("loop_init.py", SHORT) as host:
        with pytest.raises(PolicyFailure) as caught:
            host.new_episodes([(1, 0, 0)])
    assert caught.value.category is FailureCategory.TIMEOUT
    assert "Policy.__init__" in caught.value.message and "ran past its limit" in caught.value.message


def test_cpu_limit_is_a_timeout(sandbox_mode):
    # budget_reserve 60: on a loaded machine 1 s of CPU can take longer than the default 2 s reserve
    limits = SandboxLimits(init_timeout=30.0, move_timeout=60.0, budget_reserve=60.0, cpu_seconds=1)
    failure = failure_of("loop_act.py", {"legal_actions": LEGAL}, limits)
    assert failure.category is FailureCategory.TIMEOUT
    assert "CPU" in failure.message


def test_memory_bomb(sandbox_mode):
    limits = SandboxLimits(init_timeout=30.0, move_timeout=10.0, memory_mb=256)
    failure = failure_of("memory_bomb.py", {"legal_actions": LEGAL}, limits)
    assert failure.category is FailureCategory.MEMORY
    assert "256 MB" in failure.message


def test_numpy_memory_error_is_memory(rlimits_mode):
    failure = failure_of("memory_bomb.py", {"legal_actions": LEGAL, "numpy": True})
    assert failure.category is FailureCategory.MEMORY


def test_error_at_module_load_is_reported_by_start(sandbox_mode):
    with make_host("import math\nx = math.sqrt(-1)\n") as host:
        with pytest.raises(PolicyFailure) as caught:
            host.start()
    assert caught.value.category is FailureCategory.CRASH
    assert "ValueError" in caught.value.message and "line 2" in caught.value.message


def test_missing_policy_class_is_a_crash(rlimits_mode):
    with make_host("class Agent:\n    pass\n") as host, pytest.raises(PolicyFailure, match="class Policy"):
        host.start()


def test_failure_is_sticky_and_the_host_is_gone(rlimits_mode):
    host = make_host("crash.py")
    host.new_episodes([(1, 0, 0)])
    with pytest.raises(PolicyFailure) as first:
        host.act([(1, {"legal_actions": LEGAL})])
    pid = host.pid
    with pytest.raises(PolicyFailure) as again:
        host.act([(1, {"legal_actions": LEGAL})])
    assert again.value is first.value is host.failure
    with pytest.raises(PolicyFailure):
        host.new_episodes([(2, 0, 0)])
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)  # killed and reaped
    host.close()
    host.close()  # idempotent


def test_close_kills_a_busy_host_and_removes_its_temp_dir(sandbox_mode):
    host = make_host("loop_act.py", SandboxLimits(move_timeout=60.0, init_timeout=30.0))
    host.new_episodes([(1, 0, 0)])
    temp_dir = host._temp_dir
    assert temp_dir is not None and os.path.isdir(temp_dir)
    pid = host.pid
    host.close()
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    assert not os.path.exists(temp_dir)
    with pytest.raises(RuntimeError, match="closed"):
        host.act([(1, {"legal_actions": LEGAL})])


@pytest.mark.parametrize(
    "forgery, fragment",
    [
        ("this is not json", "not JSON"),
        ('{"seq": 999, "ok": true, "answers": [0]}', "out of protocol"),
        ('{"seq": 3, "ok": true, "answers": [0, 1]}', "2 answers for 1 requests"),
    ],
)
def test_forged_replies_are_malformed(rlimits_mode, forgery, fragment):
    # seq 3: init is 1, new_episodes 2, so the first act is 3.
    failure = failure_of("forge_reply.py", {"legal_actions": LEGAL, "forgery": forgery})
    assert failure.category is FailureCategory.MALFORMED
    assert fragment in failure.message


def test_caller_mistakes_are_plain_errors(rlimits_mode):
    with make_host("random_policy.py") as host:
        with pytest.raises(ValueError, match="episode"):
            host.new_episodes([(1, 0)])
        host.new_episodes([(1, 0, 0)])
        with pytest.raises(ValueError, match="already running"):
            host.new_episodes([(1, 0, 0)])
        with pytest.raises(ValueError, match="legal_actions"):
            host.act([(1, {"history": []})])
        with pytest.raises(ValueError, match="cannot send"):
            host.act([(1, {"legal_actions": LEGAL, "bad": object()})])
        assert host.failure is None
        assert host.act([]) == []
    with pytest.raises(TypeError):
        PolicyHost(b"bytes", GAME)
    with pytest.raises(ValueError, match="JSON"):
        PolicyHost("x = 1", {"bad": object()})
    with pytest.raises(ValueError, match="move_timeout"):
        SandboxLimits(move_timeout=0)


# -- the runtime guard ----------------------------------------------------------------


@pytest.fixture
def sentinel_dir(tmp_path):
    """A world-writable directory with a world-writable file: only the guard
    (not file permissions) stands between the policy and it."""
    directory = tmp_path / "outside"
    directory.mkdir()
    sentinel = directory / "sentinel.txt"
    sentinel.write_text("original")
    os.chmod(sentinel, 0o666)
    os.chmod(directory, 0o777)
    os.chmod(tmp_path, 0o755)
    return directory


def snapshot(directory: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(directory.iterdir())}


ESCAPES = [
    ("dunder_import_system", "new_file"),
    ("os_system", "new_file"),
    ("os_system_caught", "new_file"),
    ("write_builtin_open", "sentinel"),
    ("write_os_open", "sentinel"),
    ("remove", "sentinel"),
    ("read_outside", "sentinel"),
    ("listdir", "dir"),
    ("parent_env", None),
    ("socket", None),
    ("import_os", None),
    ("kill_parent", None),
    ("fork", None),
    ("exec_builtin", None),
    ("frame", None),
    ("ctypes", None),
    ("library_frame", None),
    ("patched_builtins", "new_file"),
    ("signal", None),
]


@pytest.mark.parametrize("attempt, target", ESCAPES, ids=[attempt for attempt, _ in ESCAPES])
def test_runtime_escapes_are_forbidden(sandbox_mode, sentinel_dir, attempt, target):
    paths = {"new_file": sentinel_dir / "created.txt", "sentinel": sentinel_dir / "sentinel.txt", "dir": sentinel_dir}
    before = snapshot(sentinel_dir)
    obs = {"legal_actions": LEGAL, "attempt": attempt, "target": str(paths.get(target, ""))}
    failure = failure_of("escape.py", obs)
    assert failure.category is FailureCategory.FORBIDDEN, failure.summary()
    assert failure.message.startswith("blocked")
    assert snapshot(sentinel_dir) == before
    # ...and this process, which kill_parent aimed at, is still here.


def test_threads_cannot_start(sandbox_mode):
    # Blocked by the guard where Python audits it, else by RLIMIT_NPROC.
    failure = failure_of("escape.py", {"legal_actions": LEGAL, "attempt": "thread"})
    assert failure.category in (FailureCategory.FORBIDDEN, FailureCategory.CRASH)


def test_recursion_limit_is_capped(rlimits_mode):
    cap = LIMITS.recursion_limit
    assert act_once("environment.py", {"legal_actions": [0, 1], "question": "recursion", "cap": cap}) == 1


def test_secrets_in_the_parent_environment_are_invisible(sandbox_mode, monkeypatch):
    monkeypatch.setenv(SECRET_NAME, "hunter2")
    assert act_once("escape.py", {"legal_actions": LEGAL, "attempt": "env"}) == 0
    # LC_CTYPE: Python's own C-locale coercion; PWD: set by bwrap --chdir.
    allowed = ["PYTHONHASHSEED", "OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_CORETYPE",
               "OPENBLAS_L2_SIZE", "LC_CTYPE", "PWD"]
    assert act_once("environment.py", {"legal_actions": [0, 1], "question": "env_allowed", "allowed": allowed}) == 1


def test_hash_seed_is_fixed(sandbox_mode):
    legal = list(range(1000))
    answers = {act_once("environment.py", {"legal_actions": legal, "question": "hash"}) for _ in range(2)}
    assert len(answers) == 1


@pytest.mark.skipif(os.geteuid() != 0, reason="privileges are only dropped when running as root")
def test_root_is_dropped_to_a_uid_of_each_hosts_own(sandbox_mode):
    """Not nobody's, not the user's, not another host's (sandbox v3, issue 27)."""
    from csro_tui.sandbox.isolation import HOST_UID_BASE, host_uid

    with make_host("environment.py") as first, make_host("environment.py") as second:
        uids = []
        for host in (first, second):
            host.new_episodes([(1, 0, 0)])
            obs = {"legal_actions": [0, 1], "question": "uid_is", "uid": host_uid(host._process.pid)}
            assert host.act([(1, obs)]) == [1]
            uids.append(host_uid(host._process.pid))
    assert uids[0] != uids[1] and min(uids) >= HOST_UID_BASE


def test_bubblewrap_hides_the_project_and_home(monkeypatch):
    if bubblewrap_problem():
        pytest.skip(f"bubblewrap unavailable: {bubblewrap_problem()}")
    monkeypatch.setenv("CSRO_SANDBOX", "bubblewrap")
    project = str(Path(__file__).resolve().parents[2] / "csro_tui")
    shell_profile = Path.home() / ".bashrc"
    others = [str(shell_profile)] if shell_profile.exists() else []
    for path in (project, "/etc/passwd", *others):
        assert os.path.exists(path)  # visible here...
        obs = {"legal_actions": [0, 1], "question": "path_exists", "path": path}
        assert act_once("environment.py", obs) == 0, path  # ...but not in the sandbox


# -- history deltas ---------------------------------------------------------------------


def digest(value) -> int:
    """Same function as in history_digest.py."""
    h = 0
    for ch in repr(value):
        h = (h * 131 + ord(ch)) % 1000000007
    return h


def test_growing_lists_are_sent_as_suffixes():
    sent: dict = {}
    history = [1, 2, 3]
    first = PolicyHost._encode_observation(1, {"legal_actions": [0, 1], "history": history, "t": 3}, sent)
    assert first == [1, {"legal_actions": [0, 1], "t": 3}, {"history": [0, [1, 2, 3]]}]
    history.append(4)
    second = PolicyHost._encode_observation(1, {"legal_actions": [0, 1], "history": history}, sent)
    assert second[2] == {"history": [3, [4]]}
    third = PolicyHost._encode_observation(1, {"legal_actions": [0, 1], "history": history}, sent)
    assert third[2] == {"history": [4, []]}
    fresh_extension = PolicyHost._encode_observation(1, {"legal_actions": [0], "history": [1, 2, 3, 4, 5]}, sent)
    assert fresh_extension[2] == {"history": [4, [5]]}
    rewritten = PolicyHost._encode_observation(1, {"legal_actions": [0], "history": [9, 2, 3, 4, 5, 6]}, sent)
    assert rewritten[2] == {"history": [0, [9, 2, 3, 4, 5, 6]]}
    shrunk = PolicyHost._encode_observation(1, {"legal_actions": [0], "history": [9]}, sent)
    assert shrunk[2] == {"history": [0, [9]]}
    gone = PolicyHost._encode_observation(1, {"legal_actions": [0]}, sent)
    assert gone[2] == 0 and sent == {}


def test_per_move_message_size_does_not_grow_with_history():
    sent: dict = {}
    history: list = []
    sizes = []
    for move in range(2000):
        history.append([move % 3, (move * 7) % 3])
        encoded = PolicyHost._encode_observation(1, {"legal_actions": LEGAL, "history": history}, sent)
        sizes.append(len(repr(encoded)))
    assert max(sizes[100:]) <= sizes[100] + 10


def test_histories_reconstruct_exactly(sandbox_mode):
    """Growth, fresh lists that extend or not, shrinking, keys that come and go,
    nested items, two episodes, and a policy that mutates what it gets."""
    shared_a: list = []
    shared_b: list = [["start"]]
    steps = []
    for move in range(12):
        shared_a.append(move * 3 % 5)
        shared_b.append([move, {"bet": move % 2}])
        obs_a = {"history": shared_a, "board": [move] * (move % 3)}
        obs_b = {"history": shared_b, "cards": ("K", "Q")}
        if move == 5:
            obs_a["history"] = list(shared_a)  # fresh object, same content
        if move == 7:
            shared_a = [42]  # restart: not an extension
            obs_a["history"] = shared_a
        if move in (8, 9):
            del obs_b["history"]  # key vanishes, then comes back full
        steps.append((obs_a, obs_b))
    with make_host("history_digest.py") as host:
        host.new_episodes([(1, 0, 0), (2, 1, 0)])
        for obs_a, obs_b in steps:
            requests = []
            for episode, obs in ((1, obs_a), (2, obs_b)):
                expect = {key: digest(value) for key, value in obs.items() if isinstance(value, list)}
                requests.append((episode, {**obs, "legal_actions": [0, 1], "expect": expect}))
            assert host.act(requests) == [1, 1]


def test_unchanged_histories_stay_incremental_and_changed_ones_resync(rlimits_mode):
    history: list = []
    with make_host("random_policy.py") as reader, make_host("history_digest.py") as mutator:
        reader.new_episodes([(1, 0, 0)])
        mutator.new_episodes([(1, 0, 0)])
        for move in range(20):
            history.append([move, move % 3])
            reader.act([(1, {"legal_actions": LEGAL, "history": history})])
            expect = {"history": digest(history)}
            assert mutator.act([(1, {"legal_actions": [0, 1], "history": history, "expect": expect})]) == [1]
            # the reader never touched its list: the parent still only sends suffixes
            assert len(reader._episodes[1]["history"][1]) == move + 1
            # the mutator reversed its list: the child asked for a full resend
            assert "history" not in mutator._episodes[1]


# -- isolation mode ----------------------------------------------------------------------


def test_isolation_mode_follows_the_environment(monkeypatch):
    monkeypatch.setenv("CSRO_SANDBOX", "rlimits")
    assert isolation_mode() == "rlimits"
    assert "rlimits" in describe_isolation() and "\n" not in describe_isolation()
    monkeypatch.setenv("CSRO_SANDBOX", "chroot")
    with pytest.raises(ConfigError, match="CSRO_SANDBOX"):
        isolation_mode()
    monkeypatch.setenv("CSRO_SANDBOX", "bubblewrap")
    if bubblewrap_problem():
        with pytest.raises(ConfigError, match="bubblewrap"):
            isolation_mode()
    else:
        assert isolation_mode() == "bubblewrap"
        assert "bubblewrap" in describe_isolation()
    monkeypatch.delenv("CSRO_SANDBOX")
    assert isolation_mode() == ("rlimits" if bubblewrap_problem() else "bubblewrap")


def test_host_script_never_imports_the_application():
    for name in ("host_start.py", "host_main.py", "host_kernel.py", "host_channel.py", "host_guard.py"):
        text = (Path(__file__).parents[2] / "csro_tui" / "sandbox" / name).read_text()
        assert "import csro_tui" not in text and "from csro_tui" not in text, name


def test_bubblewrap_mounts_the_python_installation_over_its_fresh_tmp(monkeypatch):
    # A later bwrap mount hides an earlier one: an installation under /tmp
    # (a CI checkout) must be bound after the empty /tmp, or the host can't start.
    from csro_tui.sandbox import isolation

    monkeypatch.setattr(isolation, "_python_roots", lambda: ["/tmp/checkout/.venv", "/opt/python"])
    args = isolation._bubblewrap_command("/usr/bin/bwrap", "/tmp/host-work")
    tmpfs = args.index("--tmpfs")
    assert args[tmpfs + 1] == "/tmp"
    for root in ("/tmp/checkout/.venv", "/opt/python", "/tmp/host-work"):
        bind = next(i for i, arg in enumerate(args) if arg in ("--ro-bind", "--bind") and args[i + 1] == root)
        assert bind > tmpfs, root


@pytest.mark.skipif(not os.environ.get("CI"), reason="CI installs bubblewrap; elsewhere it may be missing")
def test_ci_exercises_the_bubblewrap_mode():
    from csro_tui.sandbox.sandbox import bubblewrap_problem

    assert bubblewrap_problem() is None


# -- sandbox v2: the kernel layers, per-call limits, secret seeds ------------------

KERNEL_PROBE = r'''
import json, os, signal, socket, sys
sys.path.insert(0, sys.argv[1])
import host_kernel
sentinel, listener_port, out_dir = sys.argv[2], int(sys.argv[3]), sys.argv[4]
result = {}
import ctypes
ctypes.CDLL(None).prctl(38, 1, 0, 0, 0)  # PR_SET_NO_NEW_PRIVS, as the host sets it
result["landlock"] = host_kernel.restrict_filesystem_and_network([sys.prefix, sys.base_prefix])
result["seccomp"] = host_kernel.install_syscall_filter((signal.SIGALRM,))

def attempt(name, action):
    try:
        action()
        result[name] = "allowed"
    except OSError as error:
        result[name] = "denied"

attempt("read_outside", lambda: open(sentinel).read())
attempt("write_outside", lambda: open(os.path.join(out_dir, "created.txt"), "w").write("x"))
attempt("read_python", lambda: os.listdir(sys.base_prefix))
def connect():
    with socket.create_connection(("127.0.0.1", listener_port), timeout=2):
        pass
attempt("connect", connect)
attempt("exec", lambda: os.execv("/bin/true", ["true"]))
attempt("fork", lambda: os.fork())
attempt("kill_parent", lambda: os.kill(os.getppid(), 0))
attempt("kill_self", lambda: os.kill(os.getpid(), 0))
attempt("new_alarm_handler", lambda: signal.signal(signal.SIGALRM, signal.SIG_IGN))
os.write(1, json.dumps(result).encode())
'''


def test_kernel_layers_hold_without_the_python_guard(tmp_path):
    """host_kernel.py alone, no guard: what a policy that defeated the guard
    (a CPython bug, a gadget) would still meet."""
    import socket
    import subprocess
    import sys

    from csro_tui.sandbox.sandbox import kernel_layers

    layers = kernel_layers()
    if not (layers["landlock"] >= 4 and layers["seccomp"]):
        pytest.skip(f"this kernel lacks Landlock ABI >= 4 or seccomp: {layers}")
    sentinel = tmp_path / "sentinel.txt"
    sentinel.write_text("secret")
    sentinel.chmod(0o644)
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    probe = tmp_path / "probe.py"
    probe.write_text(KERNEL_PROBE)
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        listener.settimeout(0.5)
        port = listener.getsockname()[1]
        completed = subprocess.run(
            [sys.executable, "-s", "-S", "-P", str(probe), str(Path(__file__).parents[2] / "csro_tui" / "sandbox"),
             str(sentinel), str(port), str(out_dir)],
            capture_output=True, timeout=60,
        )
        try:
            accepted = listener.accept()[0]
            accepted.close()
            connected = True
        except OSError:
            connected = False
    assert completed.returncode == 0, completed.stderr.decode()
    import json

    result = json.loads(completed.stdout)
    assert result["landlock"] == layers["landlock"] and result["seccomp"] > 20
    assert result["read_python"] == "allowed" and result["kill_self"] == "allowed"
    for name in ("read_outside", "write_outside", "connect", "exec", "fork", "kill_parent", "new_alarm_handler"):
        assert result[name] == "denied", (name, result)
    assert not connected and list(out_dir.iterdir()) == []


def test_hosts_confirm_the_kernel_layers_and_describe_names_them(sandbox_mode):
    from csro_tui.sandbox.sandbox import kernel_layers

    layers = kernel_layers()
    with make_host("counter.py") as host:
        host.start()
        assert bool(host.layers["landlock"]) == bool(layers["landlock"])
        assert bool(host.layers["seccomp"]) == bool(layers["seccomp"])
    text = describe_isolation()
    if layers["landlock"]:
        assert f"Landlock ABI {layers['landlock']}" in text
    if layers["seccomp"]:
        assert "seccomp" in text


def test_without_landlock_or_seccomp_policies_are_refused_unless_allowed(rlimits_mode, monkeypatch):
    from csro_tui.sandbox import isolation as sandbox

    monkeypatch.setattr(sandbox, "kernel_layers", lambda: {"landlock": 0, "seccomp": False})
    monkeypatch.delenv(sandbox.WEAK_SANDBOX_ENV_VAR, raising=False)
    with pytest.raises(ConfigError, match="neither Landlock nor seccomp"):
        make_host("counter.py").start()
    assert "policies refused" in describe_isolation()
    monkeypatch.setenv(sandbox.WEAK_SANDBOX_ENV_VAR, "1")
    assert "WARNING" in describe_isolation()
    with make_host("counter.py") as host:
        host.new_episodes([(1, 0, 1)])
        assert host.act([(1, {"legal_actions": LEGAL})]) == [1]


def test_each_call_has_its_own_limit_whatever_the_batch(sandbox_mode):
    """One looping episode in a batch of 50: the failure names the call and
    its own limit (0.4 s), not the batch's deadline (0.4 + 50 * 0.4 s)."""
    looping = (
        "class Policy:\n"
        "    def __init__(self, player, game):\n        self.seed = game['seed']\n"
        "    def act(self, obs):\n"
        "        while self.seed == 7:\n            pass\n"
        "        return obs['legal_actions'][0]\n"
    )
    with make_host(looping, SHORT) as host:
        host.new_episodes([(episode, 0, episode) for episode in range(50)])
        with pytest.raises(PolicyFailure) as caught:
            host.act([(episode, {"legal_actions": LEGAL}) for episode in range(50)])
    assert caught.value.category is FailureCategory.TIMEOUT
    assert caught.value.message.startswith("act (episode 7) ran past its limit of 0.4 s")


def test_a_policy_that_catches_its_timeout_still_fails(sandbox_mode):
    stubborn = (
        "class Policy:\n"
        "    def __init__(self, player, game):\n        pass\n"
        "    def act(self, obs):\n"
        "        while True:\n"
        "            try:\n                while True:\n                    pass\n"
        "            except BaseException:\n                pass\n"
    )
    # The parent's own deadline (5 s) is well past the host's (0.4 s + 0.2 s of grace).
    limits = SandboxLimits(init_timeout=30.0, move_timeout=0.4, batch_timeout=5.0, call_grace=0.2, memory_mb=512)
    with pytest.raises(PolicyFailure) as caught:
        with make_host(stubborn, limits) as host:
            host.new_episodes([(1, 0, 1)])
            host.act([(1, {"legal_actions": LEGAL})])
    assert caught.value.category is FailureCategory.TIMEOUT, caught.value.summary()
    assert caught.value.message == "act (episode 1) ran past its limit of 0.4 s (and kept running)"


def test_answers_of_policy_defined_types_are_never_asked_anything(sandbox_mode, sentinel_dir):
    """__index__ / __eq__ / __hash__ / __str__ of a class made with type()
    (which static validation never sees) would run in the host: they must not."""
    target = sentinel_dir / "created.txt"
    sneaky = (
        "import random\n"
        "def touch(*args):\n"
        f"    random._os.system('touch {target}')\n"
        "    return 1\n"
        "Sneaky = type('Sneaky', (int,), {'_' * 2 + 'index' + '_' * 2: touch, '_' * 2 + 'str' + '_' * 2: touch})\n"
        "Boom = type('Boom', (Exception,), {'_' * 2 + 'str' + '_' * 2: touch, '_' * 2 + 'repr' + '_' * 2: touch})\n"
        "class Policy:\n"
        "    def __init__(self, player, game):\n        pass\n"
        "    def act(self, obs):\n"
        "        if obs.get('raise'):\n            raise Boom(Sneaky(1))\n"
        "        return Sneaky(1)\n"
    )
    before = snapshot(sentinel_dir)
    answer = failure_of(sneaky, {"legal_actions": LEGAL})
    assert answer.category is FailureCategory.MALFORMED and "Sneaky" in answer.message
    raised = failure_of(sneaky, {"legal_actions": LEGAL, "raise": True})
    assert raised.category is FailureCategory.CRASH and raised.message.startswith("Boom in act")
    assert snapshot(sentinel_dir) == before and not target.exists()


def test_seeds_are_keyed_and_one_way():
    from csro_tui.evaluation.sampling import derive, episode_seeds, episode_streams, new_master_seed

    referee, seed_a, seed_b = episode_streams(12345)
    assert len({referee, seed_a, seed_b}) == 3
    assert episode_streams(12345) == (referee, seed_a, seed_b)  # replays exactly
    assert all(0 <= s < 2**63 for s in (referee, seed_a, seed_b))
    # The old public derivation (numpy SeedSequence of the episode seed) no longer applies.
    import numpy as np

    assert seed_a not in [int(s) for s in np.random.SeedSequence(12345).generate_state(3)]
    assert episode_seeds(1, 3) != episode_seeds(2, 3) and len(set(episode_seeds(1, 3))) == 3
    assert derive(1, "x") != derive(2, "x") and derive(1, "x") != derive(1, "y")
    masters = {new_master_seed() for _ in range(20)}
    assert len(masters) == 20 and all(0 <= m < 2**63 for m in masters)


def test_a_failed_policy_plays_no_more_matches_in_the_evaluation(rlimits_mode, monkeypatch):
    from csro_tui.evaluation import runner
    from csro_tui.evaluation.participants import CodePolicy, resolve_participant
    from csro_tui.games.registry import get_game

    spec = get_game("rrps(num_repetitions=5)")
    crash = CodePolicy("crash", "class Policy:\n    def __init__(self, p, g):\n        pass\n"
                                "    def act(self, obs):\n        return 1 // 0\n")
    opponents = [resolve_participant(spec, f"seed:{name}") for name in list(spec.seed_policies())[:3]]
    jobs = [runner.MatchJob(crash, opponent, 2, 1) for opponent in opponents]
    # One lockstep per job, as when an evaluation is split into chunks.
    monkeypatch.setattr(runner, "plan_chunks", lambda jobs, workers: [[i] for i in range(len(jobs))])
    played = []
    real_play = runner.play_matches

    def counting_play(spec, jobs, **kwargs):
        played.extend(jobs)
        return real_play(spec, jobs, **kwargs)

    monkeypatch.setattr(runner, "play_matches", counting_play)
    results = runner.evaluate_matchups(spec, jobs, workers=1, limits=LIMITS)
    assert len(played) == 1
    assert all(r.failure is not None and "ZeroDivisionError" in r.failure.message for r in results)
    assert [r.episodes for r in results[1:]] == [0, 0]


# -- the clock: limits kept from outside the host (clock.py) -----------------------


def _host_processes(pid: int) -> list[int]:
    """`pid` and every process under it (bwrap runs the host a few levels down)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as stat:
                    parent = int(stat.read().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            children.setdefault(parent, []).append(int(entry))
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        found.append(current)
        todo.extend(children.get(current, []))
    return found


def test_a_host_that_stops_answering_signals_is_killed_by_the_parent(sandbox_mode):
    """The host's own timer cannot help a stopped process (no handler runs, no
    CPU is used): the parent's watchdog ends it after move_timeout + call_grace."""
    import signal
    import time

    limits = SandboxLimits(init_timeout=30.0, move_timeout=0.3, call_grace=0.3, batch_timeout=0.3, memory_mb=512)
    with make_host("loop_act.py", limits) as host:
        host.new_episodes([(1, 0, 0)])
        host.send_act([(1, {"legal_actions": LEGAL})])
        for pid in _host_processes(host.pid):
            os.kill(pid, signal.SIGSTOP)
        started = time.monotonic()
        with pytest.raises(PolicyFailure) as caught:
            host.receive_act()
        elapsed = time.monotonic() - started
    assert caught.value.category is FailureCategory.TIMEOUT
    assert "act (episode 1) ran past its limit of 0.3 s (stopped from outside the host" in caught.value.message
    assert elapsed < 0.3 + 0.3 + 1.0  # limit + grace, and the watchdog's tick, on a loaded machine


SLOW_ACT = """
class Policy:
    def __init__(self, player, game):
        pass

    def act(self, obs):
        total = 0
        for step in range(300_000):  # ~10-20 ms
            total += step
        return obs["legal_actions"][total % len(obs["legal_actions"])]
"""


def test_a_policy_slower_than_its_budget_runs_out_across_episodes(rlimits_mode):
    """Each act is well within its own limit (1 s), but many episodes at
    ~15 ms a decision overdraw a budget of 1 ms per decision plus a 0.3 s
    reserve, pooled over the episodes the host plays at once."""
    import time

    limits = SandboxLimits(init_timeout=30.0, move_timeout=1.0, move_budget=0.001, budget_reserve=0.3, memory_mb=512)
    episodes = list(range(40))
    with make_host(SLOW_ACT, limits) as host:
        host.new_episodes([(e, 0, e) for e in episodes])
        started = time.monotonic()
        with pytest.raises(PolicyFailure) as caught:
            for _ in range(20):
                host.act([(e, {"legal_actions": LEGAL}) for e in episodes])
        elapsed = time.monotonic() - started
    assert caught.value.category is FailureCategory.TIMEOUT
    assert "ran out of the policy's time budget" in caught.value.message
    assert "move_budget 1 ms per decision plus budget_reserve 0.3 s" in caught.value.message
    assert elapsed < 3.0  # 40 x 20 x 15 ms = 12 s if nothing stopped it


def test_the_budget_passes_a_fast_policy_and_its_timing_is_measured(rlimits_mode):
    with make_host("random_policy.py", LIMITS) as host:
        host.new_episodes([(e, 0, e) for e in range(10)])
        for _ in range(50):
            host.act([(e, {"legal_actions": LEGAL}) for e in range(10)])
        timing = host.timing()
    assert timing.act_calls == 500 and timing.init_calls == 10
    assert 0 < timing.act_mean <= timing.act_max < 0.5
    assert "act: " in timing.describe() and "per call on average" in timing.describe()
    assert host.timing().act_calls == 500  # still readable after close


def test_module_load_and_init_share_a_budget(rlimits_mode):
    """Every episode runs the module's code afresh: one that sleeps there
    (within init_timeout each time) runs out of the set-up budget."""
    import time

    source = "import typing\ntyping.sys.modules['time'].sleep(0.4)\n" + SLOW_ACT
    limits = SandboxLimits(init_timeout=1.0, move_timeout=1.0, init_budget=0.05, memory_mb=512)
    started = time.monotonic()
    with make_host(source, limits) as host:
        with pytest.raises(PolicyFailure) as caught:
            host.new_episodes([(e, 0, e) for e in range(20)])
    elapsed = time.monotonic() - started
    assert caught.value.category is FailureCategory.TIMEOUT
    assert "ran out of the time budget for loading the module and Policy.__init__" in caught.value.message
    assert elapsed < 4.0  # 21 loads x 0.4 s = 8.4 s if nothing stopped it


def test_the_host_counts_what_the_policy_printed_and_keeps_its_first_characters(rlimits_mode):
    """Issue 29 item 11: printed output goes nowhere, but the host counts its
    bytes (UTF-8) and keeps the first PRINTED_HEAD_CHARS characters, reported
    with the replies; a silent policy's replies carry nothing."""
    from csro_tui.sandbox.sandbox import PRINTED_HEAD_CHARS

    printing = ("class Policy:\n    def __init__(self, player, game):\n        print('é' * 10)\n\n"
                "    def act(self, obs):\n        print('z' * 1000)\n        return obs['legal_actions'][0]\n")
    with make_host(printing) as host:
        host.new_episodes([(e, 0, e) for e in range(3)])
        assert host.printed_bytes == 3 * 21  # 'é' is two bytes, print adds the newline
        for _ in range(5):
            host.act([(e, {"legal_actions": LEGAL}) for e in range(3)])
    timing = host.timing()
    assert timing.printed_bytes == 3 * 21 + 15 * 1001
    assert timing.printed_head.startswith("é" * 10 + "\n") and len(timing.printed_head) == PRINTED_HEAD_CHARS
    with make_host("random_policy.py") as host:
        host.new_episodes([(0, 0, 0)])
        host.act([(0, {"legal_actions": LEGAL})])
    assert host.timing().printed_bytes == 0 and host.timing().printed_head == ""


@pytest.mark.parametrize("report", [[10, "x" * 601], [-1, ""], ["10", ""], [10], [True, ""], [10, None]])
def test_a_report_of_printed_output_out_of_protocol_fails_the_host(report):
    host = PolicyHost("class Policy: pass\n", {})
    with pytest.raises(PolicyFailure) as caught:
        host._note_printed(report)
    assert caught.value.category is FailureCategory.MALFORMED


def test_a_report_of_printed_output_may_not_go_down():
    host = PolicyHost("class Policy: pass\n", {})
    host._note_printed([100, "a"])
    with pytest.raises(PolicyFailure):
        host._note_printed([99, "a"])
