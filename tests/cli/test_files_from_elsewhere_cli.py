"""`csro export`, `sessions`, `repair` and `replay` given crafted sessions (issue 35): one
line of error, never a traceback, nothing written outside the chosen folder, every other
session still listed."""

from __future__ import annotations

import json

from csro_tui.cli import main
from tests.sessions.crafted import (
    BENCHMARK_LINE,
    P2_ADDED_LINE,
    good_copy,
    nested_line,
    recorded,
    renamed_id,
    tree,
    write_log,
)

# The id: from exports/<out>/policies/ up to a venv's editable finder.
TRAVERSAL = "../../../.venv/lib/python3.11/site-packages/__editable___csro_tui_0_1_0"


def _one_line_error(capsys) -> str:
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err + captured.out
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1, captured.err
    return lines[0]


def test_export_of_a_session_with_a_path_for_an_id_writes_nothing_anywhere(tmp_path, capsys):
    sessions = tmp_path / "work" / "sessions"
    write_log(sessions / "received", renamed_id(recorded(), "p2", TRAVERSAL))
    # what the attack aimed at, where it would have landed from exports/out/policies/
    finder = tmp_path / "work" / ".venv" / "lib" / "python3.11" / "site-packages"
    finder.mkdir(parents=True)
    before = tree(tmp_path)
    out = tmp_path / "work" / "exports" / "out"
    code = main(["export", "received", "--out", str(out), "--session-dir", str(sessions)])
    assert code != 0
    error = _one_line_error(capsys)
    assert f"line {P2_ADDED_LINE}: corrupt event" in error and "is not an id" in error
    assert tree(tmp_path) == before  # not even the output folder: the log is refused first


def test_export_into_a_folder_whose_links_lead_out_is_refused(tmp_path, capsys):
    sessions = tmp_path / "sessions"
    good_copy(sessions / "good")
    outside = tmp_path / "outside"
    outside.mkdir()
    out = tmp_path / "received-export"
    out.mkdir()
    (out / "policies").symlink_to(outside)
    before = tree(outside)
    code = main(["export", "good", "--out", str(out), "--session-dir", str(sessions)])
    assert code != 0
    assert "leads outside the folder" in _one_line_error(capsys)
    assert tree(outside) == before == {}
    assert list(out.iterdir()) == [out / "policies"]  # nothing half written beside it


def test_sessions_lists_every_session_beside_a_deeply_nested_log(tmp_path, capsys):
    good_copy(tmp_path / "good")
    good_copy(tmp_path / "good-too")
    lines = [json.dumps(record) for record in recorded()][:BENCHMARK_LINE - 1] + [nested_line(BENCHMARK_LINE)]
    write_log(tmp_path / "nested", lines=lines + [json.dumps(recorded()[BENCHMARK_LINE])])
    code = main(["sessions", "--session-dir", str(tmp_path)])
    captured = capsys.readouterr()
    assert code == 0 and "Traceback" not in captured.out + captured.err
    assert "3 sessions" in captured.out
    listed = " ".join(captured.out.split())  # the table wraps long cells
    assert "good " in listed and "good-too " in listed
    assert f"line {BENCHMARK_LINE}: corrupt event" in listed and "nested deeper than 64 levels" in listed


def test_replay_and_repair_of_a_nested_log(tmp_path, capsys):
    lines = [json.dumps(record) for record in recorded()]
    lines.insert(BENCHMARK_LINE - 1, nested_line(BENCHMARK_LINE, depth=1_000_000))
    write_log(tmp_path / "nested", lines=lines)
    code = main(["replay", "nested", "--session-dir", str(tmp_path)])
    assert code != 0
    assert f"line {BENCHMARK_LINE}: corrupt event" in _one_line_error(capsys)

    assert main(["repair", "nested", "--session-dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert f"kept events 1-{BENCHMARK_LINE - 1}" in out and "nested deeper than 64 levels" in out
    assert main(["replay", "nested", "--session-dir", str(tmp_path)]) == 0
    assert "Traceback" not in capsys.readouterr().err


def test_a_review_script_cannot_read_files_outside_its_folder(tmp_path, capsys):
    secret = tmp_path / "secret.txt"
    secret.write_text("class Policy: pass  # a private key\n")
    folder = tmp_path / "received"
    folder.mkdir()
    script = folder / "review.jsonl"
    script.write_text('{"action": "edit", "path": "../secret.txt"}\n')
    code = main(["run", "--game", "kuhn_poker", "--oracle", "best-response", "--iterations", "1",
                 "--review", f"script:{script}", "--session-dir", str(tmp_path / "sessions")])
    assert code != 0
    error = _one_line_error(capsys)
    assert "line 1" in error and "leads outside the folder" in error
    assert not (tmp_path / "sessions").exists() or "private key" not in "".join(
        path.read_text() for path in (tmp_path / "sessions").rglob("events.jsonl"))


def test_a_sessions_directory_named_like_markup_is_listed_in_a_terminal(tmp_path, capsys, monkeypatch):
    """The table's title names the directory (csro.toml may choose it): shown, never parsed as markup."""
    sessions = tmp_path / "[bold]odd[/oops]"
    good_copy(sessions / "good")
    monkeypatch.setenv("FORCE_COLOR", "1")  # rich: a terminal, so the table (not the piped columns) is drawn
    monkeypatch.setenv("COLUMNS", "200")
    assert main(["sessions", "--session-dir", str(sessions)]) == 0
    out = capsys.readouterr().out
    assert "┏" in out and "[bold]odd[/oops]" in out


def test_compare_refuses_a_sweep_manifest_whose_cells_are_paths_or_nested(tmp_path, capsys):
    good_copy(tmp_path / "good")
    outside = tmp_path.parent / f"{tmp_path.name}-victim"
    good_copy(outside)  # a session outside the sessions directory, which the manifest points at
    for name, manifest in [
        ("evil", json.dumps({"cells": [{"session": "good", "label": "ok"},
                                       {"session": f"../{outside.name}", "label": "=HYPERLINK(1)"}]})),
        ("deep", '{"cells": ' + "[" * 100_000 + "]" * 100_000 + "}"),
    ]:
        (tmp_path / "sweeps" / name).mkdir(parents=True)
        (tmp_path / "sweeps" / name / "manifest.json").write_text(manifest)
        code = main(["compare", "--sweep", name, "--session-dir", str(tmp_path), "--out", str(tmp_path / "out")])
        assert code != 0
        error = _one_line_error(capsys)
        assert "manifest.json" in error and ("cell 2 is not a sweep cell" in error or "nested deeper" in error), error
    assert not (tmp_path / "out").exists()
