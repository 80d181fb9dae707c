"""Profiles in a session (issue 22): the review's nearest member and "behaves like"
hint, recorded as behaviour_profiled events that a replay reuses, and the diversity."""

from __future__ import annotations

import pytest

from csro_tui.cli import main
from csro_tui.profiles import compute
from csro_tui.profiles.session import population_diversity, review_behaviour
from csro_tui.sessions.state import fold
from csro_tui.sessions.store import EVENTS_FILE, SessionStore

# always_bet's behaviour, written another way.
BETS_ALWAYS = """
class Policy:
    def __init__(self, player, game):
        self.bet = game["action_names"].index("Bet")

    def act(self, obs):
        return self.bet if self.bet in obs["legal_actions"] else obs["legal_actions"][0]
"""


@pytest.fixture(scope="module")
def kuhn_session(tmp_path_factory):
    root = tmp_path_factory.mktemp("sessions")
    assert main(["run", "--game", "kuhn_poker", "--oracle", "best-response", "--iterations", "2",
                 "--review", "auto", "--session-dir", str(root)]) == 0
    (session,) = [p.name for p in root.iterdir() if (p / EVENTS_FILE).exists()]
    return root, session


def _spec():
    from csro_tui.games.registry import get_game

    return get_game("kuhn_poker")


def test_a_proposal_with_new_code_that_behaves_like_a_member_is_flagged(kuhn_session):
    compute._cache.clear()
    root, session = kuhn_session
    state = fold(SessionStore(root).read(session).events)
    first = state.population[0]
    assert "return BET" in first.source  # the session starts from the always_bet seed
    review = review_behaviour(_spec(), state, "i9.1", BETS_ALWAYS)
    assert review.behaves_like == first.id
    assert review.hint().startswith(f"behaves like member {first.id}: distance 0.000")
    nearest_id, comparison = review.ranked[0]
    assert comparison.distance == 0.0 and comparison.differences == []
    assert [member for member, _ in review.ranked][1:] and all(c.distance > 0 for _, c in review.ranked[1:])
    # Every member's profile and the proposal's are events to record, the proposal's with its nearest member.
    recorded = {event.policy_id: event for event in review.events}
    assert set(recorded) == {*state.ids, "i9.1"}
    assert recorded["i9.1"].nearest["member"] == first.id and recorded["i9.1"].nearest["same_within_noise"]
    assert any("always bets" in line for line in recorded[first.id].description)


def test_recorded_profiles_are_reused_without_the_sandbox(kuhn_session):
    compute._cache.clear()
    root, session = kuhn_session
    store = SessionStore(root)
    state = fold(store.read(session).events)
    review = review_behaviour(_spec(), state, "i9.1", BETS_ALWAYS)
    # Fold the recorded events into the state as a live engine would, then nothing is computed again.
    for event in review.events:
        event.seq = state.step + 1
        state.apply(event)

    def no_sandbox(*_args, **_kwargs):
        raise AssertionError("a recorded profile was computed again")

    again = review_behaviour(_spec(), state, "i9.1", BETS_ALWAYS, profile=no_sandbox)
    assert again.events == [] and again.behaves_like == state.population[0].id
    diversity = population_diversity(_spec(), state, profile=no_sandbox)
    assert sorted(diversity.ids) == sorted(state.ids)
    assert diversity.distances.shape == (len(state.ids),) * 2
    assert diversity.effective is not None and 1.0 <= diversity.effective <= len(state.ids)
    assert diversity.lines()[0].startswith("effective number of distinct strategies")


def test_replay_shows_the_diversity(kuhn_session, tmp_path, capsys):
    compute._cache.clear()
    root, session = kuhn_session
    assert main(["replay", session, "--session-dir", str(root)]) == 0
    assert "fewer than two members have a recorded profile" in capsys.readouterr().out
    assert main(["replay", session, "--session-dir", str(root), "--diversity"]) == 0
    out = capsys.readouterr().out
    assert "behaviour distance" in out and "no two members behave the same" in out
    assert "effective number of distinct strategies in the meta-strategy" in out


def test_export_draws_the_recorded_diversity(kuhn_session, tmp_path):
    from csro_tui.profiles.session import review_behaviour
    from csro_tui.sessions.export import export_session

    root, session = kuhn_session
    state = fold(SessionStore(root).read(session).events)
    for event in review_behaviour(_spec(), state, "i9.1", BETS_ALWAYS).events:
        event.seq = state.step + 1
        state.apply(event)
    from csro_tui.profiles.session import export_with_diversity

    # The one export csro export and the TUI's export both call.
    written = export_with_diversity(state, tmp_path / "out")
    picture = tmp_path / "out" / "diversity.svg"
    assert picture in written and {path.name for path in export_session(state, tmp_path / "plain")} < {
        path.name for path in written}
    svg = picture.read_text()
    assert svg.startswith("<svg") and svg.count("<rect") >= len(state.ids) ** 2
    report = (tmp_path / "out" / "report.md").read_text()
    assert "## Behaviour diversity" in report and "![behaviour distances](diversity.svg)" in report


def test_the_review_also_weighs_the_distance_by_the_meta_strategy(kuhn_session):
    """Labelled apart from the uniform-opponent distance: the states the meta-strategy lets happen."""
    from csro_tui.profiles.compute import opponent_reach

    compute._cache.clear()
    root, session = kuhn_session
    state = fold(SessionStore(root).read(session).events)
    review = review_behaviour(_spec(), state, "i9.1", BETS_ALWAYS)
    assert review.distance_under_meta == 0.0  # the same behaviour is the same under any opponent
    event = next(e for e in review.events if e.policy_id == "i9.1")
    assert event.nearest["distance_under_meta_strategy"] == 0.0
    uniform = opponent_reach(_spec())
    assert uniform.sum() > 0
    # The uniform table as the "opponent" gives the uniform reach back.
    from csro_tui.evaluation.exact import game_tables

    table = game_tables(_spec()).template
    assert opponent_reach(_spec(), table) == pytest.approx(uniform)


def test_export_diversity_profiles_the_members_without_changing_the_log(kuhn_session, tmp_path):
    root, session = kuhn_session
    before = (root / session / EVENTS_FILE).read_bytes()
    assert main(["export", session, "--session-dir", str(root), "--out", str(tmp_path / "out"), "--diversity"]) == 0
    assert (tmp_path / "out" / "diversity.svg").exists()
    assert "## Behaviour diversity" in (tmp_path / "out" / "report.md").read_text()
    assert (root / session / EVENTS_FILE).read_bytes() == before


def _liars_dice_two_populations():
    """Two populations of liars_dice: the seed `honest` in seat 0 (p0) and seat 1 (p1)."""
    from csro_tui.games.registry import get_game
    from csro_tui.records import PolicyRecord
    from csro_tui.sessions import events as ev

    spec = get_game("liars_dice")
    honest = spec.seed_policies()["honest"]
    events = [
        ev.SessionStarted(session_id="seats", game="liars_dice", oracle="seed", solver="nash",
                          config={"game": "liars_dice", "populations": 2, "seed": 4}, versions={}),
        ev.IterationStarted(iteration=0),
        ev.PolicyAdded(policy=PolicyRecord("p0", "honest", honest, "seed", seat=0)),
        ev.PolicyAdded(policy=PolicyRecord("p1", "honest", honest, "seed", seat=1)),
    ]
    for seq, event in enumerate(events, 1):
        event.seq = seq
    return spec, honest, fold(events)


def test_two_populations_profile_each_member_and_proposal_in_its_own_seat():
    from csro_tui.profiles.session import member_profiles
    from csro_tui.tui.adapt import seat_view

    compute._cache.clear()
    spec, honest, state = _liars_dice_two_populations()
    asked = []

    def few_episodes(*args, **kwargs):
        asked.append(kwargs.get("seat"))
        return compute.profile_policy(*args, episodes=20, **kwargs)

    profiles, events = member_profiles(spec, state, profile=few_episodes)
    assert asked == [0, 1] and (profiles["p0"].seat, profiles["p1"].seat) == (0, 1)
    assert any("opening bid" in row.label for row in profiles["p0"].situations)
    assert not any("opening bid" in row.label for row in profiles["p1"].situations)
    for event in events:
        event.seq = state.step + 1
        state.apply(event)
    # The seat-1 proposal of the same code: profiled in seat 1, like p1 and nothing of seat 0's.
    review = review_behaviour(spec, seat_view(state, 1, keep_meta=False), "i1a2", honest, seat=1,
                              profile=few_episodes)
    assert asked[-1] == 1 and review.profile.seat == 1
    assert review.behaves_like == "p1" and review.ranked[0][1].distance == 0.0
    assert not any("opening bid" in line for line in review.description)
    # Recorded profiles are reused for their own seat only.
    again, none = member_profiles(spec, state, profile=None)
    assert none == [] and (again["p0"].seat, again["p1"].seat) == (0, 1)
    # A profile recorded with both seats pooled (before seats were profiled apart) is computed again.
    import dataclasses

    pooled = dataclasses.replace(state.profiles["p1"], profile={**state.profiles["p1"].profile, "seat": None})
    pooled.seq = state.step + 1
    state.apply(pooled)
    assert sorted(member_profiles(spec, state, profile=None)[0]) == ["p0"]


def test_a_diversity_that_records_nothing_builds_no_events(kuhn_session):
    """The diversity view of a session only viewed records nothing: the events (a record and
    the code's hints per member) are not built, and the distances are the same."""
    compute._cache.clear()
    root, session = kuhn_session
    state = fold(SessionStore(root).read(session).events)
    recorded = population_diversity(_spec(), state)
    unrecorded = population_diversity(_spec(), state, record=False)
    assert len(recorded.events) == len(state.ids) and unrecorded.events == []
    assert unrecorded.ids == recorded.ids and (unrecorded.distances == recorded.distances).all()
