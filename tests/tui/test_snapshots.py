"""Snapshots of the main screens at 160x48 over deterministic data.

Update with `pytest tests/tui/test_snapshots.py --snapshot-update` after a
deliberate change, and look at the report before committing.  The help
screen is not snapshotted: it renders the policy contract, which other
parts of the project own (test_app_misc checks it is shown).
"""

from __future__ import annotations

from csro_tui.tui.model import LaunchOptions, StartChoices
from csro_tui.tui.screens.dashboard import DashboardScreen
from csro_tui.tui.screens.inspector import InspectorScreen
from csro_tui.tui.screens.review import ReviewScreen
from csro_tui.tui.screens.start import StartScreen
from tests.tui.sample import ScreenApp, sample_data, sample_review

SIZE = (160, 48)


def test_dashboard(snap_compare):
    app = ScreenApp(lambda: DashboardScreen(sample_data()))

    async def select_cell(pilot):
        table = app.screen.query_one("#payoff-table")
        table.focus()
        await pilot.press("right")  # p0 vs p1
        await pilot.pause()

    assert snap_compare(app, terminal_size=SIZE, run_before=select_cell)


def test_review(snap_compare):
    app = ScreenApp(lambda: ReviewScreen(sample_review()))
    assert snap_compare(app, terminal_size=SIZE)


def test_review_diff_tab(snap_compare):
    app = ScreenApp(lambda: ReviewScreen(sample_review()))

    async def diff(pilot):
        app.screen.query_one("#review-tabs").active = "tab-diff"
        await pilot.pause()

    assert snap_compare(app, terminal_size=SIZE, run_before=diff)


def test_inspector(snap_compare):
    app = ScreenApp(lambda: InspectorScreen(sample_data(), "p1"))
    assert snap_compare(app, terminal_size=SIZE)


def test_start(snap_compare):
    choices = StartChoices(
        games=["kuhn_poker", "leduc_poker", "rrps", "repeated_leduc"],
        oracles=["best-response", "seed", "human", "llm"],
        llm_oracles={"llm"},
        file_oracles={"human"},
        solvers=["nash", "prd", "rm", "uniform"],
        sessions=[("sample-kuhn", "kuhn_poker · best-response · nash · 1 iteration · 2 policies")],
    )
    app = ScreenApp(lambda: StartScreen(choices, LaunchOptions()))

    async def checked(pilot):
        from tests.tui.helpers import wait_until

        await wait_until(pilot, lambda: app.screen.checked_game == "kuhn_poker", "the game checked")
        await pilot.pause()

    assert snap_compare(app, terminal_size=SIZE, run_before=checked)


def test_timeline(snap_compare, tmp_path):
    from csro_tui.tui.app import CsroApp
    from tests.tui.helpers import wait_until
    from tests.tui.sample import record_sample_session

    record_sample_session(tmp_path)
    app = CsroApp(session="sample-kuhn", sessions_dir=tmp_path)

    async def step_back(pilot):
        await wait_until(pilot, lambda: getattr(app.screen, "step", 0) == 17, "the last step")
        for _ in range(5):
            await pilot.press("left")
        await wait_until(pilot, lambda: "step 12/17" in str(app.screen.query_one("#timeline-bar").render()), "step 12")

    assert snap_compare(app, terminal_size=SIZE, run_before=step_back)


def test_play_rrps(snap_compare, tmp_path):
    from csro_tui.tui.backend import Backend
    from csro_tui.tui.model import DashboardData
    from csro_tui.tui.screens.play import PlayScreen
    from tests.tui.helpers import wait_until

    screen = PlayScreen(Backend(tmp_path), "rrps(num_repetitions=5)", DashboardData())
    app = ScreenApp(lambda: screen)

    async def two_throws(pilot):
        await wait_until(pilot, lambda: screen.spec is not None, "the game")
        options = screen.query_one("#opponents")
        options.highlighted = options.get_option_index("bot:rotatebot")
        options.action_select()
        for n, key in enumerate("rp", start=1):
            await wait_until(pilot, lambda: screen.session is not None and len(screen.query("#play-actions Button")) == 3, "a throw")
            await pilot.press(key)
            await wait_until(pilot, lambda: len([m for m in screen.session.moves if m.who == "you"]) == n, "played")
        await wait_until(pilot, lambda: len(screen.query("#play-actions Button")) == 3, "the board")

    assert snap_compare(app, terminal_size=SIZE, run_before=two_throws)


def edited_review():
    """A best-response proposal a person edited: the oracle's original measured +0.2500, the edit +0.1667."""
    info = sample_review()
    original = '"""Bluff one time in five: expected payoff +0.25 against the meta-strategy."""\n' + info.source
    info.history = [("i3.1", original, None, 0.25)]
    info.edited_by = "tui"
    info.proposal_id = "i3.2"
    info.source = original.replace("< 0.2", "< 0.15")
    info.expected_payoff = 0.1667
    info.max_attempts = 3
    return info


def test_review_edit_diff(snap_compare):
    app = ScreenApp(lambda: ReviewScreen(edited_review()))

    async def diff(pilot):
        app.screen.query_one("#review-tabs").active = "tab-diff"
        await pilot.pause()

    assert snap_compare(app, terminal_size=SIZE, run_before=diff)


def test_error_panel(snap_compare):
    data = sample_data()
    data.session_id, data.closed, data.closed_reason, data.closed_event = "sample-kuhn", True, "error", 23
    data.closed_message = "ValueError: bad value(s) in fds_to_keep"
    assert snap_compare(ScreenApp(lambda: DashboardScreen(data)), terminal_size=SIZE)


def test_timeline_proposal_view(snap_compare, tmp_path):
    from csro_tui.sessions.state import fold
    from csro_tui.tui.screens.proposal import ProposalScreen
    from tests.tui.sample import record_sample_session

    state = fold(record_sample_session(tmp_path))
    app = ScreenApp(lambda: ProposalScreen(state, "i1a1"))

    async def diff(pilot):
        await pilot.press("3")  # the Diff tab: parent -> proposal
        await pilot.pause()

    assert snap_compare(app, terminal_size=SIZE, run_before=diff)
