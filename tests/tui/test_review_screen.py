"""Review, editor and reject screens over constructed data."""

from __future__ import annotations

from textual.widgets import Static, TabbedContent, TextArea

from csro_tui.tui.model import ReviewDecision
from csro_tui.tui.screens.review import ReviewScreen
from tests.tui.sample import ScreenApp, sample_review


def _text(app, selector: str) -> str:
    return str(app.screen.query_one(selector, Static).render())


async def test_review_shows_code_diff_rationale_exchange_and_checks():
    app = ScreenApp(lambda: ReviewScreen(sample_review()))
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        assert "br_3" in _text(app, "#review-summary")
        assert "+0.0625" in _text(app, "#review-summary")
        await pilot.press("2")
        assert app.screen.query_one(TabbedContent).active == "tab-diff"
        diff = _text(app, "#review-diff")
        assert "-        if self.rng.random() < 0.3:" in diff
        assert "+        if self.rng.random() < 0.2:" in diff
        assert "Bluff less often" in _text(app, "#review-rationale")
        exchange = _text(app, "#review-llm")
        assert "Beat the mixture." in exchange and "class Policy: ..." in exchange
        assert "propose · test-model · 19 tokens (12 prompt + 7 reply) · 1.5 s · $0.0021" in exchange
        checks = _text(app, "#review-checks")
        assert "smoke run" in checks and "vs p1" in checks and "-0.1250" in checks


async def test_accept_dismisses_with_accept():
    app = ScreenApp(lambda: ReviewScreen(sample_review()))
    async with app.run_test() as pilot:
        await pilot.press("a")
        await pilot.pause()
    assert app.results == [ReviewDecision("accept")]


async def test_invalid_proposal_cannot_be_accepted():
    info = sample_review()
    info.valid = False
    info.failure = "invalid: line 3: import os is not allowed"
    app = ScreenApp(lambda: ReviewScreen(info))
    async with app.run_test() as pilot:
        await pilot.press("a")
        await pilot.pause()
        assert isinstance(app.screen, ReviewScreen)
        assert any("failed validation" in n.message for n in app._notifications)
        await pilot.press("g")  # the first g only says what regenerating costs
        await pilot.pause()
        assert isinstance(app.screen, ReviewScreen) and app.results == []
        assert any("Regenerate rejects this proposal" in n.message for n in app._notifications)
        await pilot.press("g")
        await pilot.pause()
    assert app.results == [ReviewDecision("regenerate")]


async def test_reject_asks_for_a_reason():
    app = ScreenApp(lambda: ReviewScreen(sample_review()))
    async with app.run_test() as pilot:
        await pilot.press("r")
        await pilot.pause()
        await pilot.press("enter")  # empty reason is refused
        await pilot.pause()
        assert app.results == []
        await pilot.press(*"too passive")
        await pilot.press("enter")
        await pilot.pause()
    assert app.results == [ReviewDecision("reject", reason="too passive")]


async def test_escape_from_reject_returns_to_review():
    app = ScreenApp(lambda: ReviewScreen(sample_review()))
    async with app.run_test() as pilot:
        await pilot.press("r")
        await pilot.pause()
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(app.screen, ReviewScreen)
    assert app.results == []


async def test_edit_sends_the_edited_source():
    app = ScreenApp(lambda: ReviewScreen(sample_review()))
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("e")
        await pilot.pause()
        area = app.screen.query_one(TextArea)
        assert area.text == sample_review().source
        await pilot.press("ctrl+s")  # unchanged: refused
        await pilot.pause()
        assert app.results == []
        area.move_cursor((0, 0))
        await pilot.press(*"# tuned", "enter")
        await pilot.press("ctrl+s")
        await pilot.pause()
    assert len(app.results) == 1
    decision = app.results[0]
    assert decision.kind == "edit"
    assert decision.source == "# tuned\n" + sample_review().source


def test_review_header_says_invalid_once_and_names_metrics_as_everywhere_else():
    from dataclasses import replace

    from csro_tui.tui.screens.review import summary_text

    info = sample_review()
    invalid = replace(info, valid=False, failure="invalid: line 2: import of os is not allowed", expected_payoff=None,
                      population_metrics=None)
    header = summary_text(invalid).plain
    assert header.count("invalid") == 1 and "✘ invalid: line 2: import of os" in header
    sampled = replace(info, valid=True, failure=None, expected_payoff=0.25, expected_stderr=0.0312,
                      population_metrics={"agg_score": -4.6093, "pop_expl": 5.2, "pop_return": 0.5907})
    header = summary_text(sampled).plain
    assert "expected payoff vs meta-strategy +0.2500 ± 0.0312" in header
    assert "AggScore -4.6093  PopReturn +0.5907  PopExpl +5.2000" in header
    assert "agg_score" not in header and "pop_expl" not in header
    zero = summary_text(replace(sampled, population_metrics={"agg_score": 0.0, "pop_expl": -0.0})).plain
    assert "AggScore +0.0000  PopExpl +0.0000" in zero and "-0.0000" not in zero  # rounding noise has no sign
    brief = summary_text(replace(sampled, expected_stderr=0.0)).plain
    assert "noise not measured" in brief and "±" not in brief
    exact = summary_text(replace(sampled, expected_stderr=None)).plain
    assert "±" not in exact and "noise" not in exact


def test_review_header_gives_the_gates_verdict_unless_a_duplicate_or_failure_says_why():
    from dataclasses import replace

    from csro_tui.records import Preview
    from csro_tui.tui.adapt import _shortfall
    from csro_tui.tui.screens.review import summary_text

    lucky = Preview(expected_payoff=5.8, per_member={"p0": 5.8}, stderr={"p0": 4.5541}, expected_stderr=4.5541, pairs=5)
    verdict = _shortfall(lucky)
    assert verdict.startswith("no improvement: expected payoff +5.800") and "(2.87 standard errors)" in verdict
    header = summary_text(replace(sample_review(), valid=True, failure=None, shortfall=verdict)).plain
    assert "⚠ the auto reviewer would reject it: no improvement: expected payoff +5.800" in header
    assert _shortfall(replace(lucky, expected_payoff=20.0)) is None  # beyond the noise margin
    assert _shortfall(replace(lucky, duplicate_of="p0", duplicate_reason="same code as p0")) is None
    assert _shortfall(None) is None


async def test_a_proposal_from_the_timeline_has_the_review_screens_tab_order(tmp_path):
    from csro_tui.sessions.state import fold
    from csro_tui.sessions.store import SessionStore
    from csro_tui.tui.screens.proposal import ProposalScreen
    from tests.tui.sample import record_sample_session

    record_sample_session(tmp_path)
    state = fold(SessionStore(tmp_path).read("sample-kuhn").events)
    titles = {}
    for name, make in (("review", lambda: ReviewScreen(sample_review())),
                       ("proposal", lambda: ProposalScreen(state, next(iter(state.proposals))))):
        app = ScreenApp(make)
        async with app.run_test(size=(160, 48)) as pilot:
            await pilot.pause()
            tabs = app.screen.query_one(TabbedContent)
            titles[name] = [str(tab.label.plain) for tab in tabs.query("ContentTab")]
    assert titles["proposal"] == ["Decision", *titles["review"]]


def test_the_llm_exchange_shows_each_reply_first_and_names_a_prompt_sent_before():
    from csro_tui.tui.model import ReviewInfo
    from csro_tui.tui.screens.review import exchange_text

    system = {"role": "system", "content": "You write policies.\nRules follow.\n"}
    calls = [
        {"purpose": "best_response", "messages": [system, {"role": "user", "content": "Beat the mixture."}],
         "response": "```python\nclass Policy: ...\n```", "prompt_tokens": 1930, "completion_tokens": 71, "latency_s": 95.2},
        {"purpose": "refine", "messages": [system, {"role": "user", "content": "It scored -0.25; improve it."}],
         "response": "second reply", "error": "stream cut", "error_kind": "truncated"},
    ]
    text = exchange_text(ReviewInfo(name="refine-1", oracle="llm-refine", source="", llm_calls=calls)).plain
    second = text.index("── call 2 of 2")
    assert text.startswith("── call 1 of 2  best_response · 2,001 tokens (1,930 prompt + 71 reply) · 95.2 s\n")
    assert text.index("[reply]") < text.index("[system]") < second  # the reply before the prompt
    assert text.count("You write policies.") == 1  # sent again in call 2: named, not repeated
    assert "[system] the same as in call 1 (2 lines)" in text[second:]
    assert "It scored -0.25; improve it." in text[second:]
    assert text.index("second reply") < text.index("error (truncated): stream cut") < text.index("[system] the same")


def test_regenerate_says_what_the_proposal_cost_in_llm_calls_and_time():
    from csro_tui.tui.model import ReviewInfo
    from csro_tui.tui.screens.review import regenerate_cost

    calls = [{"latency_s": 95.0}, {"latency_s": 130.5}, {"latency_s": 140.0}]
    info = ReviewInfo(name="refine-1", oracle="llm-refine", source="", llm_calls=calls, attempt=1, max_attempts=3)
    assert regenerate_cost(info) == ("Regenerate rejects this proposal and asks the oracle again (this proposal took "
                                     "3 LLM calls, 6m06s; the next may take as many): uses attempt 2 of 3. g again to confirm.")
    offline = ReviewInfo(name="br-1", oracle="best-response", source="", attempt=1, max_attempts=3)
    assert "LLM" not in regenerate_cost(offline)


async def test_escape_in_the_editor_with_changes_warns_before_discarding_them():
    from csro_tui.tui.screens.editor import EditorScreen

    app = ScreenApp(lambda: ReviewScreen(sample_review()))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("e")
        await pilot.pause()
        area = app.screen.query_one(TextArea)
        area.move_cursor((0, 0))
        await pilot.press(*"# mine", "enter")
        await pilot.press("escape")  # from habit: the edit stays
        await pilot.pause()
        assert isinstance(app.screen, EditorScreen)
        assert app.screen.query_one(TextArea).text.startswith("# mine\n")
        assert any("not sent" in n.message for n in app._notifications)  # noqa: SLF001
        await pilot.press("escape")  # twice: discarded, back to the review, nothing decided
        await pilot.pause()
        assert isinstance(app.screen, ReviewScreen)
        await pilot.press("e")
        await pilot.pause()
        await pilot.press("escape")  # nothing changed: one esc goes back
        await pilot.pause()
        assert isinstance(app.screen, ReviewScreen)
    assert app.results == []


async def test_the_reason_box_says_whether_the_oracle_reads_the_reason():
    from dataclasses import replace

    from csro_tui.tui.screens.reject import RejectReasonScreen

    for oracle, says in (("best-response", "the best-response oracle does not read reasons"),
                         ("llm-refine", "The oracle gets this reason in its next prompt")):
        app = ScreenApp(lambda: ReviewScreen(replace(sample_review(), oracle=oracle)))
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.press("r")
            await pilot.pause()
            assert isinstance(app.screen, RejectReasonScreen)
            assert says in str(app.screen.query_one("#reject-note").render())


async def test_the_reason_box_shows_its_whole_explanation_at_both_sizes():
    """Issue 29, item 4: the note was one line, cut at the box's edge ("... the seed oracle d")."""
    from dataclasses import replace

    from textual.geometry import Region

    from csro_tui.tui.screens.reject import RejectReasonScreen, reason_note

    for size in ((80, 24), (160, 48)):
        app = ScreenApp(lambda: ReviewScreen(replace(sample_review(), oracle="seed")))
        async with app.run_test(size=size) as pilot:
            await pilot.press("r")
            await pilot.pause()
            assert isinstance(app.screen, RejectReasonScreen)
            note = app.screen.query_one("#reject-note")
            box = app.screen.query_one("#reject-box")
            assert box.region.right <= size[0] and note.region.right <= box.content_region.right, size
            lines = note.render_lines(Region(0, 0, note.size.width, note.size.height))
            shown = " ".join(line.text.strip() for line in lines)
            assert shown == reason_note("seed"), size


async def test_an_edited_proposal_names_the_diff_tabs_key_of_its_screen(tmp_path, monkeypatch):
    """Issue 29, item 7: opened from the timeline it said "Diff (2)", where 2 is the Code tab."""
    import re
    from dataclasses import replace

    from csro_tui.sessions.state import fold
    from csro_tui.tui.screens import proposal
    from tests.tui.sample import record_sample_session

    edited = replace(sample_review(), history=[("i1.1", "class Policy: pass\n", None, 0.25)])
    monkeypatch.setattr(proposal, "proposal_info", lambda state, proposal_id: (edited, "accept"))
    state = fold(record_sample_session(tmp_path))
    for make, summary_id, diff_tab in ((lambda: ReviewScreen(edited), "#review-summary", "tab-diff"),
                                       (lambda: proposal.ProposalScreen(state, "i1a1"), "#proposal-summary", "proposal-diff")):
        app = ScreenApp(make)
        async with app.run_test(size=(160, 48)) as pilot:
            await pilot.pause()
            key = re.search(r"Diff \((\d)\) shows oracle → edited", str(app.screen.query_one(summary_id).render())).group(1)
            await pilot.press(key)
            await pilot.pause()
            assert app.screen.query_one(TabbedContent).active == diff_tab
