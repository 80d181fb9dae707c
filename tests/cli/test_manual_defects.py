"""Program defects met running the manual literally (issue 28.6): narrow terminals, pipes, progress, reports, SIGTERM."""

from __future__ import annotations

import io
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from rich.console import Console

from csro_tui.cli import main
from csro_tui.commands import _output
from csro_tui.commands._output import ProgressLines
from csro_tui.sessions.state import fold
from csro_tui.sessions.store import EVENTS_FILE, SessionStore

ROOT = Path(__file__).resolve().parents[2]


def only_session(root: Path) -> str:
    (session,) = [p.name for p in root.iterdir() if (p / EVENTS_FILE).exists()]
    return session


def terminal(width: int) -> tuple[Console, io.StringIO]:
    buffer = io.StringIO()
    return Console(file=buffer, force_terminal=True, width=width, color_system=None), buffer


@pytest.fixture(scope="module")
def kuhn_run(tmp_path_factory) -> tuple[Path, str]:
    """Kuhn poker until the oracle has nothing more: eight members, an 8x8 payoff matrix."""
    root = tmp_path_factory.mktemp("s")
    assert main(["run", "--game", "kuhn_poker", "--oracle", "best-response", "--iterations", "8", "--seed", "2",
                 "--review", "valid", "--session-dir", str(root)]) == 0
    return root, only_session(root)


def test_sessions_at_80_columns_keeps_whole_cells_and_headers(kuhn_run, monkeypatch, capsys):
    root, session = kuhn_run
    for width in (80, 120):
        console, buffer = terminal(width)
        monkeypatch.setattr(_output, "pipe_aware_console", lambda **_: console)
        assert main(["sessions", "--session-dir", str(root)]) == 0
        text = buffer.getvalue()
        assert session in text and "completed" in text and "kuhn_poker" in text
        header = next(line for line in text.splitlines() if line.startswith("┃")).rstrip()
        # Every header shown whole on one line, none split into fragments.
        shown = [cell.strip() for cell in header.strip("┃").split("┃")]
        known = {"id", "game", "oracle", "iterations", "population", "best metric", "date", "status"}
        assert shown[0] == "id" and shown[-1] == "status" and set(shown) <= known, text
        assert all(len(line) <= width for line in text.splitlines())
        assert "left out at this width" in text  # what is not shown, and how to see it
    console, buffer = terminal(200)
    monkeypatch.setattr(_output, "pipe_aware_console", lambda **_: console)
    assert main(["sessions", "--session-dir", str(root)]) == 0
    assert "left out" not in buffer.getvalue() and "exploitability 0.0000" in buffer.getvalue()


def test_replay_at_80_columns_never_cuts_a_payoff(kuhn_run, monkeypatch):
    root, session = kuhn_run
    console, buffer = terminal(80)
    monkeypatch.setattr(_output, "stdout_console", lambda: console)
    assert main(["replay", session, "--session-dir", str(root)]) == 0
    text = buffer.getvalue()
    assert "…" not in text
    assert all(len(line) <= 80 for line in text.splitlines())
    assert re.search(r"\(\d+ more columns? at this width; `csro export` writes the whole matrix\)", text)
    assert "-0.3333" in text and "exploitability 0.3333" in text


def test_piped_messages_are_not_wrapped(monkeypatch, capsys):
    monkeypatch.setattr(sys, "stdout", io.StringIO())
    console = _output.pipe_aware_console()
    message = "word " * 60
    console.print(message)
    assert sys.stdout.getvalue() == message + "\n"


def test_progress_counts_are_whole_matches():
    stream = io.StringIO()
    progress = ProgressLines("benchmark", 43, stream=stream, interval=0, clock=iter(range(100, 200)).__next__)
    progress.update(11.96, 43)
    assert stream.getvalue().startswith("benchmark: 11/43 matches · ")


def test_the_report_has_no_development_note(kuhn_run, tmp_path):
    root, session = kuhn_run
    assert main(["export", session, "--session-dir", str(root), "--out", str(tmp_path / "x")]) == 0
    report = (tmp_path / "x" / "report.md").read_text(encoding="utf-8")
    assert "| preview_episodes | 10 in sampled games (default; exact games preview exactly) |" in report
    assert "sessions before" not in report


def test_sigterm_to_the_process_group_stops_the_run_like_ctrl_c(tmp_path):
    """What `timeout`, `kill -- -PGID` and service managers do: the evaluation workers get it too."""
    root = tmp_path / "s"
    process = subprocess.Popen(
        [sys.executable, "-m", "csro_tui.cli", "run", "--game", "rrps(num_repetitions=200)", "--oracle", "seed",
         "--iterations", "3", "--session-dir", str(root), "--workers", "2"],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:  # until its first evaluation is under way
            if root.is_dir() and any((p / EVENTS_FILE).exists() and (p / EVENTS_FILE).stat().st_size for p in root.iterdir()):
                break
            time.sleep(0.2)
        time.sleep(2)
        os.killpg(process.pid, signal.SIGTERM)
        out, err = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.communicate()
    assert process.returncode == 130, err[-2000:]
    lines = out.splitlines()
    assert "stopped" in lines and any(line.startswith("continue with: csro run --resume ") for line in lines)
    state = fold(SessionStore(root).read(only_session(root)).events)
    assert state.closed is not None and state.closed.reason == "stopped"


def test_best_response_under_uniform_finishes_instead_of_reproposing_a_member(tmp_path, capsys):
    assert main(["run", "--game", "kuhn_poker", "--oracle", "best-response", "--solver", "uniform",
                 "--iterations", "10", "--session-dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    state = fold(SessionStore(tmp_path).read(only_session(tmp_path)).events)
    assert state.closed.reason == "completed" and state.completed_iterations < 10
    assert not any(p.decision and p.decision.action == "reject" for p in state.proposals.values())
    assert re.search(r"completed: oracle best-response has nothing more to propose: the best response to the "
                     r"meta-strategy \(.*\) is member br-\d+ \(p\d+\) already", out)
