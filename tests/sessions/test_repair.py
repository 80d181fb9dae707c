"""`csro repair`: a session log with a corrupt line in the middle becomes readable again (issue 29).

On a real session (`csro run` on Kuhn poker) with one line corrupted in the
middle: the error points to the repair; the repair backs the log up beside
it, keeps the events before the bad line, prints what it dropped and exits
0; replay and `--resume` then work.
"""

from __future__ import annotations

import json

import pytest

from csro_tui.cli import main
from csro_tui.sessions.state import fold
from csro_tui.sessions.store import EVENTS_FILE, SessionStore

ITERATIONS = 3


@pytest.fixture
def corrupted(tmp_path) -> dict:
    """A recorded three-iteration run whose line in the middle of iteration 2 is garbled."""
    root = tmp_path / "sessions"
    assert main(["run", "--game", "kuhn_poker", "--oracle", "best-response", "--iterations", str(ITERATIONS),
                 "--session-dir", str(root)]) == 0
    (directory,) = root.iterdir()
    log = directory / EVENTS_FILE
    original = log.read_bytes()
    lines = original.split(b"\n")
    records = [json.loads(line) for line in lines if line]
    # The line of iteration 2's preview: in the middle, with whole iterations before and after it.
    bad = next(i for i, r in enumerate(records) if r["type"] == "proposal_previewed" and r["proposal_id"].startswith("i2."))
    assert 0 < bad < len(records) - 10
    lines[bad] = lines[bad][:40] + b"\x00 garbled by a disk error"
    log.write_bytes(b"\n".join(lines))
    return {"root": root, "id": directory.name, "log": log, "original": original, "corrupted": log.read_bytes(),
            "bad_line": bad + 1, "after": records[bad + 1:]}


def test_the_error_points_to_repair(corrupted, capsys):
    root, session = corrupted["root"], corrupted["id"]
    assert main(["replay", session, "--session-dir", str(root)]) == 2
    error = capsys.readouterr().err
    assert f"line {corrupted['bad_line']}: corrupt event" in error
    assert f"`csro repair {root / session}` keeps the {corrupted['bad_line'] - 1} events before it" in error
    assert main(["sessions", "--session-dir", str(root)]) == 0
    assert "csro repair" in capsys.readouterr().out


def test_repair_keeps_the_events_before_the_bad_line_and_then_replay_and_resume_work(corrupted, capsys):
    root, session, log, bad_line = corrupted["root"], corrupted["id"], corrupted["log"], corrupted["bad_line"]
    capsys.readouterr()
    assert main(["repair", session, "--session-dir", str(root)]) == 0
    out = capsys.readouterr().out
    assert f"line {bad_line}: not valid JSON" in out
    assert f"kept events 1-{bad_line - 1} (lines 1-{bad_line - 1}); dropped {len(corrupted['after']) + 1} lines:" in out
    assert f"line {bad_line}: unreadable" in out
    # What was dropped after the bad line is named by kind, down to the closing event.
    first_after = corrupted["after"][0]
    assert f"line {bad_line + 1}: {first_after['type']} (event {first_after['seq']})" in out
    assert "session_closed" in out
    backup = log.with_name(EVENTS_FILE + ".bak")
    assert f"the whole log before the repair: {backup}" in out
    assert "continue with: csro run --resume" in out
    assert backup.read_bytes() == corrupted["corrupted"]
    kept = b"".join(line + b"\n" for line in corrupted["original"].split(b"\n")[:bad_line - 1])
    assert log.read_bytes() == kept

    state = fold(SessionStore(root).read(session).events)
    assert state.closed is None and state.completed_iterations == 1  # iteration 2 was cut in its middle
    assert main(["replay", session, "--session-dir", str(root)]) == 0
    capsys.readouterr()

    assert main(["run", "--resume", session, "--session-dir", str(root)]) == 0
    state = fold(SessionStore(root).read(session).events)
    assert state.closed.reason == "completed"
    assert state.completed_iterations >= 2  # the oracle may finish early at an exact equilibrium

    capsys.readouterr()
    assert main(["repair", session, "--session-dir", str(root)]) == 0
    assert "nothing to repair" in capsys.readouterr().out


def test_a_torn_last_line_is_cut_and_a_second_backup_does_not_overwrite_the_first(tmp_path, capsys):
    root = tmp_path / "sessions"
    assert main(["run", "--game", "kuhn_poker", "--oracle", "best-response", "--iterations", "1",
                 "--session-dir", str(root)]) == 0
    (directory,) = root.iterdir()
    log = directory / EVENTS_FILE
    log.with_name(EVENTS_FILE + ".bak").write_bytes(b"an earlier backup\n")
    complete = log.read_bytes()
    log.write_bytes(complete + b'{"v": 1, "seq": 99, "ty')
    capsys.readouterr()
    assert main(["repair", directory.name, "--session-dir", str(root)]) == 0
    out = capsys.readouterr().out
    assert "incomplete last line" in out and "dropped 1 line:" in out
    assert log.read_bytes() == complete
    assert log.with_name(EVENTS_FILE + ".bak").read_bytes() == b"an earlier backup\n"
    assert log.with_name(EVENTS_FILE + ".bak.2").read_bytes() == complete + b'{"v": 1, "seq": 99, "ty'


def test_a_log_whose_first_line_is_bad_is_left_alone(tmp_path, capsys):
    directory = tmp_path / "sessions" / "not-a-session"
    directory.mkdir(parents=True)
    (directory / EVENTS_FILE).write_bytes(b"hello\n{}\n")
    assert main(["repair", "not-a-session", "--session-dir", str(tmp_path / "sessions")]) == 2
    assert "nothing to keep: line 1 is not a csro session event" in capsys.readouterr().err
    assert (directory / EVENTS_FILE).read_bytes() == b"hello\n{}\n"
    assert not (directory / (EVENTS_FILE + ".bak")).exists()
