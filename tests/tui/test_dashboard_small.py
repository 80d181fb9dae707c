"""The dashboard at 80x24, the smallest supported terminal: what a person must read there."""

from __future__ import annotations

from dataclasses import replace

from csro_tui.tui.screens.dashboard import DashboardScreen
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


async def test_at_80x24_a_member_a_person_edited_shows_it_in_the_population():
    app = ScreenApp(lambda: DashboardScreen(_busy_session()))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        table = app.screen.query_one(PopulationTable)
        names = [str(table.get_cell_at((row, 1))) for row in range(table.row_count)]
        assert names == ["always_call", "br_1", "br_2 ✎"]  # the inspector names who edited it
