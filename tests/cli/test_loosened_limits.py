"""Issue 35: sandbox limits raised above their defaults (by csro.toml or a flag) are said at the
start of the run, recorded in the session's first event, and shown with every review."""

from __future__ import annotations

import json
from pathlib import Path

from csro_tui.cli import main
from csro_tui.sessions.review import review_request
from csro_tui.sessions.state import fold
from csro_tui.sessions.store import EVENTS_FILE, SessionStore
from csro_tui.tui.adapt import review_info
from csro_tui.tui.screens.review import summary_text

FLAGS = ["run", "--game", "kuhn_poker", "--oracle", "best-response", "--iterations", "1", "--review", "valid"]
OLD_SESSIONS = Path(__file__).parents[1] / "data" / "sessions_v1"
LINE = "sandbox limits above their defaults: move_timeout 5 s (default 1 s), memory_mb 2048 MB (default 1024 MB)"


def only_session(root: Path) -> Path:
    (session,) = [p for p in root.iterdir() if (p / EVENTS_FILE).exists()]
    return session


def test_a_loosened_limit_is_said_recorded_and_shown_in_review(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("CSRO_CONFIG", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    Path("csro.toml").write_text("memory_mb = 2048\nepisode_memory_mb = 4\n")  # 4 < 8: tightened, not said
    assert main([*FLAGS, "--move-timeout", "5", "--session-dir", "s"]) == 0
    out = capsys.readouterr().out
    assert out.count(LINE) == 1, out
    assert out.index(LINE) < out.index("iteration")  # at the start, before the run's rows

    session = only_session(tmp_path / "s")
    first = json.loads((session / EVENTS_FILE).read_text().splitlines()[0])
    assert first["loosened_limits"] == {"move_timeout": {"value": 5.0, "default": 1.0},
                                        "memory_mb": {"value": 2048, "default": 1024}}
    state = fold(SessionStore(tmp_path / "s").read(session.name).events)
    request = review_request(state, next(iter(state.proposals)))
    assert request.loosened_limits == LINE
    info = review_info(request)
    assert f"warning: {LINE}" in info.validation  # the Checks tab
    assert LINE in summary_text(info).plain  # the review screen's header


def test_default_limits_say_nothing_and_write_no_field(tmp_path, capsys):
    assert main([*FLAGS, "--session-dir", str(tmp_path)]) == 0
    assert "sandbox limits" not in capsys.readouterr().out
    first = json.loads((only_session(tmp_path) / EVENTS_FILE).read_text().splitlines()[0])
    assert "loosened_limits" not in first


def test_old_sessions_still_read_and_review_with_no_note():
    for session in OLD_SESSIONS.iterdir():
        state = fold(SessionStore(OLD_SESSIONS).read(session.name).events)
        assert state.started.loosened_limits is None
        for proposal_id in state.proposals:
            assert review_request(state, proposal_id).loosened_limits == ""
