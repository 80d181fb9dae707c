"""Sessions recorded before the records moved (issue 21) still open, replay and verify.

The two sessions under tests/data/sessions_v1/ were recorded by main's code at
fea725a, before the shared records got their own module: a Kuhn poker
best-response run whose review script rejected one proposal and edited
another, and a seeded RRPS (20 throws) run scored against the benchmark bots.
They are version-1 event logs and must stay readable as they are.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from csro_tui.cli import main
from csro_tui.sessions.state import fold
from csro_tui.sessions.store import EVENTS_FILE, SessionStore

FIXTURES = Path(__file__).parents[1] / "data" / "sessions_v1"
KUHN = "kuhn_poker-best-response-reviewed"
RRPS = "rrps20-seed"


@pytest.fixture
def sessions_root(tmp_path) -> Path:
    # a copy: opening a session may write next to its log
    root = tmp_path / "sessions"
    shutil.copytree(FIXTURES, root)
    return root


def test_the_fixtures_are_version_1_logs():
    for name in (KUHN, RRPS):
        lines = (FIXTURES / name / EVENTS_FILE).read_text().splitlines()
        assert lines and {json.loads(line)["v"] for line in lines} == {1}


def test_a_version_1_kuhn_session_opens_and_folds_to_its_recorded_end(sessions_root):
    state = fold(SessionStore(sessions_root).read(KUHN).events)
    assert [m.name for m in state.population] == ["always_bet", "br-1", "br-2"]
    # the reviewed proposal's edit is what joined, the scripted rejection is kept
    assert "Edited in review" in state.population[1].source
    assert state.rejections[0][1] == "fixture: rejected on purpose"
    assert state.closed


def test_a_version_1_rrps_session_opens_and_folds_with_its_benchmark(sessions_root):
    state = fold(SessionStore(sessions_root).read(RRPS).events)
    assert [m.name for m in state.population] == ["beat_last", "markov_predictor", "cycle"]
    assert state.started.game == "rrps(num_repetitions=20)"
    assert set(state.benchmark) == {"p0", "p1", "p2"}


@pytest.mark.parametrize("name", [KUHN, RRPS])
def test_a_version_1_session_replays_and_verifies(sessions_root, name, capsys):
    assert main(["replay", name, "--session-dir", str(sessions_root)]) == 0
    assert main(["replay", name, "--session-dir", str(sessions_root), "--verify"]) == 0
    assert "reproduced: all" in capsys.readouterr().out


def test_a_validation_is_written_flat_as_version_1_wrote_it_plus_its_smoke_stderr():
    """Embedding the ValidationResult in proposal_validated kept the line's shape: the same keys
    beside proposal_id (so csro from before reads it), plus smoke_stderr, which it used to drop."""
    from csro_tui.sessions.events import from_record, to_record

    old = next(
        json.loads(line)
        for line in (FIXTURES / RRPS / EVENTS_FILE).read_text().splitlines()
        if json.loads(line)["type"] == "proposal_validated"
    )
    event = from_record(old)
    assert event.validation.smoke == old["smoke"] and event.validation.smoke_stderr == {}
    written = to_record(event)
    assert written["v"] == 1
    # the keys added since (all optional when read): smoke_stderr here, timing by the clock branch,
    # printed (what the candidate printed, discarded) by issue 29's item 11
    assert set(written) == set(old) | {"smoke_stderr", "timing", "printed"}
    assert {k: written[k] for k in old} == old


def test_what_a_candidate_printed_is_recorded_with_its_validation_and_read_back():
    from csro_tui.records import ValidationResult
    from csro_tui.sessions.events import ProposalValidated, from_record, to_record

    line = "printed 12 bytes to stdout/stderr, discarded (a policy's printed output is not kept)"
    event = ProposalValidated(proposal_id="i1.1", validation=ValidationResult(valid=True, printed=line))
    assert from_record(to_record(event)).validation.printed == line
