"""The dashboard at 80x24, the smallest supported terminal: what a person must read there."""

from __future__ import annotations

from dataclasses import replace

import pytest

from csro_tui.tui.screens.dashboard import DashboardScreen
from csro_tui.tui.widgets.event_log import EventLog
from csro_tui.tui.widgets.meta_bars import MetaBars
from csro_tui.tui.widgets.population_table import PopulationTable
from tests.tui.sample import ScreenApp, sample_data

REASON = "too passive with the jack: bet it as a bluff"


def _busy_session():
    data = sample_data()
    data.log = [f"#{i} iteration_started: iteration {i}" for i in range(1, 12)] + [
        f"#12 proposal_decided: i3.1 reject by tui: {REASON}",
        "#13 iteration_finished: iteration 3: nothing accepted",
    ]
    data.members[2] = replace(data.members[2], edited_by="tui")
    return data


def _visible_log(log: EventLog) -> list[str]:
    top = int(log.scroll_offset.y)
    return [strip.text.rstrip() for strip in log.lines[top : top + log.scrollable_content_region.height]]


async def test_at_80x24_the_events_panel_shows_several_events_whole():
    app = ScreenApp(lambda: DashboardScreen(_busy_session()))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        await pilot.pause()
        log = app.screen.query_one(EventLog)
        shown = _visible_log(log)
        # more than the 2 lines a shared grid row left the panel
        assert len([line for line in shown if line]) >= 5, shown
        # the newest event is on screen, and a long one wraps instead of being cut
        assert shown[-1].startswith("iteration 3: nothing") or "#13 iteration_finished" in " ".join(shown[-3:]), shown
        assert " ".join(" ".join(shown).split()).find(REASON) >= 0, shown
        assert all(len(line) <= log.scrollable_content_region.width for line in shown)


async def test_at_80x24_each_member_takes_one_line_of_the_meta_strategy():
    app = ScreenApp(lambda: DashboardScreen(_busy_session()))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        bars = app.screen.query_one(MetaBars)
        lines = bars.render_bars(bars._data).plain.splitlines()  # noqa: SLF001 - what the panel shows
        assert len(lines) == 3 and bars.size.height == 3
        # by weight: p1's 50% first, then p0 and p2 in id order
        assert [line.endswith(weight) for line, weight in zip(lines, ("50.0%", "25.0%", "25.0%"))] == [True] * 3
        assert all(len(line) <= bars.size.width for line in lines)


async def test_at_80x24_a_member_a_person_edited_shows_it_in_the_population():
    app = ScreenApp(lambda: DashboardScreen(_busy_session()))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        table = app.screen.query_one(PopulationTable)
        names = [str(table.get_cell_at((row, 1))) for row in range(table.row_count)]
        assert names == ["br_1", "always_call", "br_2 ✎"]  # by weight; the inspector names who edited it


async def test_events_wrap_again_on_resize_with_the_newest_still_in_view():
    app = ScreenApp(lambda: DashboardScreen(_busy_session()))
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        log = app.screen.query_one(EventLog)
        wide = len(log.lines)
        await pilot.resize_terminal(80, 24)
        await pilot.pause()
        await pilot.pause()
        assert len(log.lines) > wide  # wrapped again at the new width
        shown = _visible_log(log)
        assert " ".join(shown[-3:]).split()[-2:] == ["nothing", "accepted"], shown  # the newest event's end


async def test_tables_drawn_before_they_measure_their_rows_are_drawn_again_after():
    """Issue 29, item 6: at 80x24 the payoff matrix lost its row ids (and the population its
    widths) about one start in five: a frame drawn between filling the table and Textual's
    idle measurement was cached at the old widths and kept."""
    from textual.geometry import Region

    from csro_tui.tui.screens.dashboard import DashboardScreen
    from csro_tui.tui.widgets.payoff_heatmap import PayoffHeatmap
    from csro_tui.tui.widgets.population_table import PopulationTable
    from tests.tui.sample import ScreenApp, sample_data

    def drawn(table) -> list[str]:
        return [strip.text for strip in table.render_lines(Region(0, 0, table.size.width, table.size.height))]

    app = ScreenApp(lambda: DashboardScreen(sample_data()))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        payoffs = app.screen.query_one(PayoffHeatmap)
        population = app.screen.query_one(PopulationTable)
        data = sample_data()
        payoffs.show(data)
        population.show(data)
        drawn(payoffs.table), drawn(population)  # a frame before the tables are idle
        await pilot.pause()
        matrix = drawn(payoffs.table)
        assert any(line.lstrip().startswith("p1 ") for line in matrix), matrix  # the row ids
        rows = drawn(population)
        assert any("always_call" in line for line in rows), rows


async def test_at_80x24_a_two_digit_sampled_payoff_keeps_its_mark():
    """Repeated Leduc's "-13.60~" (seven characters) showed as "-13.60": the column was
    six wide, so the "~" that says it is sampled was cut."""
    from csro_tui.tui.model import Cell
    from csro_tui.tui.widgets.payoff_heatmap import PayoffHeatmap

    data = sample_data()
    (a, b), _ = next((key, cell) for key, cell in data.payoffs.items() if not cell.self_play)
    data.payoffs[(a, b)] = Cell(-13.6, 5.5, 20, False)
    data.payoffs[(b, a)] = Cell(13.6, 5.5, 20, False)
    app = ScreenApp(lambda: DashboardScreen(data))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        table = app.screen.query_one(PayoffHeatmap).table
        column = next(c for k, c in table.columns.items() if k.value == b)
        assert column.width >= len("-13.60~")
        assert str(table.get_cell(a, b)) == "-13.60~"


def _sampled_rrps(populations: int = 1):
    """An rrps(num_repetitions=100) population as the seed oracle makes it: long names, AggScores
    like "-135.981~" and vs meta figures like "-96.400~", more members than the panel's rows."""
    from csro_tui.tui.model import DashboardData, Member

    names = ["beat_last", "cycle", "uniform_random", "markov_predictor", "frequency_counter", "constant_rock", "beat_last_2"]
    aggs = [-135.981, -150.358, -6.544, -44.121, -120.5, -499.2, -135.4]
    vs = [0.0, -0.2, 0.0, -6.1, -96.4, -88.25, -12.5]
    members = [Member(f"p{i}", name, "seed", None, 1.0 if i == 0 else 0.0, iteration=i,
                      scores={"AggScore": agg, "vs meta": v}, score_stderr={"AggScore": 2.6, "vs meta": 1.5},
                      seat=(i % 2 if populations == 2 else None))
               for i, (name, agg, v) in enumerate(zip(names, aggs, vs))]
    return DashboardData(game="rrps(num_repetitions=100)", oracle="seed", meta_solver="nash", members=members,
                         metric_name="AggScore", populations=populations)


@pytest.mark.parametrize("populations", [1, 2])
async def test_at_80x24_a_sampled_games_population_shows_each_number_whole(populations):
    """rrps and repeated Leduc at 80 columns: the Agg column pushed vs meta off the panel ("vsMe",
    "+0.0"); now the names shorten and, if that is not enough, the weight (in the Meta-strategy
    panel beside) and then Agg are left out, and the panel's border says so."""
    from textual.geometry import Region

    data = _sampled_rrps(populations)
    app = ScreenApp(lambda: DashboardScreen(data))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        await pilot.pause()
        table = app.screen.query_one(PopulationTable)
        region = table.scrollable_content_region
        lines = [strip.text for strip in table.render_lines(Region(0, 0, region.width, region.height))]
        header = lines[0].split()
        assert header[-1] == "vsMeta", lines[0]
        assert table.virtual_size.width <= region.width, (table.virtual_size, region)  # no column cut at the edge
        shown = [line for line in lines[1:] if line.strip()]
        assert shown
        for line in shown:
            member = data.member(line.split()[1 if populations == 2 else 0])
            assert f"{member.scores['vs meta']:+.3f}~" in line, line
            if "Agg" in header:
                assert f"{member.scores['AggScore']:+.3f}~" in line, line
        dropped = [name for name in ("wt", "Agg") if name not in header]
        subtitle = app.screen.query_one("#panel-population").border_subtitle
        assert (dropped and subtitle.startswith(", ".join(dropped) + " left out")) or (not dropped and not subtitle)


def _kuhn_after(iterations: int, long_name: str = ""):
    """A one-population Kuhn run's dashboard after `iterations` (exact payoffs, every weight equal)."""
    from csro_tui.tui.model import Cell, DashboardData, Member

    ids = [f"p{i}" for i in range(iterations + 1)]
    names = {"p0": "always_bet", ids[-1]: long_name or f"br-{iterations}"}
    members = [Member(i, names.get(i, f"br-{n}"), "best-response", weight=1 / len(ids)) for n, i in enumerate(ids)]
    upper = {("p0", "p1"): -1 / 3, ("p0", "p2"): -1 / 3, ("p0", "p3"): -1 / 6, ("p0", "p4"): 0.0417, ("p1", "p2"): -0.25,
             ("p1", "p3"): 0.0, ("p1", "p4"): 0.25, ("p2", "p3"): -1 / 6, ("p2", "p4"): 0.0, ("p3", "p4"): 0.125,
             ("p0", "p5"): -0.0556, ("p1", "p5"): 0.0833, ("p2", "p5"): 0.0, ("p3", "p5"): -0.0417, ("p4", "p5"): 0.0}
    payoffs = {(i, i): Cell(0.0, 0.0, 0, True, self_play=True) for i in ids}
    for (a, b), value in upper.items():
        if a in ids and b in ids:
            payoffs[(a, b)], payoffs[(b, a)] = Cell(value, 0.0, 0, True), Cell(-value, 0.0, 0, True)
    return DashboardData(game="kuhn_poker", oracle="best-response", meta_solver="nash", members=members, payoffs=payoffs)


def _assert_each_figure_whole(table, data) -> None:
    from textual.geometry import Region

    from csro_tui.tui.widgets.payoff_heatmap import PayoffHeatmap

    region = table.scrollable_content_region
    assert table.virtual_size.width <= region.width, (table.virtual_size, region)  # nothing to scroll to
    lines = [strip.text for strip in table.render_lines(Region(0, 0, region.width, region.height))]
    ids = [m.id for m in data.members]
    assert lines[0].split() == ids, lines[0]
    for line in lines[1:]:
        if not line.strip():
            continue
        row, *figures = line.split()
        assert figures == [PayoffHeatmap._cell_text(data.cell(row, column)) for column in ids], line  # noqa: SLF001


async def test_at_80x24_six_kuhn_members_payoff_columns_show_each_figure_whole():
    """A one-population Kuhn run after 5 iterations: the matrix's last columns were cut ("+0.0",
    as the fifth of five with the timeline's rows) at 80 columns; without the cell padding, each
    figure keeps one space before it."""
    from csro_tui.tui.widgets.payoff_heatmap import PayoffHeatmap

    data = _kuhn_after(5)
    app = ScreenApp(lambda: DashboardScreen(data))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        await pilot.pause()
        _assert_each_figure_whole(app.screen.query_one(PayoffHeatmap).table, data)


async def test_at_80x24_the_matrix_fits_again_when_the_detail_under_it_grows():
    """Five members fit with the padding until a longer detail under the matrix takes a row from
    it and its scrollbar two columns (as the timeline's bar does on opening a session)."""
    from csro_tui.tui.widgets.payoff_heatmap import PayoffHeatmap

    data = _kuhn_after(4, long_name="exploits_the_bluffs_of_always_bet_with_queens")
    app = ScreenApp(lambda: DashboardScreen(data))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        heatmap = app.screen.query_one(PayoffHeatmap)
        assert heatmap.table.cell_padding == 1  # five columns and five rows fit, padded
        heatmap.table.move_cursor(row=0, column=4)  # the detail names p4: three lines
        await pilot.pause()
        await pilot.pause()
        _assert_each_figure_whole(heatmap.table, data)
