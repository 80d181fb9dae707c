"""A newcomer's second look at the CLI: bare `csro` takes the TUI's options, flag typos, pipes, figures."""

from __future__ import annotations

import pytest

from csro_tui.cli import main


# ------------------------------------------------------ bare csro is csro tui


class LaunchRecorder:
    """Stands in for the Textual app: records what `csro` would open instead of opening it."""

    launched: list[dict] = []

    def __init__(self, options, *, session, sessions_dir, show_start):
        LaunchRecorder.launched.append({"session": session, "sessions_dir": str(sessions_dir), "show_start": show_start})
        self.return_code = 0

    def run(self) -> None:
        pass


@pytest.fixture
def recorded_launches(monkeypatch):
    import csro_tui.tui.app

    LaunchRecorder.launched = []
    monkeypatch.setattr(csro_tui.tui.app, "CsroApp", LaunchRecorder)
    return LaunchRecorder.launched


def test_bare_csro_takes_the_tui_options(tmp_path, recorded_launches):
    assert main(["--sessions-dir", str(tmp_path)]) == 0
    assert recorded_launches == [{"session": None, "sessions_dir": str(tmp_path), "show_start": True}]


def test_bare_csro_opens_a_session_by_id(tmp_path, recorded_launches):
    session = tmp_path / "20261202-120000-kuhn_poker-seed"
    session.mkdir()
    (session / "events.jsonl").write_text("")
    assert main(["--sessions-dir", str(tmp_path), session.name]) == 0
    assert main([session.name, "--sessions-dir", str(tmp_path)]) == 0
    assert [launch["session"] for launch in recorded_launches] == [session.name, session.name]


def test_bare_csro_with_an_unknown_session_is_one_line(tmp_path, capsys, recorded_launches):
    assert main(["--sessions-dir", str(tmp_path), "20261202-nosuch"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("csro: error: no session '20261202-nosuch'") and err.count("\n") == 1
    assert recorded_launches == []


def test_a_near_miss_of_a_command_is_still_an_unknown_command(capsys, recorded_launches):
    with pytest.raises(SystemExit):
        main(["sesions"])
    assert "did you mean sessions?" in capsys.readouterr().err and recorded_launches == []


# ---------------------------------------------------------------- flag typos


@pytest.mark.parametrize(
    "argv, expected",
    [
        (["run", "--game", "kuhn_poker", "--iteratons", "2"],
         "csro run: error: unknown option --iteratons (did you mean --iterations?) (see csro run --help)"),
        (["games", "kuhn_poker", "--jsn"], "csro games: error: unknown option --jsn"),
        (["sessions", "extra"], "csro sessions: error: unexpected argument 'extra' (see csro sessions --help)"),
        (["--sessions-dr", "x"], "csro tui: error: unknown option --sessions-dr (did you mean --sessions-dir?)"),
    ],
)
def test_an_unknown_option_is_named_with_a_suggestion_and_its_command_s_help(capsys, argv, expected):
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert expected in err and err.count("\n") == 1


# ------------------------------------------------------- the example obs label


@pytest.mark.parametrize("game", ["kuhn_poker", "rrps"])
def test_the_example_observation_s_label_says_which_decision_it_shows(game, capsys):
    import json
    import re

    from csro_tui.games.registry import get_game

    assert main(["games", game]) == 0
    out = capsys.readouterr().out
    label, shown = re.search(r"^An example obs \((.*)\):\n  (.*)$", out, re.M).groups()
    observation, decision = get_game(game).example_decision(player=0, decisions=3)
    assert json.loads(shown) == observation
    ordinal = {1: "1st", 2: "2nd", 3: "3rd"}[decision]
    assert label.startswith(f"player 0 at its {ordinal} decision")
    assert ("the episode ended there" in label) == (decision < 3)


def test_kuhn_s_example_is_player_0_s_first_and_only_decision():
    from csro_tui.games.registry import get_game

    observation, decision = get_game("kuhn_poker").example_decision(player=0, decisions=3)
    assert decision == 1 and observation["betting"] == [[]]  # nothing bet yet: the opening decision


def test_counted_and_ordinal():
    from csro_tui.numbers import counted, ordinal

    assert [counted(n, "iteration") for n in (0, 1, 2)] == ["0 iterations", "1 iteration", "2 iterations"]
    assert counted(1, "policy", "policies") == "1 policy" and counted(3, "policy", "policies") == "3 policies"
    assert [ordinal(n) for n in (1, 2, 3, 4, 11, 12, 13, 21, 22, 101, 111)] == [
        "1st", "2nd", "3rd", "4th", "11th", "12th", "13th", "21st", "22nd", "101st", "111th"]


# ------------------------------------------- why an invalid proposal was rejected


@pytest.fixture(scope="module")
def crashing_file_session(tmp_path_factory):
    """The human oracle proposes a file with a syntax error twice; a script rejects both."""
    import io
    from contextlib import redirect_stdout

    root = tmp_path_factory.mktemp("crashing")
    policy = root / "bad.py"
    policy.write_text("class Policy:\n    def act(self, obs)\n        return 0\n")
    script = root / "review.jsonl"
    script.write_text('{"action": "reject", "reason": "regenerate: the reviewer asked for a different proposal"}\n'
                      '{"action": "reject", "reason": "same again"}\n')
    out = io.StringIO()
    with redirect_stdout(out):
        assert main(["run", "--game", "kuhn_poker", "--oracle", "human", "--oracle-option", f"path={policy}",
                     "--iterations", "1", "--max-attempts", "2", "--review", f"script:{script}",
                     "--sessions-dir", str(root / "s")]) == 0
    (session,) = [p.name for p in (root / "s").iterdir()]
    return root / "s", session, out.getvalue()


def test_replay_shows_why_an_invalid_proposal_failed_next_to_the_reviewer_s_words(crashing_file_session, capsys):
    root, session, _ = crashing_file_session
    assert main(["replay", session, "--sessions-dir", str(root)]) == 0
    out = capsys.readouterr().out
    assert "invalid: line 2: syntax error" in out
    assert "regenerate: the reviewer asked for a different proposal" in out


# ------------------------------------------------------------- empty --seeds


@pytest.mark.parametrize("value", ["", ",,", " ", "always_bet,,always_pass"])
def test_empty_seed_names_are_refused_in_one_line_and_record_nothing(tmp_path, capsys, value):
    with pytest.raises(SystemExit) as exit_info:
        main(["run", "--game", "kuhn_poker", "--seeds", value, "--sessions-dir", str(tmp_path / "s")])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("csro run: error: argument --seeds: ") and err.count("\n") == 1
    assert not (tmp_path / "s").exists()


# ---------------------------------------------------- crosstable's master seed


def test_crosstable_draws_a_fresh_seed_and_prints_how_to_repeat_it(tmp_path, capsys):
    import json
    import re

    argv = ["crosstable", "--game", "rrps(num_repetitions=10)", "--episodes", "2", "--workers", "1",
            "--participants", "randbot", "seed:beat_last"]
    seeds, tables = [], []
    for index in range(2):
        out_file = tmp_path / f"fresh{index}.json"
        assert main([*argv, "--out", str(out_file)]) == 0
        seed = int(re.search(r"^seed (\d+) \(repeat this cross-table with --seed \1\)$", capsys.readouterr().out,
                             re.M).group(1))
        seeds.append(seed)
        tables.append(json.loads(out_file.read_text()))
        assert tables[-1]["seed"] == seed
    assert seeds[0] != seeds[1]  # 63-bit seeds from os.urandom: equal only by a 2**-63 chance
    repeated = tmp_path / "repeated.json"
    assert main([*argv, "--seed", str(seeds[0]), "--out", str(repeated)]) == 0
    assert json.loads(repeated.read_text())["matrix"] == tables[0]["matrix"]


def test_eval_shows_exploitability_with_the_same_four_decimals_as_the_other_figures(capsys):
    assert main(["eval", "seed:always_bet", "--game", "kuhn_poker"]) == 0
    out = capsys.readouterr().out
    import re

    assert re.search(r"exploitability\s*│?\s*0\.3333\b", out), out
    assert "0.333333" not in out


# ----------------------------------------------------- figures in export/replay


@pytest.fixture(scope="module")
def kuhn_export(tmp_path_factory):
    import io
    from contextlib import redirect_stdout

    root = tmp_path_factory.mktemp("kuhn_export")
    out = io.StringIO()
    with redirect_stdout(out):
        assert main(["run", "--game", "kuhn_poker", "--iterations", "8", "--seed", "1",
                     "--sessions-dir", str(root / "s")]) == 0
        (session,) = [p.name for p in (root / "s").iterdir()]
        assert main(["export", session, "--sessions-dir", str(root / "s"), "--out", str(root / "out")]) == 0
    return root / "s", session, root / "out", out.getvalue()


def test_payoffs_csv_holds_rounded_figures_and_no_float_noise(kuhn_export):
    import csv

    from csro_tui.sessions.state import fold
    from csro_tui.sessions.store import SessionStore

    root, session, out, _ = kuhn_export
    state = fold(SessionStore(root).read(session).events)
    matrix = state.matrix(state.ids)
    assert any(0 < abs(v) < 1e-12 for v in matrix.flatten())  # the noise the CSV must not carry
    rows = list(csv.reader((out / "payoffs.csv").open()))
    cells = [cell for row in rows[1:] for cell in row[1:]]
    assert cells and all("e" not in cell and cell != "-0.0" and len(cell.lstrip("-").replace(".", "").lstrip("0")) <= 12
                         for cell in cells), cells
    for i, row in enumerate(rows[1:]):
        for j, cell in enumerate(row[1:]):
            assert float(cell) == pytest.approx(float(matrix[i, j]), abs=1e-11)


def test_the_report_counts_iterations_as_its_table_numbers_them_and_names_unset_settings(kuhn_export):
    import re

    _, _, out, _ = kuhn_export
    report = (out / "report.md").read_text()
    assert "8 iterations after the seed population (rows 0–8)" in report
    table = report.split("## Iterations")[1].split("##")[0]
    assert [int(n) for n in re.findall(r"^\| (\d+) \|", table, re.M)] == list(range(9))
    assert "`None`" not in report and "| episodes | exact" in report
    assert "AggScore" not in report.split("## Population")[1].split("##")[0]  # Kuhn has no benchmark bots


def test_replay_drops_the_agg_score_column_where_the_game_has_none(kuhn_export, capsys):
    root, session, _, _ = kuhn_export
    assert main(["replay", session, "--sessions-dir", str(root)]) == 0
    population = capsys.readouterr().out.split("population")[1].split("payoff matrix")[0]
    assert "vs meta" in population and "AggScore" not in population


def test_counts_in_cli_output_agree_with_their_nouns(tmp_path, capsys):
    assert main(["run", "--game", "kuhn_poker", "--iterations", "1", "--sessions-dir", str(tmp_path / "s")]) == 0
    out = capsys.readouterr().out
    assert "completed: 1 iteration\n" in out and "1 iterations" not in out
    (session,) = [p.name for p in (tmp_path / "s").iterdir()]
    assert main(["export", session, "--sessions-dir", str(tmp_path / "s"), "--out", str(tmp_path / "out")]) == 0
    assert capsys.readouterr().out.startswith("exported 2 policies,")
    assert "1 iteration after the seed population (rows 0–1)" in (tmp_path / "out" / "report.md").read_text()


def test_stored_number_rounds_away_float_noise():
    from csro_tui.numbers import stored_number

    assert repr(stored_number(-1.3877787807814457e-17)) == "0.0"
    assert repr(stored_number(-1 / 3)) == "-0.333333333333"
    assert repr(stored_number(123.456)) == "123.456"


# ------------------------------------------- repeats of rejected proposals


def _session_events(root):
    from csro_tui.sessions.store import SessionStore

    (session,) = [p.name for p in root.iterdir()]
    return SessionStore(root).read(session).events


@pytest.mark.parametrize("oracle", ["best-response"])
def test_a_deterministic_oracle_says_on_a_retry_that_it_ignores_reasons(tmp_path, oracle):
    import io
    from contextlib import redirect_stdout

    script = tmp_path / "review.jsonl"
    script.write_text('{"action": "reject", "reason": "I want a bluffing policy"}\n"accept"\n')
    with redirect_stdout(io.StringIO()):
        assert main(["run", "--game", "kuhn_poker", "--oracle", oracle, "--iterations", "1", "--review",
                     f"script:{script}", "--sessions-dir", str(tmp_path / "s")]) == 0
    events = _session_events(tmp_path / "s")
    first, second = [e for e in events if e.TYPE == "proposal_created" and e.iteration == 1]
    assert second.proposal.source == first.proposal.source  # deterministic: the same code again
    assert "does not read rejection reasons" not in first.proposal.rationale
    assert "rejected once before (last reason: I want a bluffing policy)" in second.proposal.rationale
    assert "does not read rejection reasons" in second.proposal.rationale
    previewed = [e for e in events if e.TYPE == "proposal_previewed"]
    assert previewed[-1].preview.duplicate_of == first.proposal_id  # and the gate flags the repeat


CRASHING_AT_RUN = "class Policy:\n    def __init__(self, player, game):\n        pass\n\n    def act(self, obs):\n        return 1 / 0\n"
NOT_PARSING = "class Policy:\n    def act(self, obs)\n        return 0\n"


@pytest.mark.parametrize("source", [CRASHING_AT_RUN, NOT_PARSING], ids=["crashes", "does-not-parse"])
def test_the_same_failing_code_as_a_rejected_proposal_is_flagged_as_a_repeat(tmp_path, capsys, source):
    import io
    from contextlib import redirect_stdout

    policy = tmp_path / "mine.py"
    policy.write_text(source)
    script = tmp_path / "review.jsonl"
    script.write_text('{"action": "reject", "reason": "it fails"}\n{"action": "reject", "reason": "still fails"}\n')
    with redirect_stdout(io.StringIO()):
        assert main(["run", "--game", "kuhn_poker", "--oracle", "human", "--oracle-option", f"path={policy}",
                     "--iterations", "1", "--max-attempts", "2", "--review", f"script:{script}",
                     "--sessions-dir", str(tmp_path / "s")]) == 0
    validated = [e for e in _session_events(tmp_path / "s") if e.TYPE == "proposal_validated"]
    assert [e.validation.valid for e in validated] == [False, False]
    assert validated[0].validation.duplicate_of is None
    assert validated[1].validation.duplicate_of == validated[0].proposal_id
    assert "same code as rejected proposal" in validated[1].validation.duplicate_reason
    (session,) = [p.name for p in (tmp_path / "s").iterdir()]
    assert main(["replay", session, "--sessions-dir", str(tmp_path / "s")]) == 0
    assert f"a repeat: same code as {validated[0].proposal_id}" in capsys.readouterr().out


def test_failed_rejected_proposals_count_for_same_code_only():
    import numpy as np

    from csro_tui.engine.duplicates import KnownPolicy, find_duplicate

    failed = KnownPolicy("i1.1", "rejected proposal x (i1.1)", "x = 1\n", {}, False, behaviour_known=False)
    ran = KnownPolicy("i1.2", "rejected proposal y (i1.2)", "y = 2\n", {}, False)
    same_table = lambda source: np.ones((2, 2))  # noqa: E731 - every policy behaves alike here
    assert find_duplicate("z = 3\n", [failed], table_of=same_table) is None
    assert find_duplicate("z = 3\n", [failed, ran], table_of=same_table).of == "i1.2"
    assert find_duplicate("x = 1  # again\n", [failed], table_of=same_table).of == "i1.1"


def test_one_episode_is_said_in_the_singular(capsys):
    assert main(["crosstable", "--game", "rrps(num_repetitions=10)", "--episodes", "1", "--workers", "1",
                 "--participants", "rockbot", "seed:beat_last"]) == 0
    out = capsys.readouterr().out
    assert "1 episode per pair" in out and "1 episodes" not in out
