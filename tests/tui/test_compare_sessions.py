"""Marking sessions in the sessions list and the "Compare sessions" screen (pilot and snapshots)."""

from __future__ import annotations

import pytest
from textual.widgets import DataTable

from csro_tui.experiments.compare import LLMTotals, SessionSummary, compare_sessions, load_summaries
from csro_tui.tui.backend import Backend
from csro_tui.tui.screens.compare_sessions import CompareSessionsScreen
from csro_tui.tui.screens.sessions import SessionsScreen
from tests.tui.helpers import wait_until
from tests.tui.sample import ScreenApp

SWEEP = """
name = "tui"
iterations = 2
seeds = [1, 2]
[grid]
oracle = ["best-response", "seed"]
[options]
game = "kuhn_poker"
"""


@pytest.fixture(scope="module")
def swept(tmp_path_factory):
    from csro_tui.experiments.scheduler import run_sweep
    from csro_tui.experiments.sweep_file import read_sweep

    tmp = tmp_path_factory.mktemp("tui-compare")
    (tmp / "sweep.toml").write_text(SWEEP, encoding="utf-8")
    sweep = read_sweep(tmp / "sweep.toml")
    assert run_sweep(sweep, tmp / "sessions", workers=2).count("done") == 4
    return tmp / "sessions"


@pytest.mark.parametrize("size", [(160, 48), (80, 24)])  # one row a session, or two lines (narrow)
async def test_marked_sessions_open_compare_with_the_figures_of_csro_compare(swept, size):
    backend = Backend(swept)
    app = ScreenApp(lambda: SessionsScreen(backend))
    async with app.run_test(size=size) as pilot:
        await wait_until(pilot, lambda: app.screen.query_one(DataTable).row_count == 4, "the sessions list")
        table = app.screen.query_one(DataTable)
        await pilot.press("space", "space", "space")  # marks three rows, the cursor moving down
        await pilot.press("up", "space")  # and unmarks the third again
        marked = list(app.screen.marked)
        assert len(marked) == 2
        first_cells = [str(table.get_cell_at((row, 0))) for row in range(table.row_count)]
        assert sum(cell.startswith("● ") for cell in first_cells) == 2
        await pilot.press("c")
        await wait_until(pilot, lambda: isinstance(app.screen, CompareSessionsScreen) and app.screen.rows is not None,
                         "the comparison")
        screen = app.screen
        expected = compare_sessions(load_summaries(backend.store, marked))
        assert [(r.label, r.final.mean, r.best.mean, len(r.sessions)) for r in screen.rows] == \
               [(r.label, r.final.mean, r.best.mean, len(r.sessions)) for r in expected]
        shown = screen.query_one("#compare-table", DataTable)
        assert shown.row_count == len(expected)
        assert "per iteration" in str(screen.query_one("#compare-chart").render())
        await pilot.press("escape")
        assert isinstance(app.screen, SessionsScreen)


def _summary(session_id: str, oracle: str, values: list[float], seconds: float) -> SessionSummary:
    return SessionSummary(
        session_id=session_id, configuration={"game": "kuhn_poker", "oracle": oracle, "solver": "nash"},
        metric="exploitability", iterations=list(range(len(values))), values=list(values),
        stderrs=[None] * len(values), seconds=[seconds * i for i in range(len(values))], final=values[-1],
        final_stderr=None, best=min(values), completed_iterations=len(values) - 1, wall_seconds=seconds * len(values),
        population=len(values), accepted=len(values) - 1, rejected=1, llm=LLMTotals(), closed="completed")


def fixed_rows(backend, session_ids):
    summaries = [
        _summary("a1", "best-response", [0.4583, 0.25, 0.125, 0.0833, 0.0417], 2.0),
        _summary("a2", "best-response", [0.4583, 0.2917, 0.1667, 0.0833, 0.0556], 2.5),
        _summary("b1", "seed", [0.4583, 0.3333, 0.2778, 0.2778, 0.2778], 1.0),
        _summary("b2", "seed", [0.4583, 0.375, 0.25, 0.2361, 0.2222], 1.5),
    ]
    return compare_sessions(summaries)


@pytest.mark.parametrize("size", [pytest.param((80, 24), id="80x24"), pytest.param((160, 48), id="160x48")])
def test_compare_sessions_snapshot(snap_compare, tmp_path, size):
    app = ScreenApp(lambda: CompareSessionsScreen(Backend(tmp_path), ["a1", "a2", "b1", "b2"], load=fixed_rows))

    async def loaded(pilot):
        await wait_until(pilot, lambda: app.screen.rows is not None, "the comparison")
        await pilot.pause()

    assert snap_compare(app, terminal_size=size, run_before=loaded)


def mixed_rows(backend, session_ids):
    """A Kuhn configuration (exploitability) and an RRPS one (AggScore, other units)."""
    import dataclasses

    rrps = [dataclasses.replace(_summary(f"r{n}", "seed", [-1400.0, -900.0, -500.0], 3.0), metric="AggScore",
                                configuration={"game": "rrps", "oracle": "seed", "solver": "nash"}, best=-500.0)
            for n in (1, 2)]
    kuhn = [_summary(f"k{n}", "best-response", [0.4583, 0.25, 0.125], 2.0) for n in (1, 2)]
    return compare_sessions(kuhn + rrps)


async def test_sessions_of_different_games_get_one_chart_per_figure_never_one_axis(tmp_path):
    from textual.widgets import Static

    from csro_tui.experiments.compare import charts_by_metric

    rows = mixed_rows(None, [])
    charts = charts_by_metric(rows)
    assert [metric for metric, _ in charts] == ["exploitability", "AggScore"]
    assert [[index for index, _ in indexed] for _, indexed in charts] == [[0], [1]]  # the table's letters A, B
    app = ScreenApp(lambda: CompareSessionsScreen(Backend(tmp_path), ["k1", "k2", "r1", "r2"], load=mixed_rows))
    async with app.run_test(size=(160, 48)) as pilot:
        await wait_until(pilot, lambda: app.screen.rows is not None, "the comparison")
        chart = str(app.screen.query_one("#compare-chart", Static).render())
        assert "2 figures (exploitability, AggScore): one chart each" in chart
        kuhn_part, rrps_part = chart.split("AggScore per iteration")
        assert "exploitability per iteration" in kuhn_part
        assert "-1400" not in kuhn_part and "0.4583" not in rrps_part  # each axis spans its own figure only
        assert "B" in rrps_part and "B" not in kuhn_part.split("exploitability per iteration")[1]
