"""`csro compare`: per configuration, the sessions' own figures across repeats, with confidence intervals."""

from __future__ import annotations

import csv
import json
import math
import xml.etree.ElementTree as ElementTree
from pathlib import Path

import pytest

from csro_tui.cli import main
from csro_tui.experiments.compare import compare_sessions, estimate, load_summaries, session_summary
from csro_tui.experiments.scheduler import run_sweep
from csro_tui.experiments.sweep_file import read_sweep
from csro_tui.sessions.state import best_metric, fold
from csro_tui.sessions.store import SessionStore
from csro_tui.sessions.summary import iteration_rows, rejections

SWEEP = """
name = "cmp"
iterations = 3
seeds = [1, 2]
[grid]
oracle = ["best-response", "seed"]
solver = ["nash", "prd"]
[options]
game = "kuhn_poker"
"""


@pytest.fixture(scope="module")
def swept(tmp_path_factory) -> tuple[Path, object]:
    tmp = tmp_path_factory.mktemp("compare")
    path = tmp / "sweep.toml"
    path.write_text(SWEEP, encoding="utf-8")
    sweep = read_sweep(path)
    result = run_sweep(sweep, tmp / "sessions", workers=2)
    assert result.count("done") == 8
    return tmp / "sessions", sweep


def test_estimate_is_the_mean_with_a_student_t_interval():
    from scipy import stats

    values = [0.2, 0.25, 0.31, 0.18]
    got = estimate(values)
    low, high = stats.t.interval(0.95, len(values) - 1, loc=sum(values) / 4, scale=stats.sem(values))
    assert got.mean == pytest.approx(sum(values) / 4)
    assert got.half_width == pytest.approx((high - low) / 2)
    assert estimate([0.3], own_stderr=0.05).half_width == 0.05  # one session keeps its own error
    assert estimate([None, 0.3]).n == 1 and estimate([]).mean is None


def test_compare_figures_are_the_sessions_own(swept):
    root, sweep = swept
    store = SessionStore(root)
    ids = [c.session_id for c in sweep.cells]
    rows = compare_sessions(load_summaries(store, ids))
    assert len(rows) == 4 and all(len(r.sessions) == 2 for r in rows)
    for row in rows:
        finals, bests = [], []
        for summary in row.sessions:
            state = fold(store.read(summary.session_id).events)
            figures = [r.metric_value for r in iteration_rows(state) if r.metric_name == "exploitability"]
            assert summary.final == figures[-1] == state.metrics_for(
                max(r.iteration for r in iteration_rows(state) if r.metric_value is not None)).exploitability
            assert (summary.metric, summary.best) == best_metric(state.metrics)
            assert summary.population == len(state.population)
            assert summary.rejected == len(rejections(state))
            assert summary.completed_iterations == state.completed_iterations
            finals.append(figures[-1])
            bests.append(best_metric(state.metrics)[1])
        assert row.final.mean == pytest.approx(sum(finals) / len(finals))
        assert row.best.mean == pytest.approx(sum(bests) / len(bests))
        assert row.population.mean == pytest.approx(sum(s.population for s in row.sessions) / 2)
        # The configuration is what the grid varied; the seed is not part of it.
        assert {s.configuration["oracle"] for s in row.sessions} == {row.configuration["oracle"]}
        assert "seed" not in row.configuration


def test_iterations_to_a_target_are_the_first_that_reach_it(swept):
    root, sweep = swept
    store = SessionStore(root)
    summary = session_summary(fold(store.read(sweep.cells[0].session_id).events))
    values = [(i, v) for i, v in zip(summary.iterations, summary.values) if v is not None]
    target = values[1][1]
    first = next(i for i, v in values if v <= target)
    assert summary.reached(target)[0] == first
    assert summary.reached(min(v for _, v in values) - 1) is None


def test_csro_compare_sweep_prints_the_table_and_writes_csv_json_svg(swept, tmp_path, capsys):
    root, sweep = swept
    out = tmp_path / "out"
    assert main(["compare", "--sweep", "cmp", "--sessions-dir", str(root), "--target", "0.2", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "oracle=seed solver=prd" in printed and "exploitability per iteration" in printed
    data = json.loads((out / "compare.json").read_text())
    store = SessionStore(root)
    for session in data["sessions"]:
        state = fold(store.read(session["session"]).events)
        assert session["final"] == [r.metric_value for r in iteration_rows(state) if r.metric_value is not None][-1]
    with open(out / "compare.csv", encoding="utf-8") as handle:
        table = list(csv.DictReader(handle))
    assert {r["configuration"] for r in table} == {c.label for c in sweep.cells}
    for row in table:
        match = next(c for c in data["configurations"] if c["configuration"] == row["configuration"])
        assert float(row["final_mean"]) == pytest.approx(match["final"]["mean"])
    svg = ElementTree.parse(out / "compare.svg").getroot()
    lines = [e for e in svg.iter() if e.tag.endswith("polyline")]
    assert len(lines) == 4  # one line per configuration
    with open(out / "curves.csv", encoding="utf-8") as handle:
        curves = list(csv.DictReader(handle))
    assert all(not math.isnan(float(r["mean"])) for r in curves)


def test_compare_by_ids_and_a_bad_id_is_one_line(swept, capsys):
    root, sweep = swept
    ids = [c.session_id for c in sweep.cells[:2]]
    assert main(["compare", *ids, "--sessions-dir", str(root)]) == 0
    assert main(["compare", ids[0] + "x", "--sessions-dir", str(root)]) == 2
    assert "did you mean" in capsys.readouterr().err
    assert main(["compare", "--sweep", "cmpp", "--sessions-dir", str(root)]) == 2
    assert "no sweep 'cmpp'" in capsys.readouterr().err


def test_the_chart_draws_a_band_where_repeats_disagree_and_a_legend():
    from csro_tui.sessions.plot import bands_chart_svg, text_chart

    svg = bands_chart_svg("t", [("a", [0, 1, 2], [0.5, 0.3, 0.2], [None, 0.05, 0.02]),
                                ("b", [0, 1, 2], [0.5, 0.4, 0.35], [0.0, 0.0, 0.0])], y_label="exploitability")
    root = ElementTree.fromstring(svg)
    assert len([e for e in root.iter() if e.tag.endswith("polygon")]) == 1  # only "a" has a band
    assert {e.text for e in root.iter() if e.tag.endswith("text")} >= {"a", "b"}
    lines = text_chart([("a", [0, 1, 2], [0.5, 0.3, 0.2]), ("b", [0, 1, 2], [0.5, 0.4, 0.35])], height=6)
    assert "*" in lines[0] and "A" in "".join(lines[1:]) and "B" in "".join(lines[1:])


def test_aggscore_sessions_compare_with_their_own_error(tmp_path):
    """Sampled games report benchmark AggScore: one session keeps its own ± stderr, repeats get a t-interval."""
    path = tmp_path / "agg.toml"
    path.write_text("""
name = "agg"
iterations = 1
seeds = [3, 4]
[options]
game = "rrps(num_repetitions=50)"
oracle = "seed"
benchmark = "on"
benchmark_episodes = 4
episodes = 2
smoke_episodes = 1
""", encoding="utf-8")
    sweep = read_sweep(path)
    assert run_sweep(sweep, tmp_path / "sessions", workers=2).count("done") == 2
    store = SessionStore(tmp_path / "sessions")
    summaries = load_summaries(store, [c.session_id for c in sweep.cells])
    for summary in summaries:
        state = fold(store.read(summary.session_id).events)
        last = [r for r in iteration_rows(state) if r.metric_value is not None][-1]
        assert summary.metric == last.metric_name == "AggScore"
        assert (summary.final, summary.final_stderr) == (last.metric_value, last.metric_stderr)
        assert last.metric_stderr is not None and last.metric_stderr > 0  # 4 episodes a bot measure their noise
        (single,) = compare_sessions([summary])
        assert single.final.half_width == last.metric_stderr
    (both,) = compare_sessions(summaries)
    assert both.final.mean == pytest.approx(sum(s.final for s in summaries) / 2)
    assert both.final.half_width == pytest.approx(estimate([s.final for s in summaries]).half_width)


def test_an_exploitability_band_stops_at_zero_and_ticks_keep_their_decimals():
    from csro_tui.sessions.plot import bands_chart_svg

    series = [("a", [0, 1], [1.0, 0.5], [3.0, 2.0])]  # a t-interval of three repeats can reach below 0
    ticks = lambda svg: [e.text for e in ElementTree.fromstring(svg).iter()  # noqa: E731
                         if e.tag.endswith("text") and e.get("text-anchor") == "end"]
    assert ticks(bands_chart_svg("t", series, y_label="exploitability", floor=0.0))[0] == "0"
    unfloored = ticks(bands_chart_svg("t", series, y_label="x"))
    assert float(unfloored[0]) < 0
    assert ticks(bands_chart_svg("t", [("a", [0, 1], [-2.0, 7.3], [None, None])], y_label="x")) == \
        ["-2.5", "0.0", "2.5", "5.0", "7.5"]
