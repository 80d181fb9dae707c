"""A real session: Kuhn poker, the exact best-response oracle, a person at the gate.

Three reviews - accept; edit then accept; reject with a reason (which the
oracle receives), then accept its next attempt - then a hand of Kuhn against
a benchmark bot, recorded in the session.  Checks the population, the payoff
matrix and the meta-strategy on screen and in the session log.
"""

from __future__ import annotations

from csro_tui.numbers import number

import asyncio

from textual.widgets import DataTable, OptionList, Static

from csro_tui.oracles.registry import make_oracle
from csro_tui.sessions.state import fold
from csro_tui.tui.app import CsroApp
from csro_tui.tui.backend import Backend
from csro_tui.tui.screens.editor import EditorScreen
from csro_tui.tui.screens.play import PlayScreen
from csro_tui.tui.screens.review import ReviewScreen
from csro_tui.tui.widgets.meta_bars import MetaBars
from csro_tui.tui.widgets.population_table import PopulationTable
from tests.tui.helpers import engine_idle, MAX_WAIT_STEPS, type_reason, start_screen, notifications, wait_until

EDIT_MARK = "# Reviewed by hand: keep the decision tables as they are.\n"


class SpyOracle:
    """The real best-response oracle; remembers the rejections it was given."""

    def __init__(self) -> None:
        self.inner = make_oracle("best-response")
        self.name = self.inner.name
        self.seen_rejections: list[list[str]] = []

    def propose(self, context):
        self.seen_rejections.append([reason for _, reason in context.rejections])
        return self.inner.propose(context)


def rows(app) -> list[list[str]]:
    table = app.screen.query_one(PopulationTable)
    return [[str(c) for c in table.get_row_at(i)] for i in range(table.row_count)]




async def next_review(pilot, app, previous=None) -> ReviewScreen:
    await wait_until(
        pilot, lambda: isinstance(app.screen, ReviewScreen) and app.screen is not previous, "a review"
    )
    return app.screen


async def test_kuhn_best_response_session_with_three_reviews_and_a_game(tmp_path):
    oracle = SpyOracle()
    app = CsroApp(sessions_dir=tmp_path, backend=Backend(tmp_path, engine_parts={"oracle": oracle}))
    async with app.run_test(size=(160, 48)) as pilot:
        await start_screen(pilot, app)
        assert app.screen.options().game == "kuhn_poker" and app.screen.options().oracle == "best-response"
        await pilot.press("ctrl+n")
        await engine_idle(pilot, app)
        assert [r[1] for r in rows(app)] == ["always_bet"]

        # review 1: accept
        await pilot.press("n")
        first = await next_review(pilot, app)
        assert first.info.oracle == "best-response" and first.info.valid
        assert first.info.expected_payoff is not None
        await pilot.press("a")
        await engine_idle(pilot, app)
        assert len(rows(app)) == 2

        # review 2: edit, then accept the edited code after its own validation and preview
        await pilot.press("n")
        second = await next_review(pilot, app)
        await pilot.press("e")
        await wait_until(pilot, lambda: isinstance(app.screen, EditorScreen), "the editor")
        area = app.screen.query_one("#editor-area")
        area.text = EDIT_MARK + area.text
        await pilot.press("ctrl+s")
        edited = await next_review(pilot, app, previous=second)
        assert edited.info.source.startswith(EDIT_MARK) and edited.info.valid
        await pilot.press("a")
        await engine_idle(pilot, app)
        assert len(rows(app)) == 3

        # review 3: reject with a reason; the oracle's next attempt is given it; accept that one
        await pilot.press("n")
        third = await next_review(pilot, app)
        await pilot.press("r")
        await type_reason(pilot, app, "bets too much with J")
        retry = await next_review(pilot, app, previous=third)
        assert oracle.seen_rejections[-1] == ["bets too much with J"]
        assert retry.info.attempt == 2
        await pilot.press("a")
        await engine_idle(pilot, app)

        table = rows(app)
        ids = [r[0] for r in table]
        assert len(ids) == 4
        live = app.live.engine.snapshot()
        weights = live.meta_strategy
        # by weight: the members with weight first, heaviest first, then the others in joining order
        assert ids == sorted(live.ids, key=lambda i: -weights[i] if weights[i] > 0 else 0.0)
        # the payoff matrix on screen: every cell filled, antisymmetric
        heat = app.screen.query_one("#payoff-table", DataTable)
        assert heat.row_count == 4
        cells = [[str(heat.get_row_at(i)[j]) for j in range(4)] for i in range(4)]
        for i in range(4):
            for j in range(4):
                assert cells[i][j] == number(live.payoff(ids[i], ids[j]), 2, signed=True)  # never "-0.00"
        # the meta-strategy on screen is the session's
        assert [r[4] for r in table] == [f"{weights[i]:.3f}" for i in ids]
        bars = str(app.screen.query_one(MetaBars).render())
        for policy_id in ids:  # the members at 0% folded into one line
            assert f"{weights[policy_id]:6.1%}" in bars or weights[policy_id] == 0
        assert f"at 0%: {sum(1 for i in ids if weights[i] == 0)} more" in bars or all(weights[i] > 0 for i in ids)
        # selecting a matchup shows its details
        heat.focus()
        heat.move_cursor(row=3, column=0)
        await pilot.pause()
        detail = str(app.screen.query_one("#payoff-detail", Static).render())
        assert f"{ids[3]}" in detail and "exact" in detail

        # a hand against a benchmark bot, recorded in the session
        await pilot.press("p")
        await wait_until(pilot, lambda: isinstance(app.screen, PlayScreen) and app.screen.spec is not None, "play")
        play = app.screen
        options = play.query_one(OptionList)
        options.highlighted = options.get_option_index("bot:always_call")
        options.action_select()
        await wait_until(pilot, lambda: play.session is not None, "the hand")
        while not play.session.finished:
            before = len(play.session.moves)
            await wait_until(pilot, lambda: len(play.query("#play-actions Button")) > 0, "our turn")
            await pilot.press("2")  # Bet (or Call)
            await wait_until(pilot, lambda: len(play.session.moves) > before, "the move")
        await wait_until(pilot, lambda: play.recorded == 1, "the record")
        hand = play.session.record()
        assert "1 recorded in the session" in str(play.query_one("#play-status", Static).render())
        assert "match: 1 game" in str(play.query_one("#play-match", Static).render())
        await pilot.press("escape")
        assert not any("Error" in n for n in notifications(app))
        session_id = app.live.session_id
        await app.action_quit()  # ctrl+q: records the session as closed, then exits
        for _ in range(MAX_WAIT_STEPS):
            if app.return_code is not None:
                break
            await asyncio.sleep(0.05)

    state = fold(Backend(tmp_path).read_events(session_id))
    assert sorted(state.ids) == sorted(ids)
    assert [m.origin for m in state.population] == ["seed"] + ["best-response"] * 3
    assert state.population[2].source.startswith(EDIT_MARK)
    actions = [(p.decision.action, p.decision.reason) for p in state.proposals.values() if p.decision]
    assert actions == [("accept", ""), ("edit", ""), ("accept", ""), ("reject", "bets too much with J"), ("accept", "")]
    assert state.meta_strategy == weights
    assert len(state.games) == 1
    game = state.games[0]
    assert game.opponent == "always_call" and game.returns == hand["returns"]
    assert state.closed is not None and state.closed.reason == "stopped"  # 3 of 10 iterations: resumable


async def test_payoff_matrix_keeps_its_row_ids_after_a_review_in_a_human_oracle_session(tmp_path):
    from csro_tui.games.registry import get_game
    from csro_tui.tui.model import LaunchOptions

    policy = tmp_path / "mine.py"
    policy.write_text(get_game("kuhn_poker").seed_policies()["card_rules"])
    options = LaunchOptions(game="kuhn_poker", oracle="human", human_file=str(policy))
    app = CsroApp(options, sessions_dir=tmp_path / "sessions", show_start=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await engine_idle(pilot, app)
        await pilot.press("n")
        await next_review(pilot, app)
        await pilot.press("a")
        await engine_idle(pilot, app)
        table = app.screen.query_one("#payoff-table", DataTable)
        assert sorted(str(row.label) for row in table.rows.values()) == ["p0", "p1"]
        # the label column is wide enough to show them (it was 0 wide: Textual's private measure)
        assert table._row_label_column_width >= len("p1") + 2  # noqa: SLF001 - the id and its cell padding
        await app.action_quit()
