"""Session logs from elsewhere are data (issue 35): crafted ids, names, types and nesting
are corrupt lines with their numbers; paths built from recorded text stay in their folder;
report.md and payoffs.csv carry recorded text inert."""

from __future__ import annotations

import csv
import json
import os
import re

import pytest

from csro_tui.errors import CsroError, SessionError
from csro_tui.files import (
    MAX_JSON_DEPTH,
    JsonTooLarge,
    UnsafePath,
    csv_cell,
    load_json,
    markdown_text,
    path_inside,
)
from csro_tui.records import PolicyRecord
from csro_tui.sessions.events import PolicyAdded, from_record
from csro_tui.sessions.export import export_session, report_markdown, write_payoffs_csv
from csro_tui.sessions.state import fold
from csro_tui.sessions.store import SessionStore, read_log
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

TRAVERSAL = "../../../.venv/lib/python3.11/site-packages/__editable___csro_tui_0_1_0"


# --- paths ------------------------------------------------------------------------------


def test_path_inside_keeps_names_in_their_folder_and_refuses_every_way_out(tmp_path):
    folder = tmp_path / "out"
    folder.mkdir()
    assert path_inside(folder, "policies", "p0_x.py") == folder / "policies" / "p0_x.py"
    assert path_inside(folder, "sub/fixed.py") == folder / "sub" / "fixed.py"
    (tmp_path / "elsewhere").mkdir()
    (folder / "link").symlink_to(tmp_path / "elsewhere")
    for parts in [("..", "x"), ("../x",), (TRAVERSAL + ".py",), ("/etc/passwd",), ("",), ("a\0b",), (".",),
                  ("link", "x.py")]:
        with pytest.raises(UnsafePath):
            path_inside(folder, *parts)


# --- ids, names and types, checked when a log is read ------------------------------------


def test_a_member_id_that_is_a_path_makes_its_line_corrupt(tmp_path):
    """The issue's attack: member p2 renamed to a path into the venv."""
    directory = write_log(tmp_path / "crafted", renamed_id(recorded(), "p2", TRAVERSAL))
    with pytest.raises(SessionError) as error:
        read_log(directory)
    message = str(error.value)
    assert f"line {P2_ADDED_LINE}: corrupt event" in message and "is not an id" in message
    assert "\n" not in message


@pytest.mark.parametrize("change, words", [
    (lambda r: r[0].update(session_id="../elsewhere"), "session_id '../elsewhere' is not an id"),
    (lambda r: r[8].update(proposal_id="i1/1"), "proposal_id 'i1/1' is not an id"),
    (lambda r: r[8]["proposal"].update(parent=".."), "parent '..' is not an id"),
    (lambda r: r[12]["policy"].update(name="evil\x1b]52;c;aGk=\x07"), "is not a name"),
    (lambda r: r[12]["policy"].update(name=["a list"]), "is not str"),
    (lambda r: r[13]["entries"][0].update(row="=cmd|' /C calc'!A0"), "entry 1 row"),
    (lambda r: r[15].update(population=["p0", "p1/.."]), "population[1]"),
    (lambda r: r[16].update(meta_strategy={"../p0": 1.0}), "meta_strategy key 1"),
    (lambda r: r[17].update(accepted="/tmp/x"), "accepted '/tmp/x'"),
    (lambda r: r[1].update(iteration="zero"), "iteration 'zero' is not int"),
    (lambda r: r[0].update(config=[1]), "config [1] is not dict"),
    (lambda r: r[5].update(benchmark=[1]), "benchmark [1] is not dict"),
    (lambda r: r[13]["entries"][0].update(mean=int("1" + "0" * 400)), "bad payoffs_evaluated event"),
])
def test_bad_ids_names_and_types_are_corrupt_lines_with_their_number(tmp_path, change, words):
    records = recorded()
    change(records)
    line = next(number for number, (old, new) in enumerate(zip(recorded(), records), start=1) if old != new)
    write_log(tmp_path / "s", records)
    with pytest.raises(SessionError) as error:
        read_log(tmp_path / "s")
    assert f"line {line}: " in str(error.value) and words in str(error.value), str(error.value)
    assert "\x1b" not in str(error.value)  # a bad name is quoted with its escapes shown, not sent


# --- nested and oversized JSON ---------------------------------------------------------


def test_json_nesting_is_bounded_exactly_and_brackets_inside_strings_do_not_count():
    deep = MAX_JSON_DEPTH + 1
    with pytest.raises(JsonTooLarge, match=f"nested deeper than {MAX_JSON_DEPTH}"):
        load_json(b"[" * deep + b"]" * deep)  # parses, but deeper than the bound
    assert load_json(b"[" * (deep - 1) + b"]" * (deep - 1)) is not None
    assert load_json(json.dumps({"source": "[[[{{{" * 1000}).encode())["source"].startswith("[[[")
    for text in (b"[" * 1_000_000,  # cut off: json recurses before it finds the end
                 b"[" * 200_000 + b"]" * 200_000, '{"a": ' * 5000 + "1" + "}" * 5000):
        with pytest.raises(JsonTooLarge):
            load_json(text)
    with pytest.raises(JsonTooLarge, match="more than the 100"):
        load_json(b"[" + b"0," * 50 + b"0]", max_bytes=100)


def test_deeply_nested_json_is_a_corrupt_line_and_repair_cuts_it(tmp_path):
    lines = [json.dumps(record) for record in recorded()]
    lines.insert(BENCHMARK_LINE - 1, nested_line(BENCHMARK_LINE))
    lines = lines[:BENCHMARK_LINE + 2]
    store = SessionStore(tmp_path)
    write_log(tmp_path / "nested", lines=lines)
    with pytest.raises(SessionError) as error:
        store.read("nested")
    assert f"line {BENCHMARK_LINE}: corrupt event" in str(error.value)
    assert f"nested deeper than {MAX_JSON_DEPTH} levels" in str(error.value)

    repair = store.repair("nested")
    assert repair.kept_events == BENCHMARK_LINE - 1
    assert repair.dropped[0] == (BENCHMARK_LINE, f"unreadable ({len(lines[BENCHMARK_LINE - 1])} bytes)")
    assert len(store.read("nested").events) == BENCHMARK_LINE - 1
    assert repair.backup.read_text() == "\n".join(lines) + "\n"  # nothing recorded is lost


def test_a_nested_torn_last_line_is_skipped_as_torn(tmp_path):
    lines = [json.dumps(record) for record in recorded()][:3] + [nested_line(4)]
    (tmp_path / "t").mkdir()
    (tmp_path / "t" / "events.jsonl").write_text("\n".join(lines))  # no newline after it: torn
    log = read_log(tmp_path / "t")
    assert len(log.events) == 3 and "nested deeper" in str(log.warnings[0])


def test_one_bad_session_never_hides_the_others(tmp_path):
    good_copy(tmp_path / "good")
    write_log(tmp_path / "nested", lines=[json.dumps(recorded()[0]), nested_line(2)] + ["{}"])
    write_log(tmp_path / "traversal", renamed_id(recorded(), "p2", TRAVERSAL))
    write_log(tmp_path / "wrong-types", change=lambda lines: lines.__setitem__(1, lines[1].replace('"iteration": 0', '"iteration": "0"')))
    infos = {info.id: info for info in SessionStore(tmp_path).list_sessions()}
    assert set(infos) == {"good", "nested", "traversal", "wrong-types"}
    assert infos["good"].error is None and infos["good"].population_size == 3
    assert "line 2" in infos["nested"].error and "nested deeper" in infos["nested"].error
    assert f"line {P2_ADDED_LINE}" in infos["traversal"].error
    assert "line 2" in infos["wrong-types"].error and "is not int" in infos["wrong-types"].error


def test_a_fold_that_fails_on_well_formed_events_is_a_session_error():
    events = [from_record(record) for record in recorded()[:3]]
    events.append(PolicyAdded(policy=PolicyRecord("p0", "again", "src", "seed"), seq=4))
    with pytest.raises(SessionError):
        fold(events)


# --- what the export writes -------------------------------------------------------------


def _state_with_member(member_id: str, name: str = "x"):
    """A state whose population holds `member_id`, made in-process (not read from a log:
    the export checks its paths itself too)."""
    events = [from_record(record) for record in recorded()]
    events.insert(3, PolicyAdded(policy=PolicyRecord(member_id, name, "class Policy: ...", "seed"), seq=4))
    for seq, event in enumerate(events, start=1):
        event.seq = seq
    return fold(events)


def test_export_writes_nothing_outside_its_folder_even_for_an_unchecked_id(tmp_path):
    out = tmp_path / "box" / "out"
    out.parent.mkdir()
    before = tree(tmp_path)
    with pytest.raises(CsroError):
        export_session(_state_with_member("../../escaped"), out)
    after = tree(tmp_path)
    assert set(after) - set(before) <= {"box/out", "box/out/policies"}  # only the (empty) folder it was asked for
    assert not any(out.rglob("*.py")), "nothing half written"


def test_export_refuses_a_received_folder_whose_links_lead_out(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    out = tmp_path / "received"
    out.mkdir()
    (out / "policies").symlink_to(outside)
    (out / "report.md").symlink_to(tmp_path / "victim.md")
    state = fold(read_log(good_copy(tmp_path / "good")).events)
    with pytest.raises(UnsafePath):
        export_session(state, out)
    assert list(outside.iterdir()) == [] and not (tmp_path / "victim.md").exists()


def test_the_report_shows_recorded_html_and_markdown_as_text(tmp_path):
    records = recorded()
    html = '<img src=x onerror="alert(1)"> | [click](javascript:alert(1)) `code` *bold*'
    records[12]["policy"]["name"] = html  # member p1
    records[8]["proposal"]["name"] = html
    records[11]["reason"] = "<script>alert(2)</script>"
    records[0]["game"] = "rrps(num_repetitions=20)`<b>x</b>"
    state = fold(read_log(write_log(tmp_path / "s", records)).events)
    report = report_markdown(state)
    for raw in ("<img", "<script"):
        assert raw not in report, raw
    assert not re.search(r"(?<!\\)\]\(javascript", report)  # a link only when the ] is unescaped
    # inside a code span HTML is shown, not rendered; the recorded backtick cannot end the span early
    assert report.count("<b>") == 1 and "`rrps(num_repetitions=20)'<b>x</b>`" in report
    assert "&lt;img src=x onerror=\"alert(1)\"&gt; \\| \\[click\\](javascript:alert(1)) \\`code\\` \\*bold\\*" in report
    header = next(line for line in report.splitlines() if line.startswith("| id | name |"))
    [member] = [line for line in report.splitlines() if line.startswith("| p1 |")]
    cells = re.compile(r"(?<!\\)\|")  # the table's own pipes: the name's are escaped
    assert len(cells.findall(member)) == len(cells.findall(header))


def test_markdown_text_escapes_every_mark():
    assert markdown_text("a_b*c`d[e](f)|g<h>&i\\j![k]~m\nn") == \
        "a_b\\*c\\`d\\[e\\](f)\\|g&lt;h&gt;&amp;i\\\\j!\\[k\\]\\~m n"


def test_csv_cells_that_start_like_a_formula_are_neutralised_and_numbers_stay_numbers(tmp_path):
    assert [csv_cell(v) for v in ["=1+1", "+cmd|' /C calc'!A0", "-1+1", "@SUM(A1)", "\tx", "\rx", "-2.5", "+1", "-inf",
                                  "x=1"]] == \
        ["'=1+1", "'+cmd|' /C calc'!A0", "'-1+1", "'@SUM(A1)", "'\tx", "'\rx", "-2.5", "+1", "-inf", "x=1"]
    assert [csv_cell(v) for v in [-2.5, 0, None, True]] == [-2.5, 0, None, True]
    state = _state_with_member("=HYPERLINK(\"http://evil\")")
    path = tmp_path / "payoffs.csv"
    write_payoffs_csv(state, path)
    rows = list(csv.reader(path.open()))
    assert "'=HYPERLINK(\"http://evil\")" in rows[0] and not any(cell.startswith("=") for row in rows for cell in row)
    negatives = [float(cell) for row in rows[1:] for cell in row[1:] if cell and cell.startswith("-")]
    assert negatives, "the recorded matrix has negative payoffs, written as plain numbers"


def test_an_honest_export_is_unchanged_in_shape(tmp_path):
    state = fold(read_log(good_copy(tmp_path / "good")).events)
    written = export_session(state, tmp_path / "out")
    assert sorted(p.name for p in written if p.parent.name == "policies") == \
        ["p0_beat_last.py", "p1_markov_predictor.py", "p2_cycle.py"]
    assert all(os.path.commonpath([p, tmp_path / "out"]) == str(tmp_path / "out") for p in written)
