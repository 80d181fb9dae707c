"""`csro diff` and `csro explain` (issue 22) with the real games and sandbox."""

from __future__ import annotations

import json
import pytest

from csro_tui.cli import main
from csro_tui.profiles import compute
from csro_tui.sessions.state import fold
from csro_tui.sessions.store import EVENTS_FILE, SessionStore
from tests.llm_server import llm_server  # noqa: F401 - the fixture

FORGETFUL_COUNTER = '''import random


class Policy:
    """A frequency counter whose counts are updated where the referee never looks."""

    def __init__(self, player, game):
        self.counts = [0, 0, 0]

    def update(self, obs, action):
        self.counts[action] += 1

    def act(self, obs):
        if random.random() < 0.0:
            return 0
        return (max(range(3), key=lambda m: self.counts[m]) + 1) % 3
'''

KUHN_CARD_RULE = """
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

# The card rule plus one bluff: bets the Jack when first to act.
KUHN_ONE_BLUFF = KUHN_CARD_RULE.replace(
    '        if obs["to_call"] > 0:\n',
    '        if obs["card"] == "J" and obs["betting"] == [[]]:\n            return 1\n        if obs["to_call"] > 0:\n',
)

CONSTANT_PAPER = '''class Policy:
    def __init__(self, player, game):
        pass

    def act(self, obs):
        return 1
'''


@pytest.fixture(autouse=True)
def _fresh_profiles():
    compute._cache.clear()


def test_diff_json_carries_the_decided_fields(tmp_path, capsys):
    bluff = tmp_path / "bluff.py"
    (tmp_path / "rule.py").write_text(KUHN_CARD_RULE)
    bluff.write_text(KUHN_ONE_BLUFF)
    assert main(["diff", str(tmp_path / "rule.py"), str(bluff), "--game", "kuhn_poker", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["distance"] > 0 and report["distance_stderr"] is None
    assert set(report["head_to_head"]) >= {"mean", "stderr"}
    (difference,) = report["differences"]
    assert difference["situation"] == "Jack, first to act (seat 0)"
    assert difference["a"]["check"] == 1.0 and difference["b"]["bet"] == 1.0


def test_diff_of_the_same_behaviour_in_a_sampled_game_is_zero_with_its_noise(tmp_path, capsys):
    (tmp_path / "paper.py").write_text(CONSTANT_PAPER)
    (tmp_path / "forgetful.py").write_text(FORGETFUL_COUNTER)
    # The forgetful counter never counts, so it plays Paper ((0 + 1) % 3) every throw: a constant policy.
    assert main(["diff", str(tmp_path / "paper.py"), str(tmp_path / "forgetful.py"),
                 "--game", "rrps(num_repetitions=30)", "--json", "--seed", "4"]) == 0
    report = json.loads(capsys.readouterr().out)
    # Same seeds, same behaviour: the same matches, so 0 exactly; the noise is the probes' own (uniform's).
    assert report["distance"] == 0.0 and report["distance_stderr"] > 0
    assert report["same_within_noise"] is True and report["differences"] == []
    assert report["head_to_head"]["mean"] == 0.0


def test_explain_shows_profile_words_and_hints_with_lines(tmp_path, capsys):
    (tmp_path / "forgetful.py").write_text(FORGETFUL_COUNTER)
    assert main(["explain", str(tmp_path / "forgetful.py"), "--game", "rrps(num_repetitions=30)", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    hints = {hint["line"]: hint["message"] for hint in report["hints"]}
    assert "update() is never called" in hints[10]
    assert "random.random()" in hints[14]
    # The branch that never ran against any probe, measured while profiling (coverage.py).
    assert {"line": 14, "message": "`random.random() < 0.0` was never true against any probe: the code under it "
                                   "never ran"} in report["hints"]
    assert report["profile"]["never_ran"] == [hint for hint in report["hints"] if "never true" in hint["message"]]
    assert report["profile"]["kind"] == "probes"
    assert any("beats constant rock" in sentence for sentence in report["description"])
    assert main(["explain", str(tmp_path / "forgetful.py"), "--game", "rrps(num_repetitions=30)"]) == 0
    out = capsys.readouterr().out
    assert "line 10: method update() is never called" in out and "seed 0 (repeat with --seed 0)" in out


def test_a_policy_diffed_with_itself_plays_itself_head_to_head(capsys):
    """The referee keys sandbox hosts by name: `csro diff seed:X seed:X` used to fail with
    'episode 0 is already running on this host'."""
    assert main(["diff", "seed:beat_last", "seed:beat_last", "--game", "rrps(num_repetitions=20)", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["distance"] == 0.0 and report["same_within_noise"] and report["differences"] == []
    assert report["head_to_head"]["mean"] == 0.0 and "failure" not in report["head_to_head"]


def test_a_session_member_is_named_session_id_member(tmp_path, capsys):
    assert main(["run", "--game", "kuhn_poker", "--oracle", "best-response", "--iterations", "1",
                 "--review", "auto", "--session-dir", str(tmp_path)]) == 0
    (session,) = [p.name for p in tmp_path.iterdir() if (p / EVENTS_FILE).exists()]
    state = fold(SessionStore(tmp_path).read(session).events)
    first, second = state.population[0].id, state.population[1].id
    capsys.readouterr()
    assert main(["diff", f"session:{session}:{first}", f"session:{session}:{second}", "--game", "kuhn_poker",
                 "--json", "--session-dir", str(tmp_path)]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["a"] == f"{session}:{first}" and report["distance"] > 0
    assert main(["explain", f"session:{session}:{first}", "--game", "kuhn_poker", "--json",
                 "--session-dir", str(tmp_path)]) == 0
    explained = json.loads(capsys.readouterr().out)
    assert explained["profile"]["policy"] == f"{session}:{first}"
    assert main(["explain", f"session:{session}:nobody", "--game", "kuhn_poker", "--session-dir", str(tmp_path)]) == 2
    assert "has no member 'nobody'" in capsys.readouterr().err


def test_an_invalid_policy_is_refused_with_its_line(tmp_path, capsys):
    (tmp_path / "bad.py").write_text("class Policy:\n    def act(self, obs):\n        return eval('1')\n")
    assert main(["explain", str(tmp_path / "bad.py"), "--game", "kuhn_poker"]) == 2
    assert "bad.py:" in capsys.readouterr().err


def test_explain_of_a_policy_whose_table_cannot_be_built_exits_1(tmp_path, capsys):
    (tmp_path / "crash.py").write_text(
        "class Policy:\n    def __init__(self, player, game):\n        pass\n\n"
        "    def act(self, obs):\n        if obs['card'] == 'K':\n            raise ValueError('no king')\n        return 0\n")
    assert main(["explain", str(tmp_path / "crash.py"), "--game", "kuhn_poker"]) == 1
    out = capsys.readouterr().out
    assert "its table could not be built" in out and "no king" in out


def test_explain_summary_asks_the_configured_model_and_labels_its_text(tmp_path, capsys, monkeypatch, llm_server):
    """The reply is fixed test text from tests/llm_server.py (no model): what is pinned is that
    it is asked about the code and that its text is shown apart, labelled as model text."""
    from tests.llm_server import ScriptedReply

    monkeypatch.chdir(tmp_path)  # no csro.toml of the checkout
    (tmp_path / "forgetful.py").write_text(FORGETFUL_COUNTER)
    llm_server.script(ScriptedReply(text="SCRIPTED TEST REPLY"))
    argv = ["explain", str(tmp_path / "forgetful.py"), "--game", "rrps(num_repetitions=30)", "--summary",
            "--model", "scripted-test-model", "--base-url", llm_server.base_url]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "model summary (model text from scripted-test-model" in out and "  SCRIPTED TEST REPLY" in out
    (request,) = llm_server.requests
    assert "def update(self, obs, action):" in json.dumps(request.body)


def test_explain_reuses_the_sessions_recorded_benchmark_row(tmp_path, capsys):
    assert main(["run", "--game", "rrps(num_repetitions=20)", "--oracle", "seed", "--iterations", "1",
                 "--review", "auto", "--session-dir", str(tmp_path)]) == 0
    (session,) = [p.name for p in tmp_path.iterdir() if (p / EVENTS_FILE).exists()]
    state = fold(SessionStore(tmp_path).read(session).events)
    member = state.population[0].id
    assert member in state.benchmark
    capsys.readouterr()
    assert main(["explain", f"session:{session}:{member}", "--game", "rrps(num_repetitions=20)", "--json",
                 "--session-dir", str(tmp_path)]) == 0
    explained = json.loads(capsys.readouterr().out)
    assert explained["benchmark_row"] == state.benchmark[member].per_bot  # reused, not replayed
    # The profile's seed derives from the session's: the same profile again, computed afresh.
    compute._cache.clear()
    assert main(["explain", f"session:{session}:{member}", "--game", "rrps(num_repetitions=20)", "--json",
                 "--session-dir", str(tmp_path)]) == 0
    assert json.loads(capsys.readouterr().out)["profile"] == explained["profile"]


def test_a_seated_session_member_is_explained_and_diffed_in_its_seat(tmp_path, capsys):
    """Two populations: `session:ID:MEMBER` of seat 1 is profiled in seat 1 only (in
    liars_dice seat 1 never opens the bidding)."""
    from csro_tui.games.registry import get_game
    from csro_tui.records import PolicyRecord
    from csro_tui.sessions import events as ev
    from csro_tui.sessions.store import SessionStore

    honest = get_game("liars_dice").seed_policies()["honest"]
    with SessionStore(tmp_path).create("seats") as writer:
        for event in [
            ev.SessionStarted(session_id="seats", game="liars_dice", oracle="seed", solver="nash",
                              config={"game": "liars_dice", "populations": 2, "seed": 4}, versions={}),
            ev.IterationStarted(iteration=0),
            ev.PolicyAdded(policy=PolicyRecord("p0", "honest", honest, "seed", seat=0)),
            ev.PolicyAdded(policy=PolicyRecord("p1", "honest", honest, "seed", seat=1)),
        ]:
            writer.append(event)
    assert main(["explain", "session:seats:p1", "--game", "liars_dice", "--json",
                 "--session-dir", str(tmp_path)]) == 0
    profile = json.loads(capsys.readouterr().out)["profile"]
    assert profile["seat"] == 1 and {row["seat"] for row in profile["situations"]} == {1}
    assert not any("opening bid" in row["label"] for row in profile["situations"])
    # The same code in the other seat is another profile: not the same behaviour.
    assert main(["diff", "session:seats:p0", "session:seats:p1", "--game", "liars_dice", "--json",
                 "--session-dir", str(tmp_path)]) == 0
    assert json.loads(capsys.readouterr().out)["distance"] > 0
