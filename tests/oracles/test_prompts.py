"""Prompt templates, user overrides, and the context budget of the message builders."""

from __future__ import annotations

import pytest

from csro_tui.records import Preview, Proposal
from csro_tui.oracles.llm.client import LLMClient, LLMConfig, estimate_tokens
from csro_tui.oracles.llm.extract import extract_code
from csro_tui.oracles.llm.prompts import (
    TEMPLATE_NAMES,
    ContextOptions,
    EvaluationFeedback,
    Inspiration,
    OpponentBrief,
    PromptError,
    PromptLibrary,
    fence_code,
    messages_tokens,
    select_opponents,
)
from csro_tui.sandbox.contract import POLICY_CONTRACT
from csro_tui.sandbox.failures import FailureCategory, PolicyFailure
from tests.llm_server import ScriptedReply, llm_server  # noqa: F401


class FakeSpec:
    """Just what the prompt builders read from a GameSpec."""

    title = "Repeated Rock-Paper-Scissors"
    rules_text = "Two players choose Rock, Paper or Scissors 1000 times."
    observation_text = "obs['history'] lists both players' past actions."

    def __init__(self, action_names=("Rock", "Paper", "Scissors")):
        self._action_names = list(action_names)

    def game_info(self):
        return {"action_names": self._action_names}


def opponent(policy_id: str, weight: float, code_chars: int = 4000, summary: str | None = "default") -> OpponentBrief:
    body = "\n".join(f"        x{i} = {i}  # {policy_id}" for i in range(code_chars // 30))
    source = f"class Policy:\n    def act(self, obs):\n{body}\n        return 0\n"
    if summary == "default":
        summary = f"{policy_id} always plays Rock, whatever happens."
    return OpponentBrief(policy_id, f"bot_{policy_id}", weight, source, summary)


@pytest.fixture
def library(monkeypatch):
    monkeypatch.delenv("CSRO_PROMPTS_DIR", raising=False)
    return PromptLibrary()


# ------------------------------------------------------------------ templates
def test_every_builtin_template_exists_and_is_valid(library):
    assert set(TEMPLATE_NAMES) <= set(library.names())
    for name in TEMPLATE_NAMES:
        library.fields_of(name)  # parses; a stray '$' would raise
    assert library.fields_of("game") == {
        "title", "rules", "actions", "observation", "contract", "game_dict", "example_observation", "example_policy"
    }
    assert library.fields_of("rejection") == {"reason", "source"}


def test_render_fills_fields(library):
    text = library.render("rejection", reason="it only plays Rock", source="```python\nX = 1\n```")
    assert "it only plays Rock" in text and "X = 1" in text and "$" not in text


def test_missing_and_unknown_fields_are_clear_errors(library):
    with pytest.raises(PromptError) as info:
        library.render("rejection", reason="r")
    assert "needs field(s) source" in str(info.value) and "rejection.md" in str(info.value)
    with pytest.raises(PromptError, match="has no field"):
        library.render("rejection", reason="r", source="s", colour="red")
    with pytest.raises(PromptError, match="no prompt template 'nonexistent'"):
        library.render("nonexistent")
    with pytest.raises(PromptError, match="bad prompt template name"):
        library.render("../etc/passwd")


def test_user_directory_overrides_one_template(tmp_path, monkeypatch):
    (tmp_path / "rejection.md").write_text("REJECTED because $reason; costs $$5\n$source\n", encoding="utf-8")
    library = PromptLibrary(user_dir=tmp_path)
    assert library.render("rejection", reason="weak", source="code") == "REJECTED because weak; costs $5\ncode"
    assert library.path_of("rejection") == tmp_path / "rejection.md"
    assert library.path_of("game").parent == library.builtin_dir  # not overridden
    # The same through the environment variable.
    monkeypatch.setenv("CSRO_PROMPTS_DIR", str(tmp_path))
    assert PromptLibrary().render("rejection", reason="weak", source="c").startswith("REJECTED because weak")


def test_bad_user_directory_and_bad_templates(tmp_path):
    with pytest.raises(PromptError, match="does not exist"):
        PromptLibrary(user_dir=tmp_path / "missing")
    (tmp_path / "summarize.md").write_text("Summarise\nthis costs $5 for $title\n", encoding="utf-8")
    with pytest.raises(PromptError, match="stray '\\$' at line 2"):
        PromptLibrary(user_dir=tmp_path).summarize_messages("class Policy: pass", FakeSpec())
    (tmp_path / "summarize.md").write_text("Describe $sourcecode\n", encoding="utf-8")
    with pytest.raises(PromptError, match="needs field\\(s\\) sourcecode"):
        PromptLibrary(user_dir=tmp_path).summarize_messages("class Policy: pass", FakeSpec())


def test_user_template_may_leave_out_fields(tmp_path):
    (tmp_path / "best_response.md").write_text("Beat these:\n$opponents\n", encoding="utf-8")
    messages = PromptLibrary(user_dir=tmp_path).best_response_messages(FakeSpec(), [opponent("a", 1.0, 100)])
    assert messages[1]["content"].startswith("Beat these:\n### Opponent 1: bot_a")


def test_empty_field_removes_its_line_and_empty_heading(tmp_path):
    (tmp_path / "t.md").write_text("# Task\nDo it.\n\n## Extra\n$extra\n\n## Code\n$code\n", encoding="utf-8")
    library = PromptLibrary(user_dir=tmp_path)
    code = "a = 1\n\n\n\nb = 2"  # blank lines inside a value are kept
    assert library.render("t", extra="", code=code) == f"# Task\nDo it.\n\n## Code\n{code}"
    assert library.render("t", extra="more", code="c") == "# Task\nDo it.\n\n## Extra\nmore\n\n## Code\nc"


def test_fence_code_outgrows_backticks_inside():
    source = 'DOC = """\n```\nexample\n```\n"""\n\n\nclass Policy:\n    pass\n'
    fenced = fence_code(source)
    assert fenced.startswith("````python\n") and fenced.endswith("\n````")
    assert extract_code(fenced) == source


# ------------------------------------------------------------------ builders
def test_system_message_has_game_and_contract(library):
    system, user = library.best_response_messages(FakeSpec(), [opponent("a", 1.0, 200)])
    assert system["role"] == "system" and user["role"] == "user"
    assert FakeSpec.rules_text in system["content"]
    assert FakeSpec.observation_text in system["content"]
    assert "0: Rock\n1: Paper\n2: Scissors" in system["content"]
    assert POLICY_CONTRACT.strip() in system["content"]


def test_many_action_names_are_capped(library):
    spec = FakeSpec(action_names=[f"move{i}" for i in range(500)])
    system = library.system_message(spec)["content"]
    assert "59: move59" in system and "60: move60" not in system and "500 actions in all" in system


def test_no_budget_shows_all_weighted_opponents_by_weight(library):
    opponents = [
        opponent("low", 0.2, 300), opponent("high", 0.5, 300), opponent("mid", 0.3, 300), opponent("zero", 0.0)
    ]
    user = library.best_response_messages(FakeSpec(), opponents)[1]["content"]
    assert user.index("bot_high") < user.index("bot_mid") < user.index("bot_low")
    assert "bot_zero" not in user
    assert "All 3 opponents with positive weight shown. 1 population member with zero weight not shown." in user


def shown_modes(user: str, ids: list[str]) -> dict[str, str]:
    """How each opponent appears in a prompt: "code", "summary" or "omitted"."""
    modes = {}
    for policy_id in ids:
        if f"(id {policy_id})" not in user:
            modes[policy_id] = "omitted"
        elif f"# {policy_id}\n" in user:
            modes[policy_id] = "code"
        else:
            modes[policy_id] = "summary"
    return modes


# Each opponent's code costs about 770 estimated tokens in the prompt, its summary about 27.
@pytest.mark.parametrize(
    "available, expected",
    [
        (None, {"a": "code", "b": "code", "c": "code"}),
        (100_000, {"a": "code", "b": "code", "c": "code"}),
        # room for two codes: the lowest weight is dropped, then comes back as a summary
        (2300, {"a": "code", "b": "code", "c": "summary"}),
        # room for one code
        (1300, {"a": "code", "b": "summary", "c": "summary"}),
        # no room for any code: everything summarised
        (400, {"a": "summary", "b": "summary", "c": "summary"}),
        # room for a single summary
        (30, {"a": "summary", "b": "omitted", "c": "omitted"}),
        (10, {"a": "omitted", "b": "omitted", "c": "omitted"}),
    ],
)
def test_budget_drops_lowest_weight_then_summarises(available, expected):
    opponents = [opponent("c", 0.2), opponent("a", 0.5), opponent("b", 0.3)]
    entries, note = select_opponents(opponents, available, ContextOptions())
    modes = {b.policy_id: mode for b, mode in entries}
    assert {pid: modes.get(pid, "omitted") for pid in "abc"} == expected
    assert [b.policy_id for b, _ in entries] == [pid for pid in "abc" if pid in modes]  # by weight
    summaries = sum(mode == "summary" for mode in modes.values())
    shown = len(entries)
    if shown == 3:
        assert note.startswith("All 3 opponents with positive weight shown")
    else:
        assert note.startswith(f"Showing {shown} of the 3 opponents")
    assert (f"{summaries} of them as summaries" in note) == (summaries > 0)


def test_builder_keeps_the_prompt_within_budget(library):
    opponents = [opponent("c", 0.2), opponent("a", 0.5), opponent("b", 0.3)]
    spec = FakeSpec()
    floor = messages_tokens(library.best_response_messages(spec, []))
    previous_shown = -1
    for extra in (150, 300, 1000, 1500, 2500, 5000):
        budget = floor + extra
        messages = library.best_response_messages(spec, opponents, budget_tokens=budget)
        assert messages_tokens(messages) <= budget
        modes = shown_modes(messages[1]["content"], ["a", "b", "c"])
        shown = sum(mode != "omitted" for mode in modes.values())
        assert shown >= previous_shown  # more room never shows fewer opponents
        previous_shown = shown
    assert modes == {"a": "code", "b": "code", "c": "code"}


def test_omitted_weight_is_reported(library):
    opponents = [opponent("a", 0.5), opponent("b", 0.3, summary=None), opponent("c", 0.2, summary=None)]
    entries, note = select_opponents(opponents, 1100, ContextOptions())
    assert [(b.policy_id, mode) for b, mode in entries] == [("a", "code")]
    assert note == "Showing 1 of the 3 opponents with positive weight; 2 left out (for space), total weight 0.500."


def test_top_k_and_summary_format(library):
    opponents = [
        opponent("a", 0.4, 200), opponent("b", 0.3, 200, summary=None), opponent("c", 0.2, 200), opponent("d", 0.1, 200)
    ]
    options = ContextOptions(top_k=3, opponent_format="summary")
    user = library.best_response_messages(FakeSpec(), opponents, options=options)[1]["content"]
    # b has no summary, so it is shown as code; d is beyond the top 3
    assert shown_modes(user, ["a", "b", "c", "d"]) == {"a": "summary", "b": "code", "c": "summary", "d": "omitted"}
    assert "1 left out (beyond the top 3 or for space), total weight 0.100" in user


def test_bad_context_options():
    with pytest.raises(PromptError, match="opponent_format"):
        ContextOptions(opponent_format="prose")


def test_rejections_are_fed_back_newest_kept(library):
    rejections = [
        (Proposal(source=f"class Policy:  # attempt {i}\n    pass\n", oracle="llm", name=f"p{i}"), f"reason {i}")
        for i in range(5)
    ]
    user = library.best_response_messages(
        FakeSpec(), [opponent("a", 1.0, 100)], rejections=rejections, options=ContextOptions(max_rejections=2)
    )[1]["content"]
    assert "reason 3" in user and "reason 4" in user and "# attempt 4" in user
    assert "reason 2" not in user and "# attempt 1" not in user
    assert "(3 earlier rejected proposals not shown.)" in user
    without = library.best_response_messages(FakeSpec(), [opponent("a", 1.0, 100)])[1]["content"]
    assert "rejected" not in without


def test_refine_includes_code_payoffs_failure_and_traceback_tail(library):
    failure = PolicyFailure(
        FailureCategory.CRASH, "ZeroDivisionError: division by zero",
        traceback="Traceback (most recent call last):\n" + "  frame\n" * 2000 + "ZeroDivisionError: division by zero",
    )
    preview = Preview(expected_payoff=-0.25, per_member={"p1": -0.5, "p2": 0.125}, failure=failure)
    feedback = EvaluationFeedback.from_preview(preview, names={"p1": "rock_bot (p1)"})
    source = "class Policy:\n    def act(self, obs):\n        return 1 // 0\n"
    user = library.refine_messages(
        FakeSpec(), source, feedback, options=ContextOptions(max_traceback_chars=500)
    )[1]["content"]
    assert fence_code(source) in user
    assert "FAILED: crash: ZeroDivisionError: division by zero" in user
    assert "Expected payoff against the meta-strategy: -0.250" in user
    assert "- rock_bot (p1): -0.500" in user and "- p2: +0.125" in user
    assert user.count("  frame") < 100 and user.rstrip().endswith("code block.")
    assert "ZeroDivisionError: division by zero\n```" in user  # the tail of the traceback is kept
    assert "## Opponents" not in user  # no opponents given: no empty section


def test_feedback_from_a_failed_preview_leaves_out_nan_payoffs():
    failure = PolicyFailure(FailureCategory.TIMEOUT, "act took longer than 1 s")
    preview = Preview(expected_payoff=float("nan"), per_member={"p1": float("nan"), "p2": 0.5}, failure=failure)
    text = EvaluationFeedback.from_preview(preview).render()
    assert "nan" not in text.lower()
    assert "FAILED: timeout: act took longer than 1 s" in text and "- p2: +0.500" in text
    assert "Expected payoff" not in text


def test_mutate_asks_for_edits_and_trims_inspirations(library):
    parent = "class Policy:\n    def act(self, obs):\n        return 0\n"
    inspirations = [Inspiration(f"i{n}", opponent(f"i{n}", 1.0).source, score=s) for n, s in enumerate([0.1, 0.9, 0.5])]
    messages = library.mutate_messages(FakeSpec(), parent, inspirations, parent_score=0.3, score_name="AggScore")
    user = messages[1]["content"]
    assert "<<<<<<< SEARCH" in user and ">>>>>>> REPLACE" in user
    assert "## Parent policy (AggScore: +0.300)" in user and fence_code(parent) in user
    assert user.index("i1 (AggScore +0.900)") < user.index("i2 (AggScore +0.500)") < user.index("i0 (AggScore +0.100)")
    assert "How the parent fared" not in user  # no feedback given
    # A budget with room for about two inspirations drops the lowest-scoring one.
    budget = messages_tokens(messages) - estimate_tokens(inspirations[0].source) + 10
    trimmed = library.mutate_messages(FakeSpec(), parent, inspirations, parent_score=0.3, budget_tokens=budget)
    assert messages_tokens(trimmed) <= budget
    assert "i0 (score" not in trimmed[1]["content"] and "i1 (score" in trimmed[1]["content"]
    assert "(1 more policy left out for space.)" in trimmed[1]["content"]


def test_summarize_messages(library):
    (message,) = library.summarize_messages("class Policy:\n    pass\n", FakeSpec())
    assert message["role"] == "user"
    assert "Repeated Rock-Paper-Scissors" in message["content"] and "two to four" in message["content"]
    assert "class Policy:\n    pass" in message["content"]


def test_built_messages_go_through_the_client(library, llm_server, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    fixture_code = (
        "class Policy:\n    def __init__(self, player, game):\n        pass\n\n"
        "    def act(self, obs):\n        return 1\n"
    )
    llm_server.script(ScriptedReply(text=f"Always Paper beats Rock.\n\n```python\n{fixture_code}```\n"))
    messages = library.best_response_messages(FakeSpec(), [opponent("a", 1.0, 100)], budget_tokens=8000)
    client = LLMClient(LLMConfig(base_url=llm_server.base_url, model="scripted-model"))
    call = client.complete(messages, purpose="best_response")
    assert llm_server.chat_requests[0]["messages"] == messages
    assert extract_code(call.response) == fixture_code


# ------------------------------------------------------------------ checked before a session is recorded
def _builtin_copy_without(tmp_path, missing: str):
    """A copy of the shipped prompts/ with one file removed, as a broken install would have."""
    import shutil

    from csro_tui.oracles.llm import prompts as prompts_module

    copy = tmp_path / "shipped"
    shutil.copytree(prompts_module.BUILTIN_PROMPTS_DIR, copy)
    (copy / missing).unlink()
    return copy


def test_check_passes_on_the_shipped_templates(library):
    library.check()


@pytest.mark.parametrize("missing, message", [
    ("system.md", "no prompt template 'system' in "),
    ("examples/generic.py", "no example policy: "),
])
def test_check_names_a_missing_template(tmp_path, monkeypatch, missing, message):
    from csro_tui.oracles.llm import prompts as prompts_module

    monkeypatch.delenv("CSRO_PROMPTS_DIR", raising=False)
    monkeypatch.setattr(prompts_module, "BUILTIN_PROMPTS_DIR", _builtin_copy_without(tmp_path, missing))
    with pytest.raises(PromptError, match=message):
        PromptLibrary().check()


def test_check_reports_a_broken_user_override(tmp_path):
    (tmp_path / "refine.md").write_text("Improve this for $5\n", encoding="utf-8")
    with pytest.raises(PromptError, match="refine.md has a stray"):
        PromptLibrary(user_dir=tmp_path).check()


@pytest.mark.parametrize("oracle", ["llm", "llm-refine", "llm-evolve"])
def test_csro_run_with_a_missing_template_says_so_in_one_line_and_records_nothing(
        tmp_path, monkeypatch, capsys, oracle):
    from csro_tui.cli import main
    from csro_tui.oracles.llm import prompts as prompts_module

    monkeypatch.delenv("CSRO_PROMPTS_DIR", raising=False)
    monkeypatch.setattr(prompts_module, "BUILTIN_PROMPTS_DIR", _builtin_copy_without(tmp_path, "examples/generic.py"))
    sessions = tmp_path / "sessions"
    code = main(["run", "--game", "kuhn_poker", "--oracle", oracle, "--iterations", "1",
                 "--session-dir", str(sessions), "--base-url", "http://127.0.0.1:9/v1", "--model", "m"])
    captured = capsys.readouterr()
    assert code != 0
    assert captured.err.strip().splitlines() == [
        f"csro: error: no example policy: {tmp_path / 'shipped' / 'examples' / 'generic.py'} is missing "
        "(a broken install? reinstall csro-tui)"
    ]
    assert not sessions.exists() or not any(sessions.iterdir())
