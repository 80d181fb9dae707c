"""The adversarial corpus: every hostile policy in corpus/, statically and in real matches.

Each case runs (a) through static validation, which must reject it on the
lines marked `# <- rejected` (or accept it, for the ones only run time can
judge), and (b) with validation bypassed, straight into a sandbox host in a
real referee lockstep, in both sandbox modes.  At run time the test checks
that the match ends as the case declares, with a one-line summary; that no
file outside the host's temporary directory changed; that nothing connected
to the loopback listener; that the parent's API key is not spelled in the
policy's moves; that no host process outlives the match; and that the
opponent (whose host also plays a clean bystander match) and the referee
behave exactly as in a clean run.  See harness.py for the case format.
"""

from __future__ import annotations

import re

import pytest

from csro_tui.games.registry import get_game
from tests.adversarial.harness import CASES, IDS, check_runtime_layers, MODES, Arena, arena_environment, static_issues

def test_the_corpus_covers_every_outcome():
    assert len(CASES) >= 30
    outcomes = {case.runtime(mode) for case in CASES for mode in MODES}
    assert outcomes == {"ok", "timeout", "memory", "crash", "forbidden", "illegal_action", "malformed"}
    assert {case.static for case in CASES} == {"valid", "invalid"}
    for case in CASES:
        assert case.expect["tries"].strip() and "\n" not in case.expect["tries"], case.name
        if any(case.runtime(mode) != "ok" for mode in MODES):
            assert case.expect.get("message"), f"{case.name}: a failing case must say what its summary reads"


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_static_validation(case, arena):
    issues = static_issues(case, arena)
    if case.static == "valid":
        assert issues == [], [str(issue) for issue in issues]
        assert case.marked_lines() == set(), "a statically valid case marks no lines"
        return
    assert issues, "static validation accepted it"
    assert {issue.line for issue in issues} == case.marked_lines(), [str(issue) for issue in issues]
    for issue in issues:
        assert issue.line >= 1 and "\n" not in issue.message and issue.message


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_runtime_layers_hold_without_static_validation(case, mode, arena):
    check_runtime_layers(case, mode, arena)


# -- through the engine -------------------------------------------------------------------

# Statically valid cases reach the sandbox through the engine's gate (the
# others stop at static validation, which the engine records just the same).
ENGINE_CASES = ["loop_in_act", "numpy_memory", "raise_system_exit", "nan_probability", "os_system"]


def test_hostile_proposals_through_the_engine_leave_the_session_intact(mode, arena, tmp_path):
    """A scripted oracle proposes hostile code, then one honest policy; the
    auto reviewer decides.  Every hostile proposal is refused with its
    failure recorded, the honest one joins, and the log replays to the
    engine's state with the population holding only the seed and it."""
    from csro_tui.config import RunConfig
    from csro_tui.engine import GameEvaluator, new_engine
    from tests.fakes import ScriptedOracle
    from csro_tui.records import Proposal
    from csro_tui.reviewers import AutoReviewer
    from csro_tui.sessions.state import fold
    from csro_tui.sessions.store import SessionStore
    from tests.adversarial.harness import DEFAULT_GAME, LIMITS, environment

    by_name = {case.name: case for case in CASES}
    hostile = [by_name[name] for name in ENGINE_CASES]
    spec = get_game(DEFAULT_GAME)
    honest = spec.seed_policies()["uniform_random"]
    sources = [case.source_text(arena) for case in hostile] + [honest]

    def propose(iteration, attempt, context):
        return Proposal(source=sources[attempt - 1], oracle="scripted", name=f"attempt-{attempt}", parent="p0")

    config = RunConfig(game=DEFAULT_GAME, oracle="scripted", iterations=1, max_attempts=len(sources),
                       smoke_episodes=2, benchmark="off", seed_policies=["frequency_counter"], workers=1, seed=0)
    store = SessionStore(tmp_path / "sessions", fsync=False)
    before = arena.snapshot()
    with arena_environment(arena), environment(CSRO_SANDBOX=mode):
        # threshold=None: valid code joins whatever its (seed-dependent) smoke
        # score, so the test is about the hostile proposals alone.
        engine = new_engine(config, store=store, reviewer=AutoReviewer(threshold=None), spec=spec,
                            oracle=ScriptedOracle(propose), evaluator=GameEvaluator(spec, limits=LIMITS, workers=1))
        try:
            outcome = engine.run()
        finally:
            engine.writer.close()

    assert outcome.reason == "completed"
    assert arena.snapshot() == before
    state = fold(store.read(engine.session_id).events)
    assert state.closed.reason == "completed" and state.completed_iterations == 1
    last = list(state.proposals.values())[-1]
    assert last.decision.action == "accept", (last.decision, last.validation)
    assert [(m.id, m.source) for m in state.population] == [
        ("p0", spec.seed_policies()["frequency_counter"]), ("p1", honest)]
    entries = list(state.proposals.values())
    assert len(entries) == len(sources)
    for case, entry in zip(hostile, entries):
        assert entry.decision.action == "reject", case.name
        validation = entry.validation
        assert not validation.valid, case.name
        if case.static == "invalid":
            assert validation.issues and validation.failure is None
            first = validation.issues[0]
            assert entry.decision.reason.startswith(f"invalid: line {first['line']}: {first['message']}")
        else:
            summary = validation.failure.summary()
            assert validation.failure.category.value == case.runtime(mode), summary
            assert re.search(case.expect["message"], summary), summary
            assert entry.decision.reason == summary
        assert "\n" not in entry.decision.reason
    assert entries[-1].decision.action == "accept", (entries[-1].decision, entries[-1].validation)
    policies = sorted(p.name for p in (tmp_path / "sessions" / engine.session_id / "policies").iterdir())
    assert policies == ["p0.py", "p1.py"]


def test_the_table_in_security_md_is_the_corpus():
    """docs/SECURITY.md shows make_table.py's output; the runtime tests above
    check that each case really ends as its EXPECT says, so checking the
    table against EXPECT (and static validation) keeps the document true."""
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[2] / "docs" / "SECURITY.md").read_text()
    rows = {}
    for line in doc.splitlines():
        match = re.match(r"^\| `([a-z0-9_]+)` \| (.*) \|$", line)
        if match:
            rows[match.group(1)] = [cell.strip() for cell in match.group(2).split(" | ")]
    assert sorted(rows) == sorted(IDS), "regenerate the table: python tests/adversarial/make_table.py"
    arena = Arena()
    try:
        for case in CASES:
            tries, static, *outcomes = rows[case.name]
            issues = static_issues(case, arena)
            assert static == (f"rejected (line {issues[0].line})" if issues else "accepted"), case.name
            assert tries == case.tries.replace("|", "\\|")
            expected = [case.runtime(mode) for mode in MODES]
            assert [cell.replace(" (harmless)", "") for cell in outcomes] == expected, case.name
    finally:
        arena.close()
