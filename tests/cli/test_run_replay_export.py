"""`csro run`, `replay`, `sessions` and `export` with the real games, oracles and sandbox."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from csro_tui.cli import main
from csro_tui.sessions.state import fold
from csro_tui.sessions.store import EVENTS_FILE, SessionStore

KUHN_ITERATIONS = 10


def only_session(root: Path) -> str:
    (session,) = [p.name for p in root.iterdir() if (p / EVENTS_FILE).exists()]
    return session


@pytest.fixture(scope="module")
def kuhn_session(tmp_path_factory) -> tuple[Path, str]:
    """One recorded run: Kuhn poker, exact best response, Nash meta-solver."""
    root = tmp_path_factory.mktemp("sessions")
    code = main(["run", "--game", "kuhn_poker", "--oracle", "best-response", "--solver", "nash",
                 "--iterations", str(KUHN_ITERATIONS), "--review", "auto", "--session-dir", str(root)])
    assert code == 0
    return root, only_session(root)


def test_best_response_on_kuhn_drives_exploitability_below_a_hundredth(kuhn_session):
    root, session = kuhn_session
    state = fold(SessionStore(root).read(session).events)
    assert state.closed.reason == "completed"
    # The oracle may end the run early: once the meta-strategy is an exact
    # equilibrium no best response improves on it.
    assert 2 <= state.completed_iterations <= KUHN_ITERATIONS
    accepted = [number for number, it in state.iterations.items() if number > 0 and it.accepted]
    assert len(state.population) == 1 + len(accepted)
    exploitability = [m.exploitability for m in state.metrics]
    assert exploitability[0] == pytest.approx(1 / 3)  # the first seed (always_bet) is far from Nash
    assert min(exploitability) < 0.01
    assert all(m.meta_nash_conv < 1e-6 for m in state.metrics)  # the Nash solver solves each meta-game
    for member in state.population:
        assert (root / session / "policies" / f"{member.id}.py").read_text() == member.source


def test_run_prints_a_row_per_iteration_and_a_summary(tmp_path, capsys):
    code = main(["run", "--game", "kuhn_poker", "--oracle", "best-response", "--iterations", "1",
                 "--session-dir", str(tmp_path)])
    out = capsys.readouterr().out
    assert code == 0
    assert "iteration   0" in out and "iteration   1  br-1" in out and "exploitability" in out
    assert "completed: 1 iteration\n" in out and f"session {only_session(tmp_path)}" in out


def test_replay_shows_the_state_at_a_step(kuhn_session, capsys):
    root, session = kuhn_session
    events = SessionStore(root).read(session).events
    step = next(e.seq for e in events if e.TYPE == "iteration_finished" and e.iteration == 2)
    assert main(["replay", session, "--session-dir", str(root), "--step", str(step)]) == 0
    out = capsys.readouterr().out
    assert f"step {step} of {events[-1].seq}" in out
    assert "br-2" in out and "br-3" not in out
    assert "payoff matrix" in out and "meta-strategy (nash" in out


def test_replay_verify_reproduces_recorded_evaluations(kuhn_session, capsys):
    root, session = kuhn_session
    events = SessionStore(root).read(session).events
    step = next(e.seq for e in events if e.TYPE == "iteration_finished" and e.iteration == 3)
    assert main(["replay", session, "--session-dir", str(root), "--step", str(step), "--verify"]) == 0
    assert "reproduced: all" in capsys.readouterr().out


def test_replay_verify_reports_a_tampered_entry(kuhn_session, tmp_path, capsys):
    root, session = kuhn_session
    lines = (root / session / EVENTS_FILE).read_text().splitlines(keepends=True)
    index = next(i for i, line in enumerate(lines) if '"payoffs_evaluated"' in line)
    record = json.loads(lines[index])
    record["entries"][0]["mean"] += 0.5
    lines[index] = json.dumps(record) + "\n"
    finished = next(i for i, line in enumerate(lines) if '"iteration_finished"' in line and '"iteration": 1' in line)
    tampered = tmp_path / "tampered"
    tampered.mkdir()
    (tampered / EVENTS_FILE).write_text("".join(lines[: finished + 1]))
    assert main(["replay", str(tampered), "--verify"]) == 1
    assert "differs: payoff p1 vs p0" in capsys.readouterr().out


def test_sessions_lists_the_run(kuhn_session, capsys):
    root, session = kuhn_session
    assert main(["sessions", "--session-dir", str(root)]) == 0
    out = capsys.readouterr().out
    assert session in out and "kuhn_poker" in out and "best-response" in out and "completed" in out


def test_export_writes_policies_payoffs_and_report(kuhn_session, tmp_path):
    root, session = kuhn_session
    out = tmp_path / "export"
    assert main(["export", session, "--session-dir", str(root), "--out", str(out)]) == 0
    state = fold(SessionStore(root).read(session).events)
    files = sorted((out / "policies").iterdir())
    assert len(files) == len(state.population)
    first = files[1].read_text()
    assert first.startswith("# csro-tui policy p1: br-1\n") and "meta-strategy weight:" in first
    compile(first, str(files[1]), "exec")  # a standalone module
    rows = (out / "payoffs.csv").read_text().splitlines()
    assert rows[0].split(",")[1:] == state.ids and len(rows) == len(state.ids) + 1
    assert float(rows[2].split(",")[1]) == pytest.approx(state.payoff("p1", "p0"))
    report = (out / "report.md").read_text()
    assert f"# CSRO session {session}" in report and "## Payoff matrix" in report and "exploitability" in report


def test_a_review_script_drives_the_gate(tmp_path):
    script = tmp_path / "review.jsonl"
    script.write_text('{"action": "reject", "reason": "show me another"}\n"accept"\n')
    assert main(["run", "--game", "kuhn_poker", "--oracle", "best-response", "--iterations", "1",
                 "--review", f"script:{script}", "--session-dir", str(tmp_path / "s")]) == 0
    state = fold(SessionStore(tmp_path / "s").read(only_session(tmp_path / "s")).events)
    decisions = [(p.decision.action, p.decision.reason, p.decision.decided_by) for p in state.proposals.values()]
    assert decisions == [("reject", "show me another", "script:review.jsonl"), ("accept", "", "script:review.jsonl")]
    assert len(state.population) == 2


def test_rrps_runs_offline_with_the_seed_oracle(tmp_path):
    # --review valid: this is about running offline, not about the gate (which,
    # with auto, may refuse a seed that does not beat the first one).
    assert main(["run", "--game", "rrps(num_repetitions=20)", "--oracle", "seed", "--iterations", "1",
                 "--review", "valid", "--episodes", "2", "--benchmark", "off", "--session-dir", str(tmp_path)]) == 0
    state = fold(SessionStore(tmp_path).read(only_session(tmp_path)).events)
    assert [m.origin for m in state.population] == ["seed", "seed"]
    assert state.payoffs[("p1", "p0")].episodes == 2 and not state.payoffs[("p1", "p0")].exact


@pytest.mark.slow
def test_rrps_benchmark_scores_the_meta_strategy(tmp_path):
    assert main(["run", "--game", "rrps(num_repetitions=20)", "--oracle", "seed", "--iterations", "1",
                 "--episodes", "2", "--benchmark-episodes", "1", "--session-dir", str(tmp_path)]) == 0
    state = fold(SessionStore(tmp_path).read(only_session(tmp_path)).events)
    benchmark = state.metrics[-1].benchmark
    assert len(benchmark["meta"]["per_bot"]) == 43
    assert benchmark["meta"]["agg_score"] == pytest.approx(benchmark["meta"]["pop_return"] - benchmark["meta"]["pop_expl"])


@pytest.mark.parametrize(
    "argv, message",
    [
        (["run", "--oracle", "oracle-of-delphi"], "unknown oracle 'oracle-of-delphi'; known oracles: best-response"),
        (["run", "--solver", "vibes"], "unknown meta-solver 'vibes'"),
        (["run", "--review", "sometimes"], "review must be auto"),
        (["replay", "no-such-session"], "no session 'no-such-session' under"),
        (["export", "no-such-session", "--out", "x"], "no session 'no-such-session' under"),
        (["run", "--resume", "no-such-session"], "no session 'no-such-session' under"),
    ],
)
def test_user_errors_are_one_line(tmp_path, capsys, argv, message):
    assert main([*argv, "--session-dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and "Traceback" not in err


def test_a_corrupt_session_is_one_line_naming_file_and_line(tmp_path, capsys):
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / EVENTS_FILE).write_text('{"v": 1, "seq": 1, "ts": "t", "type": "session_started"\n')
    assert main(["replay", "broken", "--session-dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert f"{tmp_path / 'broken' / EVENTS_FILE} line 1" in err and err.count("\n") == 1


def test_a_run_killed_mid_iteration_resumes_with_every_accepted_policy(tmp_path):
    root = tmp_path / "sessions"
    command = [sys.executable, "-m", "csro_tui.cli", "run", "--game", "kuhn_poker", "--oracle", "best-response",
               "--iterations", "5", "--session-dir", str(root)]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
    try:
        log = None
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and process.poll() is None:
            logs = list(root.glob(f"*/{EVENTS_FILE}")) if root.exists() else []
            if logs and b'"proposal_created", "proposal_id": "i3.1"' in logs[0].read_bytes():
                log = logs[0]
                break
            time.sleep(0.02)
        assert log is not None, f"the run never reached iteration 3: {process.stderr.read().decode() if process.poll() is not None else ''}"
        os.killpg(process.pid, signal.SIGKILL)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    session = log.parent.name
    before = fold(SessionStore(root).read(session).events)
    assert before.closed is None and before.open_iteration is not None
    accepted_before = list(before.population)
    assert len(accepted_before) >= 3

    assert main(["run", "--resume", session, "--session-dir", str(root)]) == 0
    after = fold(SessionStore(root).read(session).events)
    assert after.population[: len(accepted_before)] == accepted_before
    assert after.completed_iterations == 5 and len(after.population) == 6
    assert after.closed.reason == "completed" and after.missing_payoffs() == []
    for member in after.population:
        assert (root / session / "policies" / f"{member.id}.py").read_text() == member.source


@pytest.mark.parametrize("game", ["rrps(num_repetitions=10)", "goofspiel(num_cards=3)"])
def test_best_response_on_a_sampled_game_is_refused_before_a_session_is_recorded(game, tmp_path, capsys):
    """Its GameSpec is not exact: one line says so and what to use instead, and
    no session is recorded (it used to fail three attempts, then close with an error)."""
    code = main(["run", "--game", game, "--oracle", "best-response", "--iterations", "1",
                 "--session-dir", str(tmp_path)])
    err = capsys.readouterr().err
    assert code != 0
    (line,) = [line for line in err.splitlines() if line.strip()]
    assert "the best-response oracle needs a game with exact evaluation (kuhn_poker, leduc_poker)" in line, err
    assert "use another oracle (" in line and "evolve" in line, err
    assert not list(tmp_path.iterdir())


def test_every_command_that_reads_sessions_takes_sessions_dir_from_the_one_layering(tmp_path, monkeypatch, capsys):
    """sessions_dir in csro.toml was honoured by `csro run` only: `sessions`,
    `replay`, `export`, `repair` and the TUI's list read ./sessions.  Now all of
    them layer defaults < csro.toml < CSRO_SESSIONS_DIR < --sessions-dir."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("CSRO_SESSIONS_DIR", raising=False)
    monkeypatch.delenv("CSRO_CONFIG", raising=False)
    (tmp_path / "csro.toml").write_text('sessions_dir = "from_file"\n')
    assert main(["run", "--game", "kuhn_poker", "--oracle", "best-response", "--iterations", "1"]) == 0
    session = only_session(tmp_path / "from_file")
    capsys.readouterr()
    assert main(["sessions"]) == 0
    assert session in capsys.readouterr().out
    assert main(["replay", session, "--verify"]) == 0
    assert main(["export", session, "--out", str(tmp_path / "exported")]) == 0
    assert (tmp_path / "exported").is_dir()
    assert main(["repair", session]) == 0
    # The environment beats the file, the flag beats the environment.
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.setenv("CSRO_SESSIONS_DIR", str(tmp_path / "elsewhere"))
    capsys.readouterr()
    assert main(["sessions"]) == 0
    assert session not in capsys.readouterr().out
    assert main(["sessions", "--sessions-dir", str(tmp_path / "from_file")]) == 0
    assert session in capsys.readouterr().out


def test_the_tui_lists_sessions_from_the_same_layering(tmp_path, monkeypatch):
    """`csro` (the TUI) opens its session list where csro.toml says, below CSRO_SESSIONS_DIR."""
    import csro_tui.tui.app as tui_app

    opened = []

    class Recorder:
        return_code = 0

        def __init__(self, options, *, session, sessions_dir, show_start):
            opened.append(str(sessions_dir))

        def run(self):
            pass

    monkeypatch.setattr(tui_app, "CsroApp", Recorder)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("CSRO_SESSIONS_DIR", raising=False)
    monkeypatch.delenv("CSRO_CONFIG", raising=False)
    (tmp_path / "csro.toml").write_text('sessions_dir = "from_file"\n')
    assert main([]) == 0
    monkeypatch.setenv("CSRO_SESSIONS_DIR", "from_env")
    assert main([]) == 0
    assert main(["--sessions-dir", "from_flag"]) == 0
    assert opened == ["from_file", "from_env", "from_flag"]


def test_the_oracles_empty_last_iteration_is_not_counted_in_the_session_list(tmp_path, capsys):
    """Kuhn's best response reaches an exact equilibrium, and then the oracle
    finishes in an iteration of its own that proposes nothing: the list says
    '7 iterations, then the oracle finished', not 8 (resume and replay still
    count the recorded iteration)."""
    from csro_tui.tui.backend import session_summary

    code = main(["run", "--game", "kuhn_poker", "--oracle", "best-response", "--iterations", "20",
                 "--review", "auto", "--session-dir", str(tmp_path)])
    assert code == 0
    session = only_session(tmp_path)
    state = fold(SessionStore(tmp_path).read(session).events)
    last = max(state.iterations)
    assert not state.iterations[last].proposals and state.completed_iterations == last  # the empty one is recorded
    (info,) = SessionStore(tmp_path).list_sessions()
    assert info.iterations == last - 1 and info.oracle_finished
    assert f"{last - 1} iterations, then the oracle finished" in session_summary(info)
    capsys.readouterr()
    assert main(["sessions", "--sessions-dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    row = next(line for line in out.splitlines() if line.startswith(session[:20]))
    assert row.split()[3] == str(last - 1), row  # id, game, oracle, iterations
    assert "completed: the oracle finished" in " ".join(out.split())
