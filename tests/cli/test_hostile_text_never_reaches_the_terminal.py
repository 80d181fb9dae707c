"""Issue 35: names, reasons, notes and messages from a received session (or a sweep
file) reach no terminal raw: every command that prints them shows escape
sequences visibly and never parses them as Rich markup.

The crafted session is a real recorded one (tests/data/sessions_v1) whose
free-text fields carry OSC 52 (clipboard), OSC 0 (title), OSC 8 (link),
CSI 2J, an 8-bit CSI (C1), a bidi override and invalid Rich markup.  Each
command's whole output (stdout and stderr, encoded) is scanned for the bytes
a terminal acts on.  Names are checked when the log is read (one line, no
control characters: sessions/events.py), so a session whose names carry them
is refused as corrupt at that line, and that refusal is printed cleanly too.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from csro_tui.cli import main

SOURCE = Path(__file__).parents[1] / "data" / "sessions_v1" / "kuhn_poker-best-response-reviewed"
SESSION = "20261203-101923-kuhn_poker-best-response"
HOSTILE = ("\x1b]52;c;ZXZpbA==\x07\x1b]0;pwned\x07\x1b]8;;http://evil\x1b\\link\x1b]8;;\x1b\\"
           "\x1b[2J\x9b31m\u202e[/oops][bold]")
# Free-text fields of the log: who decided and why, notes, messages (names: see the module's docstring).
TEXT_FIELDS = ("reason", "decided_by", "note", "message", "progress", "duplicate_reason", "rationale")
# What a terminal acts on: C0 but tab/newline/CR... (ESC, BEL), DEL, C1 (8-bit CSI/OSC), bidi controls.
UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069]")


def _hostile(value, fields):
    if isinstance(value, dict):
        return {k: (f"{v}{HOSTILE}" if k in fields and isinstance(v, str) else _hostile(v, fields))
                for k, v in value.items()}
    if isinstance(value, list):
        return [_hostile(v, fields) for v in value]
    return value


def _crafted_copy(root: Path, fields) -> Path:
    shutil.copytree(SOURCE, root / SESSION)
    events = root / SESSION / "events.jsonl"
    lines = [json.dumps(_hostile(json.loads(line), fields)) for line in events.read_text().splitlines() if line.strip()]
    events.write_text("\n".join(lines) + "\n")
    return root


@pytest.fixture(scope="module")
def crafted(tmp_path_factory) -> Path:
    return _crafted_copy(tmp_path_factory.mktemp("received"), TEXT_FIELDS)


@pytest.fixture(scope="module")
def crafted_names(tmp_path_factory) -> Path:
    return _crafted_copy(tmp_path_factory.mktemp("names"), ("name",))


def scanned(capsys, argv: list[str]) -> tuple[int, str]:
    code = main(argv)
    captured = capsys.readouterr()
    output = captured.out + captured.err
    found = UNSAFE.findall(output)
    assert not found, f"{argv}: {sorted(set(found))!r} reached the terminal:\n{output}"
    assert "Traceback" not in output, output
    return code, output


@pytest.mark.parametrize("argv", [
    ["replay", SESSION],
    ["replay", SESSION, "--step", "20"],
    ["sessions"],
    ["compare", SESSION],
    ["explain", "--game", "kuhn_poker", f"session:{SESSION}:p1"],
    ["diff", "--game", "kuhn_poker", f"session:{SESSION}:p0", f"session:{SESSION}:p1"],
], ids=lambda argv: " ".join(argv[:2]))
def test_no_escape_reaches_the_terminal_from_a_crafted_session(crafted, capsys, argv):
    code, output = scanned(capsys, [*argv, "--session-dir", str(crafted)])
    assert code == 0, output
    if argv[0] == "replay":
        assert "[/oops][bold]" in output and "\\x1b]52;" in output  # shown visibly, not dropped


def test_export_of_a_crafted_session_prints_nothing_raw(crafted, capsys, tmp_path):
    code, output = scanned(capsys, ["export", SESSION, "--out", str(tmp_path / "out"), "--session-dir", str(crafted)])
    assert code == 0, output


def test_replay_verify_of_a_crafted_session(crafted, capsys):
    code, output = scanned(capsys, ["replay", SESSION, "--verify", "--session-dir", str(crafted)])
    assert code == 0 and "reproduced" in output, output


def test_resuming_a_crafted_session_prints_its_rows_and_summary_visibly(crafted, capsys, tmp_path):
    shutil.copytree(crafted, tmp_path / "copy")
    code, output = scanned(capsys, ["run", "--resume", SESSION, "--iterations", "3", "--review", "auto",
                                    "--session-dir", str(tmp_path / "copy")])
    assert code == 0, output


@pytest.mark.parametrize("argv", [["replay", SESSION], ["export", SESSION, "--out", "unused"]],
                         ids=lambda argv: argv[0])
def test_names_with_escapes_are_refused_at_their_line_and_printed_visibly(crafted_names, capsys, argv):
    code, output = scanned(capsys, [*argv, "--session-dir", str(crafted_names)])
    assert code != 0 and "line 3: corrupt event" in output and "\\x1b]52;" in output, output
    code, output = scanned(capsys, ["sessions", "--session-dir", str(crafted_names)])
    assert code == 0 and "line 3" in output, output  # still listed, with its reason


def test_an_error_message_quoting_a_hostile_name_is_clean(crafted, capsys):
    code, output = scanned(capsys, ["explain", "--game", "kuhn_poker", f"session:{SESSION}:{HOSTILE}",
                                    "--session-dir", str(crafted)])
    assert code != 0 and len(output.strip().splitlines()) == 1, output


def test_a_sweep_name_with_escapes_is_printed_visibly(tmp_path, capsys):
    path = tmp_path / "sweep.toml"
    path.write_text('name = "s\\u001b]0;pwned\\u0007"\niterations = 0\nseeds = [1]\n'
                    '[grid]\noracle = ["seed"]\n[options]\ngame = "kuhn_poker"\n')
    code, output = scanned(capsys, ["sweep", str(path), "--dry-run", "--session-dir", str(tmp_path / "s")])
    assert "pwned" in output or code != 0, output
