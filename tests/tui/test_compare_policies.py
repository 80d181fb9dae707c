"""The Compare policies screen, the review's behaviour line and the diversity view (issue 22),
at 80x24 and 160x48, over a small Kuhn population profiled for real (sandboxed, in workers)."""

from __future__ import annotations

import json

import pytest

from csro_tui.games.registry import get_game
from csro_tui.oracles.base import PolicyRecord
from csro_tui.sessions import events as ev
from csro_tui.sessions.state import fold
from csro_tui.tui.behaviour import BehaviourContext
from csro_tui.tui.screens.compare_policies import ComparePoliciesScreen, DiversityScreen, ReviewBehaviourLine
from tests.llm_server import llm_server  # noqa: F401 - the fixture
from tests.tui.helpers import wait_until
from tests.tui.sample import ScreenApp

SIZES = [pytest.param((80, 24), id="80x24"), pytest.param((160, 48), id="160x48")]

CARD_RULE = """
class Policy:
    def __init__(self, player, game):
        pass

    def act(self, obs):
        if obs["card"] == "K":
            return 1
        if obs["to_call"] > 0:
            return 1 if obs["card"] == "Q" else 0
        return 0
"""

CARD_TABLE = """
TABLE = {("K", False): 1, ("K", True): 1, ("Q", False): 0, ("Q", True): 1, ("J", False): 0, ("J", True): 0}


class Policy:
    def __init__(self, player, game):
        pass

    def act(self, obs):
        return TABLE[(obs["card"], obs["to_call"] == 1)]
"""

BLUFFS_THE_JACK = CARD_RULE.replace(
    '        if obs["to_call"] > 0:\n',
    '        if obs["card"] == "J" and obs["betting"] == [[]]:\n            return 1\n        if obs["to_call"] > 0:\n',
)


def context() -> tuple[BehaviourContext, list]:
    spec = get_game("kuhn_poker")
    events = [
        ev.SessionStarted(session_id="s", game="kuhn_poker", oracle="human", solver="nash", config={"seed": 5},
                          versions={}),
        ev.PolicyAdded(policy=PolicyRecord("p0", "always_bet", spec.seed_policies()["always_bet"], "seed")),
        ev.PolicyAdded(policy=PolicyRecord("p1", "card_rule", CARD_RULE, "human")),
        ev.PolicyAdded(policy=PolicyRecord("p2", "card_table", CARD_TABLE, "human")),
        ev.MetaSolved(solver="nash", population=["p0", "p1", "p2"], strategy=[0.2, 0.4, 0.4], value=0.0, nash_conv=0.0),
    ]
    for seq, event in enumerate(events, 1):
        event.seq = seq
    state = fold(events)
    recorded = []

    def record(event):
        event.seq = state.step + 1
        state.apply(event)
        recorded.append(event)

    return BehaviourContext(spec, lambda: state, record), recorded


@pytest.mark.parametrize("size", SIZES)
async def test_compare_a_proposal_nearest_member_first(size):
    ctx, recorded = context()
    app = ScreenApp(lambda: ComparePoliciesScreen(ctx, "i4.1", BLUFFS_THE_JACK, proposal=True))
    async with app.run_test(size=size) as pilot:
        screen = app.screen
        await wait_until(pilot, lambda: screen.review is not None, "the profiles")
        # p1 and p2 are one behaviour written twice; the bluff differs from both in one situation.
        assert [member for member, _ in screen.review.ranked][2] == "p0"
        await wait_until(pilot, lambda: screen.selected in screen.matches, "the head-to-head match")
        await pilot.pause()
        detail = str(screen.query_one("#compare-behaviour").render())
        assert "Jack, first to act (seat 0)" in detail
        assert "head to head: A" in detail
        assert "A: bet 100%" in detail and "B: check 100%" in detail
        code = str(screen.query_one("#compare-code").render())
        assert "+        if obs[\"card\"] == \"J\"" in code
        assert {event.policy_id for event in recorded} == {"p0", "p1", "p2", "i4.1"}


@pytest.mark.parametrize("size", SIZES)
async def test_a_member_that_behaves_like_another_is_flagged(size):
    ctx, _ = context()
    app = ScreenApp(lambda: ComparePoliciesScreen(ctx, "p2", CARD_TABLE))
    async with app.run_test(size=size) as pilot:
        screen = app.screen
        await wait_until(pilot, lambda: screen.review is not None, "the profiles")
        await pilot.pause()
        header = str(screen.query_one("#compare-header").render())
        assert "behaves like member p1" in header
        assert [member for member, _ in screen.review.ranked] == ["p1", "p0"]


@pytest.mark.parametrize("size", SIZES)
async def test_the_diversity_view_shows_clusters_and_the_effective_number(size):
    ctx, _ = context()
    app = ScreenApp(lambda: DiversityScreen(ctx))
    async with app.run_test(size=size) as pilot:
        screen = app.screen
        await wait_until(pilot, lambda: screen.diversity is not None, "the diversity")
        await pilot.pause()
        shown = str(screen.query_one("#diversity-map").render())
        assert "same strategy: p1, p2" in shown or "same strategy: p2, p1" in shown
        assert "effective number of distinct strategies" in shown
        # Ordered so clusters show: the two copies are next to each other.
        order = screen.diversity.ids
        assert abs(order.index("p1") - order.index("p2")) == 1


async def test_the_review_line_names_the_nearest_member_and_the_hint():
    ctx, _ = context()
    from textual.app import App

    class LineApp(App):
        def compose(self):
            yield ReviewBehaviourLine(ctx, "i4.1", CARD_TABLE)

    app = LineApp()
    async with app.run_test(size=(160, 48)) as pilot:
        line = app.query_one(ReviewBehaviourLine)
        await wait_until(pilot, lambda: "nearest member" in str(line.render()), "the behaviour line")
        text = str(line.render())
        assert "at distance 0.000" in text and "behaves like member p1" in text


async def test_a_recorded_sessions_timeline_opens_its_diversity_and_comparison(tmp_path):
    """Recorded sessions are profiled too (computed, not recorded), as the population was at the step."""
    from csro_tui.tui.app import CsroApp
    from csro_tui.tui.screens.sessions import TimelineScreen
    from tests.tui.sample import record_sample_session

    events = record_sample_session(tmp_path)
    app = CsroApp(session="sample-kuhn", sessions_dir=tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_until(pilot, lambda: isinstance(app.screen, TimelineScreen) and app.screen.shown_step == len(events),
                         "the timeline")
        await pilot.press("b")
        await wait_until(pilot, lambda: isinstance(app.screen, DiversityScreen), "the diversity view")
        screen = app.screen
        await wait_until(pilot, lambda: screen.diversity is not None, "the diversity")
        assert sorted(screen.diversity.ids) == ["p0", "p1"]
        await pilot.press("escape")
        await wait_until(pilot, lambda: isinstance(app.screen, TimelineScreen), "back")
        await pilot.press("d")
        await wait_until(pilot, lambda: isinstance(app.screen, ComparePoliciesScreen), "the comparison")
        compare = app.screen
        await wait_until(pilot, lambda: compare.review is not None, "the profiles")
        assert len(compare.review.ranked) == 1
    # Nothing was written into the recorded log.
    from csro_tui.sessions.store import SessionStore

    assert len(SessionStore(tmp_path).read("sample-kuhn").events) == len(events)


@pytest.mark.parametrize("size", SIZES)
def test_compare_snapshot(snap_compare, size):
    ctx, _ = context()
    app = ScreenApp(lambda: ComparePoliciesScreen(ctx, "i4.1", BLUFFS_THE_JACK, proposal=True))

    async def profiled(pilot):
        await wait_until(pilot, lambda: app.screen.review is not None, "the profiles")
        await wait_until(pilot, lambda: app.screen.selected in app.screen.matches, "the head-to-head match")
        await pilot.pause()

    assert snap_compare(app, terminal_size=size, run_before=profiled)


@pytest.mark.parametrize("size", SIZES)
def test_diversity_snapshot(snap_compare, size):
    ctx, _ = context()
    app = ScreenApp(lambda: DiversityScreen(ctx))

    async def computed(pilot):
        await wait_until(pilot, lambda: app.screen.diversity is not None, "the diversity")
        await pilot.pause()

    assert snap_compare(app, terminal_size=size, run_before=computed)


def test_the_review_checks_show_static_hints_with_their_lines():
    from csro_tui.tui.model import ReviewInfo
    from csro_tui.tui.screens.review import checks_text

    source = ("class Policy:\n    def __init__(self, player, game):\n        self.counts = [0, 0, 0]\n"
              "    def update(self, obs, action):\n        self.counts[action] += 1\n"
              "    def act(self, obs):\n        return 1\n")
    text = checks_text(ReviewInfo(name="n", oracle="llm", source=source)).plain
    assert "Hints about the code (not reasons to reject)" in text
    assert "line 4: method update() is never called" in text
    assert "line 3: self.counts is written but never read" in text


async def test_a_live_review_shows_the_nearest_member_and_d_compares(tmp_path):
    """A real Kuhn session: the review's behaviour line, `d` from the review, `b` and `d` on the
    dashboard; what was computed is recorded in the session as behaviour_profiled events."""
    from csro_tui.sessions.store import SessionStore
    from csro_tui.tui.app import CsroApp
    from csro_tui.tui.backend import Backend
    from csro_tui.tui.screens.dashboard import DashboardScreen
    from csro_tui.tui.screens.review import ReviewScreen
    from tests.tui.helpers import engine_idle, start_screen

    app = CsroApp(sessions_dir=tmp_path, backend=Backend(tmp_path))
    async with app.run_test(size=(80, 24)) as pilot:
        await start_screen(pilot, app)
        await pilot.press("ctrl+n")
        await engine_idle(pilot, app)
        await pilot.press("n")
        await wait_until(pilot, lambda: isinstance(app.screen, ReviewScreen), "a review")
        review = app.screen
        line = review.query_one(ReviewBehaviourLine)
        await wait_until(pilot, lambda: "nearest member always_bet (p0)" in str(line.render()), "the behaviour line")
        await pilot.press("d")
        await wait_until(pilot, lambda: isinstance(app.screen, ComparePoliciesScreen), "the comparison")
        compare = app.screen
        await wait_until(pilot, lambda: compare.review is not None, "the profiles")
        assert [member for member, _ in compare.review.ranked] == ["p0"]
        await pilot.press("escape")
        await wait_until(pilot, lambda: app.screen is review, "back to the review")
        await pilot.press("a")
        await engine_idle(pilot, app)
        await pilot.press("b")
        await wait_until(pilot, lambda: isinstance(app.screen, DiversityScreen), "the diversity view")
        diversity = app.screen
        await wait_until(pilot, lambda: diversity.diversity is not None, "the diversity")
        assert sorted(diversity.diversity.ids) == ["p0", "p1"]
        await pilot.press("escape")
        await wait_until(pilot, lambda: isinstance(app.screen, DashboardScreen), "the dashboard")
        session = app.live.session_id
    events = SessionStore(tmp_path).read(session).events
    profiled = {event.policy_id for event in events if event.TYPE == "behaviour_profiled"}
    assert "p0" in profiled and any(policy_id.startswith("i1.") for policy_id in profiled)


def test_the_behaviour_line_and_compare_show_branches_that_never_ran():
    """Issue 22's "branches that never ran": the proposal's profile measures them and the
    review's behaviour line and the Compare screen's detail list them with their lines."""
    from csro_tui.profiles import compute
    from csro_tui.profiles.session import review_behaviour
    from csro_tui.tui.screens.compare_policies import behaviour_text, review_line

    compute._cache.clear()
    dead_jack = CARD_RULE.replace('        if obs["card"] == "K":\n',
                                  '        if obs["card"] == "A":\n            return 0\n        if obs["card"] == "K":\n')
    ctx, recorded = context()
    review = review_behaviour(ctx.spec, ctx.state(), "i4.1", dead_jack)
    expected = '`obs["card"] == "A"` was never true in any information state: the code under it never ran'
    assert [(hint.line, hint.message) for hint in review.hints] == [(7, expected)]
    assert f"hint: line 7: {expected}" in review_line(review).plain
    member_id, comparison = review.ranked[0]
    detail = behaviour_text("i4.1", member_id, comparison, None, review.description, review.hints).plain
    assert "Hints about i4.1's code (not reasons to reject)" in detail and f"line 7: {expected}" in detail
    # Recorded with the proposal's profile, so a replay shows them without the sandbox.
    (event,) = [e for e in review.events if e.policy_id == "i4.1"]
    assert event.hints == [{"line": 7, "message": expected}]


async def test_the_model_summary_is_asked_recorded_labelled_and_replayed(tmp_path, monkeypatch, llm_server):
    """`m` on Compare policies asks the session's model for a summary of the subject's code,
    records it beside the profile (behaviour_profiled.model_summary) and shows it labelled as
    model text; the recorded session shows it again without asking.  The reply is fixed test
    text from tests/llm_server.py, not model output."""
    from tests.llm_server import ScriptedReply

    monkeypatch.chdir(tmp_path)  # no csro.toml of the checkout
    ctx, recorded = context()
    ctx.state().started.model = "scripted-test-model"
    ctx.state().started.base_url = llm_server.base_url
    llm_server.script(ScriptedReply(text="SCRIPTED TEST REPLY"))
    app = ScreenApp(lambda: ComparePoliciesScreen(ctx, "i4.1", BLUFFS_THE_JACK, proposal=True))
    async with app.run_test(size=(160, 48)) as pilot:
        screen = app.screen
        await wait_until(pilot, lambda: screen.review is not None, "the profiles")
        await pilot.press("m")
        await wait_until(pilot, lambda: isinstance(screen.summary, dict), "the model's summary")
        await pilot.pause()
        detail = str(screen.query_one("#compare-behaviour").render())
    assert "Model summary (model text from scripted-test-model, not checked against the profile)" in detail
    assert "SCRIPTED TEST REPLY" in detail
    (request,) = llm_server.requests
    assert 'if obs[\\"card\\"] == \\"J\\"' in json.dumps(request.body)
    (event,) = [e for e in recorded if e.model_summary]
    assert event.policy_id == "i4.1" and event.model_summary == {"model": "scripted-test-model",
                                                                  "text": "SCRIPTED TEST REPLY"}
    assert event.nearest is not None  # the proposal's nearest member is kept with it

    # The session viewed again (nothing recorded, no model asked): the summary is shown as recorded.
    replayed = BehaviourContext(ctx.spec, ctx.state, None)
    app = ScreenApp(lambda: ComparePoliciesScreen(replayed, "i4.1", BLUFFS_THE_JACK, proposal=True))
    async with app.run_test(size=(160, 48)) as pilot:
        screen = app.screen
        await wait_until(pilot, lambda: screen.review is not None, "the profiles")
        await pilot.pause()
        detail = str(screen.query_one("#compare-behaviour").render())
    assert "Model summary (model text from scripted-test-model" in detail and "SCRIPTED TEST REPLY" in detail
    assert len(llm_server.requests) == 1


async def test_the_model_summary_without_a_model_says_so_in_one_visible_line(tmp_path, monkeypatch):
    """`m` with no model configured: one line saying so, shown at 80x24 (a notification),
    not only in the detail below the profile and code, out of sight there."""
    monkeypatch.chdir(tmp_path)  # no csro.toml of the checkout
    ctx, recorded = context()
    app = ScreenApp(lambda: ComparePoliciesScreen(ctx, "i4.1", BLUFFS_THE_JACK, proposal=True))
    async with app.run_test(size=(80, 24)) as pilot:
        screen = app.screen
        await wait_until(pilot, lambda: screen.review is not None, "the profiles")
        await pilot.press("m")
        await wait_until(pilot, lambda: isinstance(screen.summary, str) and "not available" in screen.summary,
                         "the refusal")
        await pilot.pause()
        shown = [notification.message for notification in app._notifications]
    assert any(message.startswith("Model summary: not available: no API key") and "\n" not in message
               for message in shown), shown
    assert not [e for e in recorded if e.model_summary]
