"""Session log, store, fold, run configuration and headless reviewers."""

from __future__ import annotations

import json
import math

import pytest

from csro_tui.config import RunConfig, load_run_config
from csro_tui.errors import ConfigError, SessionError
from csro_tui.records import Decision, PolicyRecord, Preview, Proposal, ReviewRequest, ValidationResult
from csro_tui.sandbox.failures import FailureCategory, PolicyFailure
from csro_tui.reviewers import AutoReviewer, ScriptReviewer, make_reviewer
from csro_tui.sessions.events import (
    EVENT_TYPES,
    BenchmarkEvaluated,
    GamePlayed,
    IterationFinished,
    IterationStarted,
    MetaSolved,
    MetricsComputed,
    BehaviourProfiled,
    OracleFailed,
    PayoffRecord,
    PayoffsEvaluated,
    PolicyAdded,
    ProposalCreated,
    ProposalDecided,
    ProposalPreviewed,
    ProposalValidated,
    SessionClosed,
    SessionResumed,
    SessionStarted,
    from_record,
    to_record,
)
from csro_tui.sessions.state import fold
from csro_tui.sessions.store import EVENTS_FILE, SessionStore, read_log

FAILURE = PolicyFailure(FailureCategory.TIMEOUT, "act took 2 s", "Traceback: ...", "candidate")


def started(session_id: str = "s") -> SessionStarted:
    return SessionStarted(
        session_id=session_id,
        game="kuhn_poker",
        oracle="best-response",
        solver="nash",
        config=RunConfig().to_dict(),
        versions={"python": "3.11"},
    )


def one_of_each() -> list:
    """One event of every type, with every nested kind of value."""
    proposal = Proposal(source="class Policy: ...", oracle="llm", name="n", parent="p0", rationale="r",
                        llm_calls=[{"messages": [{"role": "user", "content": "hi"}], "usage": {"tokens": 3}}])
    return [
        started(),
        SessionResumed(overrides={"iterations": 5}, versions={"python": "3.12"}, discarded_torn_line=True),
        IterationStarted(iteration=1),
        PolicyAdded(policy=PolicyRecord("p0", "seed", "src0", "seed")),
        OracleFailed(iteration=1, attempt=1, error="boom", traceback="tb"),
        ProposalCreated(proposal_id="i1.1", iteration=1, attempt=2, proposal=proposal),
        ProposalValidated(proposal_id="i1.1", validation=ValidationResult(
            valid=False, issues=[{"line": 3, "col": 1, "message": "m"}], smoke={"p0": 0.5}, smoke_episodes=2,
            smoke_stderr={"p0": 0.125}, failure=FAILURE)),
        ProposalPreviewed(proposal_id="i1.1", preview=Preview(0.25, {"p0": 0.25}, {"agg_score": -1.0}, FAILURE),
                          exact=True),
        ProposalDecided(proposal_id="i1.1", action="edit", decided_by="human", edited_source="x", reason="why"),
        PolicyAdded(policy=PolicyRecord("p1", "n", "src", "llm", "p0", 1), proposal_id="i1.1"),
        PayoffsEvaluated(entries=[PayoffRecord("p1", "p0", 0.5, 0.1, 4, [1, 2], False, FAILURE)]),
        BenchmarkEvaluated(policy_id="p1", per_bot={"rock": 1.0}, episodes=2, seed=0),
        MetaSolved(solver="nash", population=["p0", "p1"], strategy=[0.25, 0.75], value=0.0, nash_conv=1e-9),
        MetricsComputed(iteration=1, population_size=2, meta_strategy={"p0": 0.25, "p1": 0.75}, meta_nash_conv=0.0,
                        new_policy="p1", new_policy_payoff=0.5, exploitability=0.1,
                        benchmark={"meta": {"agg_score": -0.5}}),
        IterationFinished(iteration=1, accepted="p1", attempts=2),
        GamePlayed(policy_id="p1", opponent="human", seat=0, transcript=[{"a": 1}], returns=[1.0, -1.0], seed=3),
        BehaviourProfiled(policy_id="i1.1", source_hash="ab", profile={"kind": "exact", "situations": []},
                          description=["bets the King"], hints=[{"line": 3, "message": "m"}],
                          nearest={"member": "p1", "distance": 0.0, "stderr": None, "differences": []}),
        SessionClosed(reason="completed", message="done"),
    ]


def test_every_event_type_round_trips_through_json():
    events = one_of_each()
    assert {e.TYPE for e in events} == set(EVENT_TYPES)
    for seq, event in enumerate(events, start=1):
        event.seq, event.ts = seq, "2025-01-01T00:00:00Z"
        record = json.loads(json.dumps(to_record(event)))
        assert record["v"] == 1 and record["seq"] == seq and record["type"] == event.TYPE
        assert from_record(record) == event


def test_non_finite_numbers_are_recorded_as_null():
    event = ProposalPreviewed(proposal_id="x", preview=Preview(math.nan, {"p0": math.inf}))
    record = to_record(event)
    json.dumps(record, allow_nan=False)
    back = from_record(record).preview
    assert math.isnan(back.expected_payoff) and math.isnan(back.per_member["p0"])


def write_session(store: SessionStore, session_id: str = "s", events=None):
    writer = store.create(session_id)
    for event in events if events is not None else one_of_each():
        writer.append(event)
    writer.close()
    return store.session_dir(session_id) / EVENTS_FILE


def test_store_writes_one_fsynced_line_per_event_and_reads_it_back(tmp_path):
    store = SessionStore(tmp_path)
    path = write_session(store)
    lines = path.read_text().splitlines()
    assert len(lines) == len(one_of_each())
    assert [json.loads(line)["seq"] for line in lines] == list(range(1, len(lines) + 1))
    log = store.read("s")
    assert log.warnings == [] and [e.TYPE for e in log.events] == [e.TYPE for e in one_of_each()]
    assert all(e.ts.endswith("Z") for e in log.events)


def test_accepted_code_is_written_under_policies(tmp_path):
    writer = SessionStore(tmp_path).create("s")
    target = writer.write_policy(PolicyRecord("p3", "n", "class Policy:\n    pass\n", "seed"))
    assert target == tmp_path / "s" / "policies" / "p3.py"
    assert target.read_text() == "class Policy:\n    pass\n"


def test_torn_last_line_is_reported_and_skipped(tmp_path):
    store = SessionStore(tmp_path)
    path = write_session(store)
    complete = path.read_bytes()
    count = len(one_of_each())
    path.write_bytes(complete + b'{"v": 1, "seq": %d, "ts": "x", "type": "game_pl' % (count + 1))
    log = store.read("s")
    assert len(log.events) == count
    (warning,) = log.warnings
    assert warning.line == count + 1 and "incomplete last line" in str(warning) and str(path) in str(warning)


def test_resuming_cuts_the_torn_line_off_and_keeps_it_aside(tmp_path):
    store = SessionStore(tmp_path)
    path = write_session(store, events=one_of_each()[:3])
    path.write_bytes(path.read_bytes() + b'{"v": 1, "seq": 4, "ty')
    writer, log = store.open_for_append("s")
    assert log.torn_offset is not None
    writer.append(IterationFinished(iteration=1, accepted=None))
    writer.close()
    log = store.read("s")
    assert log.warnings == [] and [e.seq for e in log.events] == [1, 2, 3, 4]
    assert (path.parent / "events.jsonl.torn").read_bytes().startswith(b'{"v": 1, "seq": 4, "ty')


def test_a_complete_last_line_without_newline_is_kept(tmp_path):
    store = SessionStore(tmp_path)
    path = write_session(store, events=one_of_each()[:3])
    path.write_bytes(path.read_bytes().rstrip(b"\n"))
    assert len(store.read("s").events) == 3
    writer, _ = store.open_for_append("s")
    writer.append(IterationFinished(iteration=1, accepted=None))
    writer.close()
    assert [e.seq for e in store.read("s").events] == [1, 2, 3, 4]


def test_a_corrupt_line_in_the_middle_names_file_and_line(tmp_path):
    store = SessionStore(tmp_path)
    path = write_session(store)
    lines = path.read_text().splitlines(keepends=True)
    lines[4] = lines[4][: len(lines[4]) // 2] + "\n"
    path.write_text("".join(lines))
    with pytest.raises(SessionError) as raised:
        store.read("s")
    assert str(path) in str(raised.value) and "line 5" in str(raised.value)
    assert "\n" not in str(raised.value)


def test_a_sequence_gap_is_corruption(tmp_path):
    store = SessionStore(tmp_path)
    path = write_session(store)
    lines = path.read_text().splitlines(keepends=True)
    del lines[2]
    path.write_text("".join(lines))
    with pytest.raises(SessionError, match=r"line 3: corrupt event \(sequence number 4, expected 3\)"):
        store.read("s")


@pytest.mark.parametrize(
    "content, message",
    [
        (b"hello world\n", "not a csro session log"),
        (b'{"name": "package.json"}\n', "not a csro session log"),
        (b"\xff\xfe\x00binary\n", "not a csro session log"),
        (b"", "empty session log"),
        (json.dumps({**to_record(IterationStarted(iteration=1, seq=1))}).encode() + b"\n", "first event is"),
        (json.dumps({**to_record(started()), "seq": 1, "v": 99}).encode() + b"\n", "schema version 99"),
    ],
)
def test_foreign_or_empty_files_are_clear_errors(tmp_path, content, message):
    directory = tmp_path / "x"
    directory.mkdir()
    (directory / EVENTS_FILE).write_bytes(content)
    with pytest.raises(SessionError, match=message):
        read_log(directory)


def test_missing_sessions_and_directories_are_clear_errors(tmp_path):
    store = SessionStore(tmp_path / "nowhere")
    with pytest.raises(SessionError, match="no session 'abc' under"):
        store.read("abc")
    (tmp_path / "plain").mkdir()
    with pytest.raises(SessionError, match="not a session directory"):
        SessionStore(tmp_path).read("plain")
    assert store.list_sessions() == []


def test_a_session_can_be_named_by_path(tmp_path):
    store = SessionStore(tmp_path)
    path = write_session(store)
    elsewhere = SessionStore(tmp_path / "other")
    assert len(elsewhere.read(str(path)).events) == len(one_of_each())
    assert len(elsewhere.read(str(path.parent)).events) == len(one_of_each())


def test_creating_an_existing_session_is_refused(tmp_path):
    store = SessionStore(tmp_path)
    store.create("s").close()
    with pytest.raises(SessionError, match="already exists"):
        store.create("s")


def test_new_session_ids_are_unique_and_safe(tmp_path):
    store = SessionStore(tmp_path)
    first = store.new_session_id("rrps(num_repetitions=10)", "llm")
    store.create(first).close()
    second = store.new_session_id("rrps(num_repetitions=10)", "llm")
    assert first != second
    assert "(" not in first and "=" not in first and first.endswith("-llm")


def test_list_sessions_summarises_and_flags_unreadable_ones(tmp_path):
    store = SessionStore(tmp_path)
    write_session(store, "good")
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / EVENTS_FILE).write_text("not json\n")
    infos = {info.id: info for info in store.list_sessions()}
    good, bad = infos["good"], infos["bad"]
    assert (good.game, good.oracle, good.iterations, good.population_size) == ("kuhn_poker", "best-response", 1, 2)
    assert good.best_metric == ("exploitability", 0.1) and good.closed == "completed"
    assert bad.error and "line 1" in bad.error


def test_fold_tracks_population_proposals_and_steps():
    events = one_of_each()
    for seq, event in enumerate(events, start=1):
        event.seq = seq
    state = fold(events)
    assert [m.id for m in state.population] == ["p0", "p1"]
    assert state.proposals["i1.1"].decision.action == "edit"
    assert state.proposals["i1.1"].policy_id == "p1"
    assert state.payoff("p0", "p1") == -0.5 and state.payoff("p1", "p1") == 0.0
    assert state.meta_strategy == {"p0": 0.25, "p1": 0.75}
    assert state.matrix().tolist() == [[0.0, -0.5], [0.5, 0.0]]
    assert state.missing_payoffs() == []
    assert state.config["iterations"] == 5  # the resume's override
    assert state.games[0].opponent == "human"
    earlier = state.at(9)
    assert earlier.step == 9 and [m.id for m in earlier.population] == ["p0"]
    assert earlier.proposals["i1.1"].decision is not None and earlier.missing_payoffs() == []
    assert state.at(10).missing_payoffs() == [("p1", "p0")]
    assert state.at(8).proposals["i1.1"].decision is None
    assert state.at(0).step == 0
    with pytest.raises(SessionError, match="outside this session"):
        state.at(99)


def test_fold_rejects_inconsistent_logs():
    events = [started(), PolicyAdded(policy=PolicyRecord("p0", "a", "s", "seed"))]
    events.append(PolicyAdded(policy=PolicyRecord("p0", "b", "s", "seed")))
    for seq, event in enumerate(events, start=1):
        event.seq = seq
    with pytest.raises(SessionError, match="added twice"):
        fold(events)
    orphan = ProposalDecided(proposal_id="nope", action="accept", decided_by="x", seq=2)
    with pytest.raises(SessionError, match="unknown proposal 'nope'"):
        fold([events[0], orphan])


# --- configuration ----------------------------------------------------------------


def test_config_layers_defaults_file_env_flags(tmp_path):
    config_file = tmp_path / "csro.toml"
    config_file.write_text('[run]\ngame = "leduc_poker"\niterations = 7\nseed = 3\nseed_policies = ["a", "b"]\n')
    env = {"CSRO_ITERATIONS": "9", "CSRO_SESSIONS_DIR": str(tmp_path / "s")}
    config = load_run_config({"seed": 11, "solver": None}, config_file=config_file, env=env)
    assert config.game == "leduc_poker"  # file
    assert config.iterations == 9  # env beats file
    assert config.seed == 11  # flag beats file
    assert config.solver == "nash"  # a flag not given leaves the default
    assert config.sessions_dir == str(tmp_path / "s")
    assert config.seed_policies == ["a", "b"]


def test_config_file_from_environment_and_bad_values(tmp_path):
    config_file = tmp_path / "c.toml"
    config_file.write_text("episodes = 50\n")
    assert load_run_config(env={"CSRO_CONFIG": str(config_file)}).episodes == 50
    with pytest.raises(ConfigError, match="CSRO_ITERATIONS: iterations='many' is not an integer"):
        load_run_config(env={"CSRO_ITERATIONS": "many"})
    config_file.write_text("colour = 'blue'\n")
    with pytest.raises(ConfigError, match="unknown setting 'colour'"):
        load_run_config(config_file=config_file, env={})
    config_file.write_text("this is = not toml [\n")
    with pytest.raises(ConfigError, match=str(config_file)):
        load_run_config(config_file=config_file, env={})
    with pytest.raises(ConfigError, match="no such file"):
        load_run_config(config_file=tmp_path / "missing.toml", env={})
    with pytest.raises(ConfigError, match="max_attempts must be >= 1"):
        load_run_config({"max_attempts": 0}, env={})
    with pytest.raises(ConfigError, match="review must be auto, auto:THRESHOLD, valid or script:FILE"):
        load_run_config({"review": "maybe"}, env={})


def test_api_keys_are_not_configuration():
    assert not any("key" in name for name in RunConfig.__dataclass_fields__)


# --- reviewers -----------------------------------------------------------------------


def review(valid=True, failure=None, preview_failure=None) -> ReviewRequest:
    return ReviewRequest(
        proposal_id="i1.1",
        proposal=Proposal(source="s", oracle="o", name="n"),
        iteration=1,
        attempt=1,
        validation=ValidationResult(valid=valid, failure=failure,
                                    issues=[] if valid or failure else [{"line": 4, "col": 0, "message": "import os"}]),
        preview=Preview(0.0, {}, failure=preview_failure) if valid else None,
    )


def test_auto_reviewer():
    reviewer = AutoReviewer()
    # Issue 14: a proposal that does not beat the meta-strategy is rejected; `valid` accepts it.
    assert reviewer.decide(review()).action == "reject"
    assert "no improvement" in reviewer.decide(review()).reason
    assert AutoReviewer(threshold=None).decide(review()) == Decision.accept()
    assert reviewer.decide(review(valid=False)).reason == "invalid: line 4: import os"
    assert reviewer.decide(review(valid=False, failure=FAILURE)).reason == "timeout: act took 2 s (candidate)"
    assert reviewer.decide(review(preview_failure=FAILURE)).action == "reject"


def test_script_reviewer_gives_decisions_in_order(tmp_path):
    (tmp_path / "fix.py").write_text("class Policy: pass\n")
    script = tmp_path / "review.jsonl"
    script.write_text(
        '"accept"\n'
        "# a comment\n"
        '{"action": "reject", "reason": "too passive"}\n'
        '{"action": "edit", "path": "fix.py", "reason": "typo"}\n'
        '{"action": "edit", "code": "inline"}\n'
    )
    reviewer = make_reviewer(f"script:{script}")
    assert isinstance(reviewer, ScriptReviewer) and reviewer.name == "script:review.jsonl"
    got = [reviewer.decide(review()) for _ in range(4)]
    assert got == [
        Decision.accept(),
        Decision.reject("too passive"),
        Decision.edit("class Policy: pass\n", "typo"),
        Decision.edit("inline"),
    ]
    with pytest.raises(ConfigError, match="has 4 decisions; proposal i1.1 needs decision 5"):
        reviewer.decide(review())


def test_script_reviewer_reads_json_lists_and_can_skip(tmp_path):
    script = tmp_path / "r.json"
    script.write_text('["accept", {"action": "reject", "reason": "r"}]')
    reviewer = ScriptReviewer(script)
    reviewer.skip(1)
    assert reviewer.decide(review()) == Decision.reject("r")


@pytest.mark.parametrize(
    "text, message",
    [
        ('"accept"\n{"action": "reject"}\n', "line 2: a rejection needs a reason"),
        ('"maybe"\n', "line 1: action 'maybe' is not one of"),
        ('{"action": "edit"}\n', 'line 1: an edit needs exactly one of "code"'),
        ('{"action": "edit", "path": "missing.py"}\n', "line 1: cannot read edit file"),
        ('{"action": "accept", "colour": 1}\n', "unknown key"),
        ('"accept"\n{broken\n', "line 2: not valid JSON"),
        ('["accept", 3]', "entry 2: expected"),
        ("", "empty"),
    ],
)
def test_malformed_review_scripts_are_config_errors(tmp_path, text, message):
    script = tmp_path / "r.jsonl"
    script.write_text(text)
    with pytest.raises(ConfigError, match=message) as raised:
        ScriptReviewer(script)
    assert str(script) in str(raised.value)


def test_review_spec_errors(tmp_path):
    with pytest.raises(ConfigError, match="use auto, auto:THRESHOLD, valid or script:FILE"):
        make_reviewer("person")
    with pytest.raises(ConfigError, match="must be a number"):
        make_reviewer("auto:high")
    assert make_reviewer("auto:0.25").threshold == 0.25
    assert make_reviewer("valid").threshold is None
    with pytest.raises(ConfigError, match="no such file"):
        make_reviewer(f"script:{tmp_path / 'none.json'}")
