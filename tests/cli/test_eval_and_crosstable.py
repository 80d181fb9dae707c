"""`csro games`, `csro eval` and `csro crosstable` end to end (real sandbox).

Small budgets keep these quick: RRPS with few throws, two episodes per
matchup, repeated Leduc with two hands; Kuhn and Leduc are exact anyway.
"""

from __future__ import annotations

import csv
import json
import subprocess
import sys

import pytest

from csro_tui.cli import main

SMALL_RRPS = "rrps(num_repetitions=10)"


def run_cli(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def eval_json(capsys, *argv):
    code, out, err = run_cli(capsys, "eval", *argv, "--json", "--workers", "1")
    assert code == 0, err
    return json.loads(out)


def assert_metrics_follow_results(report):
    means = [result["mean"] for result in report["results"]]
    metrics = report["metrics"]
    assert metrics["pop_return"] == pytest.approx(sum(means) / len(means))
    assert metrics["pop_expl"] == pytest.approx(max(-m for m in means))
    assert metrics["agg_score"] == pytest.approx(metrics["pop_return"] - metrics["pop_expl"])


def one_error_line(err):
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert lines[0].startswith("csro: error: ")
    assert "Traceback" not in err
    return lines[0]


# ---------------------------------------------------------------- games


def test_games_lists_every_game_with_its_benchmark(capsys):
    code, out, _ = run_cli(capsys, "games")
    assert code == 0
    for name in ("rrps", "kuhn_poker", "leduc_poker", "repeated_leduc"):
        assert name in out
    assert "43" in out  # the RRPS population size
    assert "exact" in out and "sampled" in out


# ---------------------------------------------------------------- eval


def test_eval_rrps_seed_against_the_43_bots(capsys):
    report = eval_json(capsys, "seed:beat_last", "--game", SMALL_RRPS, "--episodes", "2")
    assert report["game"] == SMALL_RRPS and report["exact"] is False
    assert len(report["results"]) == 43
    assert {r["b"] for r in report["results"]} >= {"greenberg", "iocainebot", "rockbot"}
    assert all(r["episodes"] == 2 and r["failure"] is None for r in report["results"])
    # beat_last plays what beats the opponent's last throw: rockbot loses all but the first.
    rock = next(r for r in report["results"] if r["b"] == "rockbot")
    assert rock["mean"] >= 9 - 1
    assert_metrics_follow_results(report)
    assert report["isolation"] in ("bubblewrap", "rlimits")
    assert report["exploitability"] is None


def test_eval_is_the_same_serial_and_in_parallel(capsys):
    argv = ("seed:frequency_counter", "--game", SMALL_RRPS, "--episodes", "2", "--json", "--seed", "7")
    serial = json.loads(run_cli(capsys, "eval", *argv, "--workers", "1")[1])
    parallel = json.loads(run_cli(capsys, "eval", *argv, "--workers", "2")[1])
    assert serial["results"] == parallel["results"]


@pytest.mark.parametrize(
    ("game", "policy"),
    [("kuhn_poker", "seed:card_rules"), ("leduc_poker", "seed:card_rules")],
)
def test_eval_exact_games_report_exploitability(capsys, game, policy):
    report = eval_json(capsys, policy, "--game", game)
    assert report["exact"] is True
    assert {r["b"] for r in report["results"]} == {"cfr_plus", "always_call", "always_fold", "uniform_random"}
    assert all(r["exact"] and r["stderr"] == 0 for r in report["results"])
    # CFR+ is close to an equilibrium of a symmetric zero-sum game: nobody beats it by much.
    cfr = next(r for r in report["results"] if r["b"] == "cfr_plus")
    assert cfr["mean"] < 0.01
    assert report["exploitability"] > 0
    assert_metrics_follow_results(report)


def test_eval_repeated_leduc_end_to_end(capsys):
    report = eval_json(capsys, "seed:card_rules", "--game", "repeated_leduc(num_hands=2)", "--episodes", "2")
    assert report["exact"] is False
    assert [r["b"] for r in report["results"]] == ["cfr_plus", "always_call", "always_fold"]
    assert all(r["episodes"] == 2 for r in report["results"])
    assert_metrics_follow_results(report)


def test_eval_prints_tables_with_metrics_and_isolation(capsys, tmp_path):
    policy = tmp_path / "rocky.py"
    policy.write_text(
        "class Policy:\n    def __init__(self, player, game):\n        pass\n"
        "    def act(self, obs):\n        return 0\n"
    )
    code, out, err = run_cli(capsys, "eval", str(policy), "--game", SMALL_RRPS, "--episodes", "2", "--workers", "1")
    assert code == 0, err
    for text in ("rockbot", "greenberg", "PopReturn", "PopExpl", "AggScore", "policy sandbox"):
        assert text in out
    # A constant rock player ties rockbot in every throw.
    assert "+0.0000" in next(line for line in out.splitlines() if "rockbot" in line)


def test_eval_a_failing_policy_ends_with_one_line(capsys, tmp_path):
    policy = tmp_path / "crash.py"
    policy.write_text(
        "class Policy:\n    def __init__(self, player, game):\n        pass\n"
        "    def act(self, obs):\n        return 1 // 0\n"
    )
    code, _, err = run_cli(capsys, "eval", str(policy), "--game", SMALL_RRPS, "--episodes", "2", "--workers", "1")
    assert code == 1
    line = one_error_line(err)
    assert "crash" in line and "ZeroDivisionError" in line


# ---------------------------------------------------------------- bad input


def test_unknown_game_is_one_line(capsys):
    code, _, err = run_cli(capsys, "eval", "seed:uniform", "--game", "no_such_game")
    assert code == 2
    assert "no_such_game" in one_error_line(err)


def test_unreadable_files_are_one_line(capsys, tmp_path):
    code, _, err = run_cli(capsys, "eval", str(tmp_path / "missing.py"), "--game", "kuhn_poker")
    assert code == 2
    assert "no such file" in one_error_line(err)
    code, _, err = run_cli(capsys, "eval", str(tmp_path), "--game", "kuhn_poker")
    assert code == 2
    assert "directory" in one_error_line(err)


def test_unknown_seed_or_participant_is_one_line(capsys):
    code, _, err = run_cli(capsys, "eval", "seed:nope", "--game", "kuhn_poker")
    assert code == 2
    assert "always_bet" in one_error_line(err)  # the line lists the seeds there are
    code, _, err = run_cli(capsys, "crosstable", "--game", "kuhn_poker", "--participants", "cfr_plus", "nobody")
    assert code == 2
    assert "nobody" in one_error_line(err)


def test_invalid_code_lists_issues_with_line_numbers(capsys, tmp_path):
    policy = tmp_path / "bad.py"
    policy.write_text("import os\n\nclass Policy:\n    def act(self, obs):\n        return eval('0')\n")
    code, out, err = run_cli(capsys, "eval", str(policy), "--game", "kuhn_poker")
    assert code == 2
    assert out == ""
    assert err.startswith("csro: error: ")
    assert f"{policy}:1:" in err  # import os
    assert f"{policy}:5:" in err  # eval
    assert "Traceback" not in err


def test_bad_input_through_the_real_entry_point(tmp_path):
    completed = subprocess.run(
        [sys.executable, "-m", "csro_tui.cli", "eval", str(tmp_path / "nope.py"), "--game", "rrps"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert completed.returncode == 2
    assert one_error_line(completed.stderr)


# ---------------------------------------------------------------- crosstable


def test_crosstable_exact_writes_csv_and_json(capsys, tmp_path):
    members = ["seed:always_bet", "seed:uniform", "cfr_plus", "always_fold"]
    out_json = tmp_path / "table.json"
    code, out, err = run_cli(capsys, "crosstable", "--game", "kuhn_poker", "--participants", *members, "--out", str(out_json))
    assert code == 0, err
    assert "AggScore" in out
    table = json.loads(out_json.read_text())
    names, matrix = table["members"], table["matrix"]
    assert names == members
    for i in range(4):
        assert matrix[i][i] == 0
        for j in range(4):
            assert matrix[i][j] == pytest.approx(-matrix[j][i])
    # Always betting against always folding wins the ante every hand.
    assert matrix[0][3] == pytest.approx(1.0)
    for i, name in enumerate(names):
        assert table["metrics"][name]["pop_return"] == pytest.approx(sum(matrix[i]) / 4)
        assert table["metrics"][name]["pop_expl"] == pytest.approx(max(-v for v in matrix[i]))

    out_csv = tmp_path / "table.csv"
    code, _, err = run_cli(capsys, "crosstable", "--game", "kuhn_poker", "--participants", *members, "--out", str(out_csv))
    assert code == 0, err
    rows = list(csv.reader(out_csv.open()))
    assert rows[0] == ["member", *members, "PopReturn", "PopExpl", "AggScore"]
    assert float(rows[1][4]) == pytest.approx(1.0)


def test_crosstable_sampled_rrps(capsys, tmp_path):
    out_json = tmp_path / "rrps.json"
    code, out, err = run_cli(
        capsys, "crosstable", "--game", SMALL_RRPS, "--episodes", "2", "--workers", "1",
        "--participants", "rockbot", "seed:constant_rock", "seed:beat_last", "--out", str(out_json),
    )
    assert code == 0, err
    table = json.loads(out_json.read_text())
    assert table["members"] == ["rockbot", "seed:constant_rock", "seed:beat_last"]
    matrix = table["matrix"]
    assert matrix[0][1] == 0.0  # rock against rock: ten ties
    assert matrix[2][0] >= 8  # paper after the first throw (a random one, which may lose)
    assert matrix[0][2] == pytest.approx(-matrix[2][0])
    assert all(matrix[i][i] == 0 for i in range(3))
    assert set(table["metrics"]) == set(table["members"])


SLOW_ACT_POLICY = """
class Policy:
    def __init__(self, player, game):
        pass

    def act(self, obs):
        total = 0
        for step in range(200_000):
            total += step
        return total % 3
"""


def test_eval_takes_the_clock_flags_and_a_policy_that_runs_out_fails(capsys, tmp_path):
    """--move-budget/--budget-reserve reach the sandbox: an act of ~10 ms against
    a budget of 1 ms per decision plus 0.1 s fails with a timeout charged to
    it, and the remaining matchups are not played as if nothing happened."""
    path = tmp_path / "slow.py"
    path.write_text(SLOW_ACT_POLICY)
    code, _out, err = run_cli(capsys, "eval", str(path), "--game", SMALL_RRPS, "--episodes", "2", "--workers", "1",
                              "--move-budget", "0.001", "--budget-reserve", "0.1")
    assert code != 0
    assert "ran out of the policy's time budget" in err and "move_budget 1 ms per decision" in err, err


def test_eval_shows_the_policys_timing(capsys):
    report = eval_json(capsys, "seed:frequency_counter", "--game", SMALL_RRPS, "--episodes", "2")
    assert report["timing"]["act_calls"] > 0 and 0 < report["timing"]["act_max"] < 1.0
    code, out, _err = run_cli(capsys, "eval", "seed:frequency_counter", "--game", SMALL_RRPS, "--episodes", "2",
                              "--workers", "1")
    assert code == 0 and "timing: act: " in out and "per call on average" in out


def test_eval_says_what_the_policy_printed_and_that_it_is_discarded(capsys, tmp_path):
    """Issue 29 item 11: printed output is counted in the host and reported,
    with its first line cleaned of escape sequences."""
    path = tmp_path / "loud.py"
    path.write_text(
        "class Policy:\n    def __init__(self, player, game):\n        print('\\x1b[2Jhi there')\n\n"
        "    def act(self, obs):\n        print('y' * 999)\n        return 0\n"
    )
    code, out, _err = run_cli(capsys, "eval", str(path), "--game", SMALL_RRPS, "--episodes", "2", "--workers", "1")
    assert code == 0
    said = " ".join(out.split())
    assert "bytes to stdout/stderr, discarded" in said and '"\\x1b[2Jhi there"' in said, out
    assert "\x1b" not in out
    report = eval_json(capsys, str(path), "--game", SMALL_RRPS, "--episodes", "2", "--workers", "1")
    assert report["timing"]["printed_bytes"] >= 1000 * 10, report["timing"]
    quiet = eval_json(capsys, "seed:frequency_counter", "--game", SMALL_RRPS, "--episodes", "2")
    assert quiet["timing"]["printed_bytes"] == 0
