"""Replay and resume: a recorded session folds to the live state; a session
cut off after any event (or in the middle of one) resumes and finishes with
everything it had accepted."""

from __future__ import annotations

import pytest

from csro_tui.config import RunConfig
from csro_tui.engine import new_engine, resume_engine
from tests.fakes import ToyEvaluator, ToySpec, best_member_solve, climbing_oracle, strength, toy_policy
from csro_tui.errors import ConfigError
from csro_tui.records import Decision, ReviewRequest
from csro_tui.sessions.state import fold
from csro_tui.sessions.store import EVENTS_FILE, SessionStore


class RuleReviewer:
    """Decides from the request alone, so a resumed run decides as the original did:
    iteration 2's first proposal is rejected, iteration 3's first is edited."""

    name = "rules"

    def decide(self, review: ReviewRequest) -> Decision:
        if review.iteration == 2 and review.attempt == 1:
            return Decision.reject("not bold enough")
        if review.iteration == 3 and review.attempt == 1 and "EDITED" not in review.proposal.source:
            return Decision.edit(toy_policy(strength(review.proposal.source) + 0.05, extra="EDITED = 1\n"))
        return Decision.accept()


CONFIG = RunConfig(game="toy", oracle="scripted", iterations=4, seed=5)


def parts():
    return {
        "spec": ToySpec(),
        "oracle": climbing_oracle(),
        "evaluator": ToyEvaluator(),
        "meta_solve": best_member_solve,
        "reviewer": RuleReviewer(),
    }


def record_full_run(root) -> tuple[SessionStore, object]:
    # fsync off: this file writes thousands of events; durability is not what it tests
    store = SessionStore(root, fsync=False)
    engine = new_engine(CONFIG, store=store, session_id="full", **parts())
    engine.run()
    engine.writer.close()
    return store, engine


def test_replaying_a_recorded_session_gives_exactly_the_live_end_state(tmp_path):
    store, engine = record_full_run(tmp_path)
    replayed = fold(store.read("full").events)
    assert replayed == engine.state
    assert [strength(m.source) for m in replayed.population] == [0.0, 0.1, 0.2, 0.35, 0.45]
    assert replayed.rejections[0][1] == "not bold enough"
    # every step can be rebuilt, without evaluating anything
    for step in (1, 10, replayed.step // 2, replayed.step):
        assert replayed.at(step) == fold(e for e in engine.state.events if e.seq <= step)


def test_policy_files_match_the_population(tmp_path):
    store, engine = record_full_run(tmp_path)
    for member in engine.state.population:
        assert (store.session_dir("full") / "policies" / f"{member.id}.py").read_text() == member.source


def cut_session(store: SessionStore, lines: list[bytes], keep: int, torn: bool) -> str:
    session_id = f"cut-{keep}-{'torn' if torn else 'clean'}"
    directory = store.session_dir(session_id)
    directory.mkdir()
    data = b"".join(lines[:keep])
    if torn:
        data += lines[keep][: len(lines[keep]) // 2]
    (directory / EVENTS_FILE).write_bytes(data)
    return session_id


def test_a_session_cut_after_any_event_resumes_and_finishes_with_everything_accepted(tmp_path):
    store, full = record_full_run(tmp_path)
    lines = (store.session_dir("full") / EVENTS_FILE).read_bytes().splitlines(keepends=True)
    expected_sources = [m.source for m in full.state.population]
    for keep in range(1, len(lines)):
        for torn in (False, True):
            session_id = cut_session(store, lines, keep, torn)
            before = fold(store.read(session_id).events)
            engine, warnings = resume_engine(session_id, store=store, **parts())
            assert bool(warnings) == torn
            outcome = engine.run()
            engine.writer.close()
            where = f"cut after event {keep}{' + torn line' if torn else ''}"
            assert outcome.reason == "completed", where
            after = fold(store.read(session_id).events)
            assert after == engine.state, where
            # nothing accepted is lost: every policy that had joined is there, unchanged
            assert after.population[: len(before.population)] == before.population, where
            assert [m.source for m in after.population] == expected_sources, where
            assert after.completed_iterations == 4, where
            assert after.missing_payoffs() == [], where
            resumed = [e for e in after.events if e.TYPE == "session_resumed"]
            assert len(resumed) == 1 and resumed[0].discarded_torn_line == torn, where


def test_resume_reuses_an_undecided_proposal_instead_of_asking_the_oracle_again(tmp_path):
    store, full = record_full_run(tmp_path)
    lines = (store.session_dir("full") / EVENTS_FILE).read_bytes().splitlines(keepends=True)
    created = next(i for i, line in enumerate(lines) if b'"proposal_created"' in line and b'"iteration": 2' in line)
    session_id = cut_session(store, lines, created + 1, torn=False)
    engine, _ = resume_engine(session_id, store=store, **{**parts(), "oracle": (oracle := climbing_oracle())})
    engine.run()
    first_iteration_2 = [c for c in oracle.contexts if c.iteration == 2]
    # the undecided proposal was reviewed (and rejected); the oracle was asked once more, not twice
    assert len(first_iteration_2) == 1
    assert first_iteration_2[0].rejections[-1][1] == "not bold enough"


def test_resume_refuses_to_change_what_defines_the_session(tmp_path):
    store, _ = record_full_run(tmp_path)
    with pytest.raises(ConfigError, match="--game 'kuhn_poker' differs"):
        resume_engine("full", store=store, overrides={"game": "kuhn_poker"}, **parts())
    engine, _ = resume_engine("full", store=store, overrides={"iterations": 6}, **parts())
    outcome = engine.run()
    assert outcome.state.completed_iterations == 6
    resumed = [e for e in outcome.state.events if e.TYPE == "session_resumed"][0]
    assert resumed.overrides == {"iterations": 6}
