"""A newcomer's first hour (issue 16): errors, pipes, progress, names, figures."""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from rich.console import Console

from csro_tui.cli import EXIT_BROKEN_PIPE, main
from csro_tui.commands import _output
from csro_tui.commands._output import ProgressLines, RunClock, print_table
from csro_tui.names import did_you_mean
from csro_tui.numbers import number, plain_numbers, sparkline
from csro_tui.sessions.state import fold
from csro_tui.sessions.store import EVENTS_FILE, SessionStore

ROOT = Path(__file__).resolve().parents[2]
SESSION_ID = "20261202-120000-kuhn_poker-best-response-with-a-long-tail"


def only_session(root: Path) -> str:
    (session,) = [p.name for p in root.iterdir() if (p / EVENTS_FILE).exists()]
    return session


# ---------------------------------------------------------------- usage errors


@pytest.mark.parametrize(
    "argv, expected",
    [
        (["run", "--iterations", "x"], "csro run: error: argument --iterations: not a whole number: 'x' (see csro run --help)"),
        (["rn"], "did you mean run?"),
        (["run", "--benchmark", "of"], "did you mean off?"),
        (["eval"], "the following arguments are required: POLICY, --game (see csro eval --help)"),
    ],
)
def test_usage_errors_are_one_line_with_a_pointer_to_help(capsys, argv, expected):
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2
    captured = capsys.readouterr()
    assert expected in captured.err
    assert captured.err.count("\n") == 1 and "usage:" not in captured.err and captured.out == ""


@pytest.mark.parametrize(
    "argv, expected",
    [
        (["run", "--oracle", "bestresponse"], "unknown oracle 'bestresponse' (did you mean best-response?)"),
        (["run", "--solver", "nsh"], "unknown meta-solver 'nsh' (did you mean nash?)"),
        (["run", "--seeds", "always_bett"], "no seed policy 'always_bett' (did you mean always_bet?)"),
        (["eval", "seed:alwys_bet", "--game", "kuhn_poker"], "no seed policy 'alwys_bet' (did you mean always_bet?)"),
        (["eval", "alwayscall", "--game", "kuhn_poker"], "(did you mean always_call"),
        (["eval", "x", "--game", "kuhnpoker"], "did you mean kuhn_poker"),
        (["run", "--oracle", "human"], "--oracle-option path=FILE"),
        (["run", "--oracle", "human", "--oracle-option", "pth=x.py"], "has no option pth (did you mean path?)"),
        (["run", "--oracle", "best-response", "--oracle-option", "budget=3"], "has no option budget (it takes none)"),
        (["run", "--oracle", "evolve", "--oracle-option", "budgt=3"], "unknown option(s) budgt (did you mean budget?)"),
    ],
)
def test_a_mistyped_name_gets_a_suggestion_and_records_no_session(tmp_path, capsys, argv, expected):
    root = tmp_path / "sessions"
    sessions_flag = ["--sessions-dir", str(root)] if argv[0] == "run" else []
    assert main([*argv, *sessions_flag, "--iterations", "1"] if argv[0] == "run" else argv) == 2
    err = capsys.readouterr().err
    assert expected in err and err.count("\n") == 1
    assert not root.exists() or not any(root.iterdir())  # no empty "error" session left behind


def test_did_you_mean_stays_quiet_when_nothing_is_close():
    assert did_you_mean("oracle-of-delphi", ["best-response", "seed", "llm"]) == ""
    assert did_you_mean("nsh", ["nash", "prd", "rm"]) == " (did you mean nash?)"


def test_an_unknown_session_names_the_absolute_directory_and_how_to_choose_another(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "sessions" / SESSION_ID).mkdir(parents=True)
    (tmp_path / "sessions" / SESSION_ID / EVENTS_FILE).write_text("")
    assert main(["replay", SESSION_ID[:-2]]) == 2
    err = capsys.readouterr().err
    assert f"under {tmp_path / 'sessions'}" in err and f"did you mean {SESSION_ID}?" in err
    assert "--sessions-dir DIR or CSRO_SESSIONS_DIR" in err


# ---------------------------------------------------------------- pipes


@pytest.mark.parametrize("argv", [["games", "rrps"], ["games"], ["sessions", "--sessions-dir", "REJECTED"],
                                  ["replay", "SESSION", "--sessions-dir", "REJECTED"]])
def test_a_closed_pipe_ends_quietly(argv, rejected_session):
    root, session, _ = rejected_session
    argv = [str(root) if a == "REJECTED" else session if a == "SESSION" else a for a in argv]
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before the first write, as after `| head` has quit
    try:
        result = subprocess.run([sys.executable, "-m", "csro_tui.cli", *argv], stdout=write_end,
                                stderr=subprocess.PIPE, text=True, timeout=120, cwd=ROOT)
    finally:
        os.close(write_end)
    assert result.stderr == ""
    # print() and rich output alike end in cli.py's handler: 141, as `csro run` and `yes | head`.
    assert result.returncode == EXIT_BROKEN_PIPE


def test_a_run_whose_reader_is_gone_stops_quietly_and_stays_resumable(tmp_path):
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        result = subprocess.run([sys.executable, "-m", "csro_tui.cli", "run", "--game", "kuhn_poker", "--oracle",
                                 "best-response", "--iterations", "3", "--sessions-dir", str(tmp_path)],
                                stdout=write_end, stderr=subprocess.PIPE, text=True, timeout=300, cwd=ROOT)
    finally:
        os.close(write_end)
    assert result.returncode == EXIT_BROKEN_PIPE and result.stderr == ""
    state = fold(SessionStore(tmp_path).read(only_session(tmp_path)).events)
    assert state.started is not None and state.closed.reason == "stopped"  # a whole log, not an empty one


def test_sessions_piped_are_plain_columns_with_whole_ids(tmp_path, capsys):
    root = tmp_path / "sessions"
    assert main(["run", "--game", "kuhn_poker", "--oracle", "best-response", "--iterations", "1",
                 "--sessions-dir", str(root)]) == 0
    session = only_session(root)
    capsys.readouterr()
    assert main(["sessions", "--sessions-dir", str(root)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == f"1 session in {root.resolve()}"
    assert lines[1].split() [:3] == ["id", "game", "oracle"]
    assert lines[2].startswith(f"{session}  kuhn_poker  best-response")
    assert not any(ch in "".join(lines) for ch in "┃│━")


def test_no_sessions_says_where_it_looked_and_how_to_look_elsewhere(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["sessions"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"no sessions under {tmp_path / 'sessions'}")
    assert "--sessions-dir DIR, CSRO_SESSIONS_DIR or sessions_dir in csro.toml" in out and "sessions in sessions" not in out


def test_a_terminal_table_never_wraps_an_id():
    buffer = io.StringIO()
    console = Console(file=buffer, force_terminal=True, width=60, color_system=None)
    columns = [("id", "left"), ("game", "left"), ("oracle", "left"), ("status", "left")]
    print_table(console, "sessions", columns, [[SESSION_ID, "kuhn_poker", "best-response", "completed"]])
    assert SESSION_ID in buffer.getvalue()


# ---------------------------------------------------------------- progress


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_progress_lines_give_done_total_rate_and_time_left_every_interval():
    clock, stream = FakeClock(), io.StringIO()
    progress = ProgressLines("evaluating x", 10, stream=stream, interval=5, clock=clock)
    clock.now += 2
    progress.update(1, 10)  # too soon for a line
    clock.now += 3
    progress.update(2, 10)
    clock.now += 1
    progress.update(3, 10)  # too soon again
    clock.now += 14
    progress.update(10, 10)
    progress.update(10, 10)  # the last line once only
    lines = stream.getvalue().splitlines()
    assert lines == ["evaluating x: 2/10 matches · 0.4/s · 20s left", "evaluating x: 10/10 matches · 0.5/s · done in 20s"]


def test_work_shorter_than_the_interval_stays_silent():
    clock, stream = FakeClock(), io.StringIO()
    progress = ProgressLines("evaluating x", 4, stream=stream, interval=5, clock=clock)
    clock.now += 1
    progress.update(4, 4)
    assert stream.getvalue() == ""


def test_eval_piped_prints_progress_to_stderr_and_keeps_stdout_json(capsys, monkeypatch):
    monkeypatch.setattr(_output, "PROGRESS_INTERVAL", 0.0)
    assert main(["eval", "seed:always_bet", "--game", "kuhn_poker", "--json", "--seed", "1"]) == 0
    captured = capsys.readouterr()
    json.loads(captured.out)
    assert re.search(r"evaluating seed:always_bet: 4/4 matches", captured.err)


def test_run_clock_estimates_time_left_from_this_run_s_iterations():
    clock = FakeClock()
    run_clock = RunClock(done_at_start=2, target=10, clock=clock)
    assert run_clock.describe(2) == "0s elapsed"
    clock.now += 120
    assert run_clock.describe(4) == "2m00s elapsed · ~6m00s left"


def test_a_piped_run_prints_progress_lines_to_stderr(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(_output, "PROGRESS_INTERVAL", 0.001)  # any run lasts longer: a line is certain
    assert main(["run", "--game", "kuhn_poker", "--oracle", "best-response", "--iterations", "2",
                 "--sessions-dir", str(tmp_path)]) == 0
    err = capsys.readouterr().err
    assert re.search(r"^csro run: \d/2 iterations · .+ · \d+s elapsed", err, re.M), err


# ---------------------------------------------------------------- rejections, replay --step


@pytest.fixture(scope="module")
def rejected_session(tmp_path_factory) -> tuple[Path, str, str]:
    root = tmp_path_factory.mktemp("rejections")
    script = root / "review.jsonl"
    script.write_text('{"action": "reject", "reason": "too simple\\nthe second line of the reason"}\n"accept"\n"accept"\n')
    out = io.StringIO()
    from contextlib import redirect_stdout

    with redirect_stdout(out):
        assert main(["run", "--game", "kuhn_poker", "--oracle", "best-response", "--iterations", "2",
                     "--review", f"script:{script}", "--sessions-dir", str(root / "s")]) == 0
    return root / "s", only_session(root / "s"), out.getvalue()


def test_run_shows_the_first_line_of_a_rejection_and_where_the_full_text_is(rejected_session):
    root, session, out = rejected_session
    events = SessionStore(root).read(session).events
    decided = next(e for e in events if e.TYPE == "proposal_decided" and e.action == "reject")
    line = next(line for line in out.splitlines() if line.startswith("iteration   1"))
    assert f"rejected: too simple … ({(root / session / EVENTS_FILE).resolve()}, event {decided.seq})" in line
    assert "second line" not in line


def test_replay_lists_rejections_with_their_event(rejected_session, capsys):
    root, session, _ = rejected_session
    assert main(["replay", session, "--sessions-dir", str(root)]) == 0
    out = capsys.readouterr().out
    assert "rejections (1)" in out and "too simple …" in out
    assert f"full text of each reason: that event in {(root / session / EVENTS_FILE).resolve()}" in out


def test_replay_at_an_earlier_step_does_not_say_the_run_stopped(rejected_session, capsys):
    root, session, _ = rejected_session
    events = SessionStore(root).read(session).events
    step = next(e.seq for e in events if e.TYPE == "iteration_started" and e.iteration == 2)
    assert main(["replay", session, "--sessions-dir", str(root), "--step", str(step)]) == 0
    out = capsys.readouterr().out
    assert f"iteration 2 is in progress at step {step}" in out and "stopped" not in out


def test_replay_of_a_killed_run_says_it_stopped_and_how_to_resume(rejected_session, tmp_path, capsys):
    root, session, _ = rejected_session
    lines = (root / session / EVENTS_FILE).read_text().splitlines(keepends=True)
    cut = next(i for i, line in enumerate(lines) if '"iteration_started"' in line and '"iteration": 2' in line)
    (tmp_path / "killed").mkdir()
    (tmp_path / "killed" / EVENTS_FILE).write_text("".join(lines[: cut + 2]))
    assert main(["replay", str(tmp_path / "killed")]) == 0
    out = capsys.readouterr().out
    assert "iteration 2 is unfinished (the run stopped during it;" in out and "--resume" in out


# ---------------------------------------------------------------- figures


def test_numbers_never_read_negative_zero():
    assert number(-0.00001) == "0.0000" and number(-0.0, signed=True) == "+0.0000"
    assert number(1.23456, stderr=0.01) == "1.2346 ± 0.0100"
    assert number(None) == "-" and number(float("nan")) == "-"
    cleaned = plain_numbers({"a": -0.0, "b": [float("nan"), -1.5]})
    assert json.dumps(cleaned) == '{"a": 0.0, "b": [null, -1.5]}'


def test_sparkline_runs_low_to_high():
    assert sparkline([3.0, 2.0, None, 1.0]) == "█▅ ▁"
    assert sparkline([]) == ""


def test_sparkline_resamples_a_long_series_to_its_width():
    rising = sparkline([float(i) for i in range(150)], 30)
    assert len(rising) == 30 and rising[0] == "▁" and rising[-1] == "█"
    assert list(rising) == sorted(rising)  # still rising: each mark is the mean of its share
    assert sparkline([0.0, 0.0, 10.0, 10.0], 2) == "▁█"
    assert sparkline([1.0, None, None, None, 2.0, 3.0], 3) == "▁ █"  # a share with no value is a gap
    assert sparkline([3.0, 2.0, 1.0], 8) == sparkline([3.0, 2.0, 1.0])  # a short one is left alone


@pytest.mark.parametrize("width", [80, 120, 160])
def test_the_closing_sparkline_of_a_long_run_fits_the_terminal(width):
    from csro_tui.commands.run import closing_sparkline

    values = [None] + [1 / (i + 1) for i in range(149)]  # 150 iterations, as a long Leduc run
    line = closing_sparkline("exploitability", values, width)
    assert len(line) <= width
    assert line.startswith("exploitability over 150 iterations: ") and line.endswith("  1.0000 → 0.0067")
    marks = line.removeprefix("exploitability over 150 iterations: ").removesuffix("  1.0000 → 0.0067")
    assert marks == sparkline(values, len(marks)) and len(marks) >= width - 60
    # What fits stays one mark per iteration.
    assert closing_sparkline("exploitability", values[:20], width) == (
        f"exploitability per iteration: {sparkline(values[:20])}  1.0000 → 0.0526")


def test_run_ends_with_a_sparkline_and_shows_gain_instead_of_a_zero_nash_conv(tmp_path, capsys):
    assert main(["run", "--game", "kuhn_poker", "--oracle", "best-response", "--iterations", "3",
                 "--sessions-dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    state = fold(SessionStore(tmp_path).read(only_session(tmp_path)).events)
    values = [m.exploitability for m in state.metrics]
    assert f"exploitability per iteration: {sparkline(values)}" in out
    iteration_lines = [line for line in out.splitlines() if line.startswith("iteration ")]
    assert "gain +" in iteration_lines[1] and all("meta-NashConv" not in line for line in iteration_lines)


def test_export_draws_the_run_as_svg_and_shows_it_in_the_report(tmp_path):
    root = tmp_path / "s"
    assert main(["run", "--game", "kuhn_poker", "--oracle", "best-response", "--iterations", "3",
                 "--sessions-dir", str(root)]) == 0
    session = only_session(root)
    assert main(["export", session, "--sessions-dir", str(root), "--out", str(tmp_path / "out")]) == 0
    state = fold(SessionStore(root).read(session).events)
    svg = ET.parse(tmp_path / "out" / "run.svg").getroot()
    namespace = "{http://www.w3.org/2000/svg}"
    assert svg.tag == f"{namespace}svg"
    points = svg.findall(f"{namespace}circle")
    assert len(points) == len(state.metrics)
    assert points[0].find(f"{namespace}title").text == f"iteration 0: {number(state.metrics[0].exploitability)}"
    report = (tmp_path / "out" / "report.md").read_text()
    assert "![exploitability per iteration](run.svg)" in report
    assert "-0.0000" not in report and "-0.0," not in (tmp_path / "out" / "payoffs.csv").read_text()


def test_agg_score_stderr_is_a_conservative_bound():
    from csro_tui.evaluation.population_metrics import agg_score_stderr

    payoffs = {"a": 1.0, "b": -2.0, "c": 0.5}
    errors = {"a": 0.3, "b": 0.6, "c": 0.3}
    # mean of the errors (PopReturn, errors perfectly correlated) + the worst matchup's (PopExpl)
    assert agg_score_stderr(payoffs, errors) == pytest.approx(0.4 + 0.6)


# ---------------------------------------------------------------- csro games GAME


def test_games_game_shows_what_a_policy_sees_its_seeds_and_bots(capsys):
    from csro_tui.games.registry import get_game

    assert main(["games", "rrps"]) == 0
    out = capsys.readouterr().out
    spec = get_game("rrps")
    example = spec.example_observation(player=0)
    assert json.dumps(example, ensure_ascii=False) in out
    for key in ("opp_moves", "my_moves", "legal_actions"):
        assert key in out
    assert 'action_names: ["Rock", "Paper", "Scissors"]' in out
    for seed in spec.seed_policies():
        assert re.search(rf"^  {seed}\b", out, re.M)
    assert f"Benchmark bots ({len(spec.benchmark())};" in out and "iocainebot" in out


def test_crosstable_files_hold_no_negative_zero(tmp_path, capsys):
    # Mirror entries are negations: a 0.0 payoff between equals would be stored as -0.0.
    members = ["seed:always_bet", "seed:always_bet", "always_call"]
    for name in ("table.csv", "table.json"):
        assert main(["crosstable", "--game", "kuhn_poker", "--participants", *members,
                     "--out", str(tmp_path / name)]) == 0
    csv_text = (tmp_path / "table.csv").read_text()
    document = json.loads((tmp_path / "table.json").read_text())
    assert document["matrix"][1][0] == 0.0 and document["matrix"][0][1] == 0.0
    assert "-0.0" not in csv_text and "-0.0" not in (tmp_path / "table.json").read_text()
    assert "-0.0" not in capsys.readouterr().out


def test_the_first_line_of_a_reason_is_the_informative_one():
    from csro_tui.sessions.summary import first_line

    assert first_line("too simple\nmore detail") == "too simple …"
    traceback = 'Traceback (most recent call last):\n  File "policy.py", line 5, in act\nZeroDivisionError: division by zero'
    assert first_line(traceback) == "ZeroDivisionError: division by zero …"
    assert first_line("\x1b[2Jcleared") == "\\x1b[2Jcleared"  # escape sequences from policy text shown visibly
    assert first_line("") == ""


def test_a_pool_reports_every_job_done_once_every_result_is_in():
    """The workers' last fractional reports arrive before their results; the count must still
    reach the total, or a piped `csro crosstable` (ProgressLines) never prints its final line."""
    import queue

    from csro_tui.commands._output import ProgressLines
    from csro_tui.evaluation.results import MatchResult
    from csro_tui.evaluation.runner import _collect

    class Pool:  # a worker that reports 0.9 of each chunk, then its results
        def __init__(self, messages):
            self.messages = messages

        def apply_async(self, play, args, error_callback=None):
            number, indexed, _limits = args
            self.messages.put(("progress", number, 0.9 * len(indexed)))
            for index, _job in indexed:
                self.messages.put(("result", number, (index, MatchResult("a", "b", 1.0, 0.0, 2).to_dict())))

    messages = queue.Queue()
    stream = io.StringIO()
    lines = ProgressLines("cross-table", 3, stream=stream, interval=0)
    seen = []

    def progress(done, total):
        seen.append((done, total))
        lines.update(done, total)

    results = _collect(Pool(messages), messages, ["j0", "j1", "j2"], [[0, 1], [2]], progress, None)
    assert len(results) == 3 and seen[-1] == (3, 3)
    assert stream.getvalue().splitlines()[-1].startswith("cross-table: 3/3 matches")
