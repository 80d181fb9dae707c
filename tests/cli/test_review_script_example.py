"""`--review script:FILE`: an edit line is the decision for its proposal; the shipped example runs (issue 28.2)."""

from __future__ import annotations

import shutil
from pathlib import Path

from csro_tui.cli import main
from csro_tui.engine.setup import resume_engine
from csro_tui.sessions.state import fold
from csro_tui.sessions.store import EVENTS_FILE, SessionStore

EXAMPLES = Path(__file__).resolve().parents[2] / "docs" / "examples"


def only_session(root: Path) -> str:
    (session,) = [p.name for p in root.iterdir() if (p / EVENTS_FILE).exists()]
    return session


def test_the_documented_review_script_example_runs_as_shown(tmp_path, monkeypatch, capsys):
    # Exactly the documented command, from the repository's root.
    monkeypatch.chdir(EXAMPLES.parent.parent)
    code = main(["run", "--game", "kuhn_poker", "--oracle", "best-response", "--iterations", "3",
                 "--review", "script:docs/examples/review.jsonl", "--session-dir", str(tmp_path)])
    out = capsys.readouterr().out
    assert code == 0, out
    state = fold(SessionStore(tmp_path).read(only_session(tmp_path)).events)
    assert state.closed.reason == "completed" and state.completed_iterations == 3
    decisions = [(p.iteration, p.decision.action, p.decision.decided_by) for p in state.proposals.values()]
    assert decisions == [
        (1, "reject", "script:review.jsonl"), (1, "accept", "script:review.jsonl"),
        (2, "edit", "script:review.jsonl"), (2, "accept", "script:review.jsonl"),  # the edit line decided both
        (3, "accept", "script:review.jsonl"),
    ]
    edited = [m for m in state.population if state.edited_by(m.id)]
    assert [m.source for m in edited] == [(EXAMPLES / "my_fix.py").read_text()]
    assert "iteration   2  br-2                     edit → accept" in out
    assert "completed: 3 iterations" in out


def test_an_invalid_edit_is_refused_and_the_next_line_goes_to_the_next_proposal(tmp_path):
    script = tmp_path / "review.jsonl"
    script.write_text('{"action": "edit", "code": "this is not python ("}\n"accept"\n')
    assert main(["run", "--game", "kuhn_poker", "--oracle", "best-response", "--iterations", "1",
                 "--review", f"script:{script}", "--session-dir", str(tmp_path / "s")]) == 0
    state = fold(SessionStore(tmp_path / "s").read(only_session(tmp_path / "s")).events)
    decisions = [(p.decision.action, p.decision.note) for p in state.proposals.values()]
    assert decisions == [("edit", ""), ("reject", "accept refused: the code is invalid"), ("accept", "")]
    assert len(state.population) == 2 and state.closed.reason == "completed"


def test_a_resumed_script_session_does_not_count_the_edit_verdict_as_a_line(tmp_path):
    script = tmp_path / "review.jsonl"
    shutil.copy(EXAMPLES / "my_fix.py", tmp_path / "my_fix.py")
    script.write_text('{"action": "edit", "path": "my_fix.py"}\n"accept"\n')
    root = tmp_path / "s"
    assert main(["run", "--game", "kuhn_poker", "--oracle", "best-response", "--iterations", "1",
                 "--review", f"script:{script}", "--session-dir", str(root)]) == 0
    engine, _ = resume_engine(only_session(root), store=SessionStore(root), overrides={"iterations": 2})
    try:
        assert engine.reviewer.remaining == 1  # the "accept" line, for iteration 2
    finally:
        engine.writer.close()
