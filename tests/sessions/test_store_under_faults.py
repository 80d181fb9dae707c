"""The session store under faults: full disk, read-only or missing directories,
and `csro run` killed (SIGKILL) or stopped (SIGTERM) at many points.

After every fault the user gets one clear line, nothing already recorded is
lost, and `--resume` finishes the session with exactly the population an
uninterrupted run has.
"""

from __future__ import annotations

import errno
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from csro_tui.cli import main
from csro_tui.config import RunConfig
from csro_tui.engine import Engine
from tests.fakes import ToyEvaluator, ToySpec, best_member_solve, climbing_oracle
from csro_tui.engine.setup import resume_engine
from csro_tui.errors import SessionError
from csro_tui.reviewers import AutoReviewer
from csro_tui.sessions.state import fold
from csro_tui.sessions.store import EVENTS_FILE, TORN_SUFFIX, SessionStore, SessionWriter, read_log

# -- a full disk (simulated), on the toy game: every event of a run is a failure point ----------

TOY_ITERATIONS = 3


def toy_engine(writer: SessionWriter | None, **kwargs) -> Engine:
    return Engine(
        config=RunConfig(game="toy", oracle="scripted", iterations=TOY_ITERATIONS),
        spec=ToySpec(),
        oracle=climbing_oracle(),
        reviewer=AutoReviewer(),
        evaluator=ToyEvaluator(),
        meta_solve=best_member_solve,
        writer=writer,
        versions={"csro_tui": "test"},
        **kwargs,
    )


def toy_resume(store: SessionStore, session: str) -> Engine:
    engine, _warnings = resume_engine(session, store=store, spec=ToySpec(), oracle=climbing_oracle(),
                                      evaluator=ToyEvaluator(), meta_solve=best_member_solve)
    return engine


class FullDisk:
    """Stands in for the writer's events file: the write of the `at`-th line
    fails with ENOSPC.  "full": it and every later write fail, writing
    nothing; "torn": the same, but each failing write first writes half its
    bytes (as a real full disk can); "transient": only that one write fails,
    after writing half its bytes, and the disk has room again afterwards."""

    def __init__(self, real, at: int, mode: str) -> None:
        self.real = real
        self.at = at
        self.mode = mode
        self.lines = 0
        self.failed = False

    def write(self, data) -> int:
        data = bytes(data)
        self.lines += data.count(b"\n")
        failing = self.lines >= self.at and not (self.mode == "transient" and self.failed)
        if not failing:
            return self.real.write(data)
        self.failed = True
        if self.mode != "full" and len(data) > 1:
            self.real.write(data[: len(data) // 2])
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    def __getattr__(self, name):
        return getattr(self.real, name)


@pytest.fixture(scope="module")
def clean_toy_run(tmp_path_factory):
    """The events and population of the same run with nothing going wrong."""
    store = SessionStore(tmp_path_factory.mktemp("clean"), fsync=False)
    engine = toy_engine(store.create("clean"))
    engine.run()
    engine.writer.close()
    state = fold(store.read("clean").events)
    return len(state.events), [(m.id, m.name, m.source) for m in state.population]


def test_a_full_disk_at_every_event_loses_nothing_and_resume_finishes(tmp_path, clean_toy_run):
    total, population = clean_toy_run
    assert total > 20
    for at in range(1, total + 1):
        for mode in ("full", "torn", "transient"):
            store = SessionStore(tmp_path / f"{at}-{mode}", fsync=False)
            writer = store.create("s")
            writer._file = FullDisk(writer._file, at, mode)  # noqa: SLF001 - the fault goes under the writer
            engine = toy_engine(writer)
            if at < total:
                with pytest.raises(SessionError) as raised:
                    engine.run()
                message = str(raised.value)
                assert "No space left on device" in message and "\n" not in message
                assert message.startswith(str(store.root / "s" / EVENTS_FILE)), message
            else:  # only session_closed fails: closing is best effort, the run itself is complete
                assert engine.run().reason == "completed"
            writer.close()
            path = store.root / "s" / EVENTS_FILE
            if at == 1:  # nothing recorded (no start, so no close either): no session to resume
                assert path.read_bytes() == b""
                continue
            log = read_log(path)  # readable, and no half line left behind
            assert log.torn_offset is None and not log.missing_newline, (at, mode)
            assert log.events == engine.state.events  # the engine kept exactly what was written
            seqs = [e.seq for e in log.events]
            if mode == "transient" and at < total:  # the disk had room again to record the close
                assert seqs == list(range(1, at + 1)) and log.events[-1].TYPE == "session_closed"
                assert log.events[-1].reason == "error" and "No space left" in log.events[-1].message
            else:
                assert seqs == list(range(1, at))
            engine = toy_resume(store, "s")
            engine.run()
            engine.writer.close()
            state = fold(store.read("s").events)
            assert state.events[: len(log.events)] == log.events, (at, mode)  # every recorded event kept
            assert state.closed.reason == "completed" and state.completed_iterations == TOY_ITERATIONS
            assert [(m.id, m.name, m.source) for m in state.population] == population, (at, mode)


def test_a_policy_file_that_cannot_be_written_is_one_line_and_the_policy_joins_on_resume(tmp_path, monkeypatch):
    store = SessionStore(tmp_path, fsync=False)
    real_replace = os.replace

    def full_disk_for_p2(source, target, *args, **kwargs):
        if Path(target).name == "p2.py":
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real_replace(source, target, *args, **kwargs)

    monkeypatch.setattr(os, "replace", full_disk_for_p2)
    engine = toy_engine(store.create("s"))
    with pytest.raises(SessionError, match=r"p2\.py: cannot write the policy file \(No space left on device\)$"):
        engine.run()
    engine.writer.close()
    monkeypatch.setattr(os, "replace", real_replace)
    before = fold(store.read("s").events)
    assert [m.id for m in before.population] == ["p0", "p1"] and before.accepted_pending() is not None
    assert sorted(p.name for p in (tmp_path / "s" / "policies").iterdir()) == ["p0.py", "p1.py"]  # no temp file

    engine = toy_resume(store, "s")
    engine.run()
    engine.writer.close()
    after = fold(store.read("s").events)
    assert after.events[: len(before.events)] == before.events
    assert [m.id for m in after.population] == ["p0", "p1", "p2", "p3"]
    for member in after.population:
        assert (tmp_path / "s" / "policies" / f"{member.id}.py").read_text() == member.source


# -- read-only and missing directories ------------------------------------------------------


@pytest.fixture
def immutable(tmp_path):
    """Make paths immutable (chattr +i: even root cannot write there); undone afterwards."""
    made: list[Path] = []

    def make(*paths: Path) -> None:
        for path in paths:
            result = subprocess.run(["chattr", "+i", str(path)], capture_output=True)
            if result.returncode != 0:
                pytest.skip(f"chattr +i does not work here: {result.stderr.decode().strip()}")
            made.append(path)

    if shutil.which("chattr") is None:
        pytest.skip("chattr is not installed")
    yield make
    for path in reversed(made):
        subprocess.run(["chattr", "-i", str(path)], check=False)


KUHN_RUN = ["run", "--game", "kuhn_poker", "--oracle", "best-response", "--iterations", "1"]


def test_a_read_only_sessions_directory_is_one_line(tmp_path, immutable, capsys):
    root = tmp_path / "sessions"
    root.mkdir()
    immutable(root)
    assert main([*KUHN_RUN, "--session-dir", str(root)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert "cannot create the session directory (Operation not permitted)" in err
    assert list(root.iterdir()) == []


def test_resuming_a_session_that_became_read_only_is_one_line_and_changes_nothing(tmp_path, immutable, capsys):
    root = tmp_path / "sessions"
    assert main([*KUHN_RUN, "--session-dir", str(root)]) == 0
    (session,) = [p for p in root.iterdir()]
    log = session / EVENTS_FILE
    before = log.read_bytes()
    immutable(log, session / "policies", session)
    capsys.readouterr()
    assert main(["run", "--resume", session.name, "--iterations", "2", "--session-dir", str(root)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert f"{log}: cannot open the session log for writing (Operation not permitted)" in err
    assert log.read_bytes() == before


def test_a_missing_sessions_directory_is_created(tmp_path):
    root = tmp_path / "not" / "there" / "yet"
    assert main([*KUHN_RUN, "--session-dir", str(root)]) == 0
    (session,) = [p for p in root.iterdir()]
    assert fold(read_log(session / EVENTS_FILE).events).closed.reason == "completed"


def test_a_sessions_directory_under_a_file_is_one_line(tmp_path, capsys):
    (tmp_path / "a-file").write_text("not a directory")
    assert main([*KUHN_RUN, "--session-dir", str(tmp_path / "a-file" / "sessions")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "cannot create the session directory (Not a directory)" in err


# -- csro run killed (SIGKILL) or stopped (SIGTERM) at many points, then resumed ----------------

CHAIN_ITERATIONS = 6  # Kuhn poker, exact best response: about 70 events
CHAIN_RUN = ["run", "--game", "kuhn_poker", "--oracle", "best-response", "--iterations", str(CHAIN_ITERATIONS)]
KILL, TERM = signal.SIGKILL, signal.SIGTERM
# Per chain: (signal, kill once the log has this many lines); each kill ends one
# `csro run` process and the next link resumes the session.  22 points in all,
# in two chains (each process costs a second or so to start).
CHAINS = {
    "sigkill": [(KILL, k) for k in (2, 7, 12, 17, 23, 29, 35, 42, 49, 55, 62)],
    "sigterm-and-sigkill": [(sig, k) for sig, k in zip([TERM, KILL] * 6, (4, 9, 14, 20, 26, 32, 39, 45, 52, 59, 65))],
}


@pytest.fixture(scope="module")
def clean_kuhn_population(tmp_path_factory) -> list[tuple[str, str, str]]:
    root = tmp_path_factory.mktemp("clean-kuhn")
    assert main([*CHAIN_RUN, "--session-dir", str(root)]) == 0
    (session,) = list(root.iterdir())
    state = fold(read_log(session / EVENTS_FILE).events)
    assert state.completed_iterations == CHAIN_ITERATIONS
    return [(m.id, m.name, m.source) for m in state.population]


def csro(*args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "csro_tui.cli", *args], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, start_new_session=True)


def line_count(root: Path) -> int:
    logs = list(root.glob(f"*/{EVENTS_FILE}"))
    return logs[0].read_bytes().count(b"\n") if logs else 0


@pytest.mark.parametrize("chain", list(CHAINS))
def test_runs_killed_at_many_points_resume_without_losing_an_accepted_policy(tmp_path, chain, clean_kuhn_population):
    root = tmp_path / "sessions"
    session = None
    recorded: list = []  # the events read after each kill
    accepted: list[list[tuple[str, str]]] = []  # the population recorded at each kill
    delivered = 0
    for sig, lines in CHAINS[chain] + [(None, None)]:
        args = ["run", "--resume", session] if session else CHAIN_RUN
        process = csro(*args, "--session-dir", str(root))
        try:
            if sig is not None:
                deadline = time.monotonic() + 120
                while line_count(root) < lines and process.poll() is None and time.monotonic() < deadline:
                    time.sleep(0.005)
                assert process.poll() is None, f"the run ended before line {lines}: {process.stderr.read().decode()}"
                if sig == KILL:
                    os.killpg(process.pid, KILL)
                else:
                    process.send_signal(TERM)  # what a service manager or `kill` sends
                delivered += 1
            code = process.wait(timeout=120)
        finally:
            if process.poll() is None:
                os.killpg(process.pid, KILL)
                process.wait()
        err = process.stderr.read().decode()
        if sig is None:
            assert code == 0, err
        elif sig == TERM:
            assert code in (130, -TERM), (code, err)  # stopped after its step, or before the handler was set
            assert "Traceback" not in err
        (directory,) = list(root.iterdir())
        session = directory.name
        log = read_log(directory / EVENTS_FILE)  # at most a torn last line, never a corrupt one
        for earlier in recorded:  # nothing recorded before a kill was lost or rewritten since
            assert log.events[: len(earlier)] == earlier
        recorded.append(log.events)
        state = fold(log.events)
        accepted.append([(m.id, m.source) for m in state.population])
        if sig == TERM and code == 130:
            assert state.closed is not None and state.closed.reason == "stopped"

    assert delivered == len(CHAINS[chain])
    final = fold(read_log(root / session / EVENTS_FILE).events)
    assert final.closed.reason == "completed" and final.completed_iterations == CHAIN_ITERATIONS
    assert final.missing_payoffs() == [] and final.accepted_pending() is None
    population = [(m.id, m.source) for m in final.population]
    for before in accepted:  # every policy accepted before a kill is still there, in its place
        assert population[: len(before)] == before
    assert [(m.id, m.name, m.source) for m in final.population] == clean_kuhn_population
    for member in final.population:
        assert (root / session / "policies" / f"{member.id}.py").read_text() == member.source
    torn = root / session / (EVENTS_FILE + TORN_SUFFIX)
    assert not torn.exists() or all(line for line in torn.read_bytes().splitlines())
