"""What the manual promises for names and marks (issue 28.5): typos point at --help, edits show ✎, the Ray hint."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from csro_tui.cli import main
from csro_tui.errors import ConfigError
from csro_tui.sessions.store import EVENTS_FILE

EXAMPLES = Path(__file__).resolve().parents[2] / "docs" / "examples"


@pytest.mark.parametrize("argv, message", [
    (["run", "--game", "kuhn_pokr"], "unknown game 'kuhn_pokr' (did you mean kuhn_poker"),
    (["run", "--oracle", "best-respons"], "unknown oracle 'best-respons' (did you mean best-response?); known oracles: "),
    (["run", "--solver", "nsh"], "unknown meta-solver 'nsh' (did you mean nash?); known solvers: nash, "),
    (["run", "--seeds", "always_bt"], "kuhn_poker has no seed policy 'always_bt' (did you mean always_bet?); seeds: "),
    (["eval", "--game", "kuhn_poker", "seed:always_bt"], "has no seed policy 'always_bt' (did you mean always_bet?)"),
    (["eval", "--game", "kuhn_poker", "alwys_bet"], "(did you mean seed:always_bet"),
    (["games", "kuhn_pokr"], "unknown game 'kuhn_pokr'"),
    (["crosstable", "--game", "kuhn_pokr"], "unknown game 'kuhn_pokr'"),
])
def test_an_unknown_name_gets_did_you_mean_the_list_and_the_help_pointer(tmp_path, capsys, argv, message):
    if argv[0] == "run":
        argv = [*argv, "--iterations", "0", "--session-dir", str(tmp_path)]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("csro: error: ") and message in err
    assert err.endswith(f" (see csro {argv[0]} --help)\n") and err.count("\n") == 1
    assert not any(tmp_path.iterdir())  # no session made


def test_other_errors_get_no_help_pointer(tmp_path, capsys):
    assert main(["replay", "no-such-session", "--session-dir", str(tmp_path)]) == 2
    assert "--help" not in capsys.readouterr().err


def test_an_edited_member_shows_the_pen_in_replay_and_export(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(EXAMPLES.parent.parent)
    assert main(["run", "--game", "kuhn_poker", "--oracle", "best-response", "--iterations", "2",
                 "--review", "script:docs/examples/review.jsonl", "--session-dir", str(tmp_path / "s")]) == 0
    (session,) = [p.name for p in (tmp_path / "s").iterdir() if (p / EVENTS_FILE).exists()]
    capsys.readouterr()
    assert main(["replay", session, "--session-dir", str(tmp_path / "s")]) == 0
    out = capsys.readouterr().out
    assert "best-response ✎ script:review.jsonl" in out and "edited by" not in out
    assert main(["export", session, "--session-dir", str(tmp_path / "s"), "--out", str(tmp_path / "x")]) == 0
    (edited,) = [p for p in (tmp_path / "x" / "policies").iterdir() if "✎" in p.read_text(encoding="utf-8")]
    assert "# origin: best-response ✎ script:review.jsonl;" in edited.read_text(encoding="utf-8")
    assert "| best-response ✎ script:review.jsonl |" in (tmp_path / "x" / "report.md").read_text(encoding="utf-8")


def test_the_missing_ray_message_gives_the_readme_install(monkeypatch):
    from csro_tui.evaluation import ray_backend

    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` raises ImportError
    with pytest.raises(ConfigError) as error:
        ray_backend._ray()
    assert str(error.value) == ("the ray backend needs Ray, which is not installed: "
                                "run .venv/bin/pip install -e '.[ray]' in the csro-tui checkout")
