"""The start screen given a crafted session beside good ones (issue 35): every session
listed, the bad one with its one-line error; opening it says why, and esc comes back to the list."""

from __future__ import annotations

import json

from textual.widgets import DataTable

from csro_tui.tui.app import CsroApp
from csro_tui.tui.screens.start import StartScreen
from tests.sessions.crafted import BENCHMARK_LINE, good_copy, nested_line, recorded, write_log
from tests.tui.helpers import notifications, start_screen, wait_until


async def test_a_deeply_nested_log_hides_no_other_session_on_the_start_screen(tmp_path):
    good_copy(tmp_path / "good")
    lines = [json.dumps(record) for record in recorded()][:BENCHMARK_LINE - 1] + [nested_line(BENCHMARK_LINE)]
    write_log(tmp_path / "nested", lines=lines + [json.dumps(recorded()[BENCHMARK_LINE])])
    app = CsroApp(sessions_dir=tmp_path)
    async with app.run_test(size=(160, 48)) as pilot:
        await start_screen(pilot, app)
        table = app.screen.query_one("#session-list", DataTable)
        await wait_until(pilot, lambda: table.row_count == 2, "both sessions listed")
        rows = {str(row.key.value): " ".join(str(cell) for cell in table.get_row(row.key)) for row in table.ordered_rows}
        assert set(rows) == {"good", "nested"}
        assert "completed" in rows["good"]
        assert "unreadable" in rows["nested"] and f"line {BENCHMARK_LINE}: corrupt event (JSON nested deeper" in rows["nested"]

        table.move_cursor(row=list(rows).index("nested"))
        table.focus()
        await pilot.press("enter")
        await wait_until(pilot, lambda: any(f"line {BENCHMARK_LINE}" in n for n in notifications(app)),
                         "the reason it cannot open")
        await pilot.press("escape")
        await wait_until(pilot, lambda: isinstance(app.screen, StartScreen), "back on the start screen")
        await wait_until(pilot, lambda: app.screen.query_one("#session-list", DataTable).row_count == 2,
                         "both sessions listed again")


async def test_the_external_editor_gets_a_file_inside_its_folder_whatever_the_proposal_is_named(tmp_path, monkeypatch):
    """The proposal's name came from the oracle (or a resumed log): it names the editor's file
    only as letters, digits and _, inside the temporary folder."""
    import contextlib
    import dataclasses
    import sys

    from csro_tui.tui.screens.review import ReviewScreen
    from tests.tui.sample import ScreenApp, sample_review

    seen = tmp_path / "seen.txt"
    script = tmp_path / "editor.py"
    script.write_text(f"import sys\nopen({str(seen)!r}, 'w').write(sys.argv[1])\n"
                      "open(sys.argv[1], 'a').write('# edited\\n')\n")
    monkeypatch.setenv("EDITOR", f"{sys.executable} {script}")
    monkeypatch.delenv("VISUAL", raising=False)
    review = dataclasses.replace(sample_review(), name="../../../../tmp/escaped")
    app = ScreenApp(lambda: ReviewScreen(review))
    app.suspend = contextlib.nullcontext
    async with app.run_test() as pilot:
        await pilot.press("E")
        await pilot.pause()
    used = seen.read_text()
    assert used.endswith("/tmp_escaped.py") and "/../" not in used
    assert app.results and app.results[0].kind == "edit" and app.results[0].source.endswith("# edited\n")
