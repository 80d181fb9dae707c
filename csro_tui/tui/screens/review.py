"""The review gate: every proposal is shown here before it can join the population."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import tempfile
from pathlib import Path

from rich.syntax import Syntax
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import Footer, Static, TabbedContent, TabPane

from csro_tui.tui.adapt import call_tokens
from csro_tui.tui.diffing import coloured_diff, unified_diff
from csro_tui.tui.model import ReviewDecision, ReviewInfo
from csro_tui.tui.screens.editor import EditorScreen
from csro_tui.tui.screens.reject import RejectReasonScreen


def summary_text(info: ReviewInfo) -> Text:
    text = Text()
    text.append(f"{info.name}", style="bold")
    text.append(f"  by {info.oracle}  iteration {info.iteration}  attempt {info.attempt}")
    if info.parent:
        text.append(f"  parent {info.parent}")
    text.append("   (keys 1-5 switch tabs)", style="dim")
    text.append("\n")
    if info.valid:
        text.append("✔ valid", style="bold green")
    else:
        text.append("✘ invalid", style="bold red")
    if info.failure:
        text.append(f"  {info.failure}", style="red")
    if info.expected_payoff is not None:
        text.append(f"  expected payoff vs meta-strategy {info.expected_payoff:+.4f}")
    if info.population_metrics:
        text.append(
            "  " + "  ".join(f"{k} {v:+.4f}" for k, v in sorted(info.population_metrics.items()))
        )
    return text


def checks_text(info: ReviewInfo) -> Text:
    text = Text()
    text.append("Validation and smoke run\n", style="bold underline")
    if info.validation:
        for line in info.validation:
            ok = line.startswith(("ok", "✔"))
            text.append(f"  {line}\n", style="green" if ok else "red" if not info.valid else "")
    else:
        text.append("  no issues\n" if info.valid else "  (no details)\n")
    text.append("\nPreview against each member\n", style="bold underline")
    if info.per_member:
        for member_id, value in info.per_member.items():
            style = "green" if value > 0 else "red" if value < 0 else ""
            text.append(f"  vs {member_id:<12} {value:+.4f}\n", style=style)
    else:
        text.append("  no preview\n", style="dim")
    return text


def exchange_text(info: ReviewInfo) -> Text:
    """Every LLM call of the proposal: the prompt messages and the raw reply."""
    if not info.llm_calls:
        return Text("This oracle made no LLM calls.", style="dim")
    text = Text()
    for n, call in enumerate(info.llm_calls, 1):
        facts = [str(call[k]) for k in ("purpose", "model") if call.get(k)]
        tokens = call_tokens(call)
        if tokens:
            facts.append(f"{tokens} tokens" + (" (estimated)" if call.get("usage_estimated") else ""))
        if call.get("latency_s"):
            facts.append(f"{call['latency_s']:.1f} s")
        if call.get("attempts", 1) and call.get("attempts", 1) > 1:
            facts.append(f"{call['attempts']} attempts")
        if call.get("cost_usd") is not None:
            facts.append(f"${call['cost_usd']:.4f}")
        text.append(f"── call {n}", style="bold")
        if facts:
            text.append("  " + " · ".join(facts), style="dim")
        text.append("\n")
        for message in call.get("messages", []):
            role = message.get("role", "?") if isinstance(message, dict) else "?"
            content = message.get("content", "") if isinstance(message, dict) else str(message)
            if not isinstance(content, str):
                content = json.dumps(content, indent=1)
            text.append(f"[{role}]\n", style="bold cyan")
            text.append(content.rstrip() + "\n\n")
        reply = call.get("response", "")
        if not isinstance(reply, str):
            reply = json.dumps(reply, indent=1)
        text.append("[reply]\n", style="bold magenta")
        text.append(reply.rstrip() + "\n\n")
        if call.get("error"):
            text.append(f"error ({call.get('error_kind') or 'failed'}): {call['error']}\n\n", style="red")
    return text


class ReviewScreen(Screen[ReviewDecision]):
    """Dismisses with the decision; the app hands it to the waiting engine."""

    BINDINGS = [
        Binding("a", "accept", "Accept", id="review.accept"),
        Binding("e", "edit", "Edit", id="review.edit"),
        Binding("E", "edit_external", "Edit in $EDITOR", id="review.edit_external", show=False),
        Binding("r", "reject", "Reject", id="review.reject"),
        Binding("g", "regenerate", "Regenerate", id="review.regenerate"),
        Binding("c", "app.cancel_work", "Stop the run", id="review.cancel"),
        Binding("1", "tab('tab-code')", "Code", id="review.tab_code", show=False),
        Binding("2", "tab('tab-diff')", "Diff", id="review.tab_diff", show=False),
        Binding("3", "tab('tab-rationale')", "Rationale", id="review.tab_rationale", show=False),
        Binding("4", "tab('tab-llm')", "LLM exchange", id="review.tab_llm", show=False),
        Binding("5", "tab('tab-checks')", "Checks", id="review.tab_checks", show=False),
        Binding("question_mark", "app.help", "Help", id="review.help"),
    ]

    def __init__(self, info: ReviewInfo) -> None:
        super().__init__()
        self.info = info

    def compose(self) -> ComposeResult:
        info = self.info
        yield Static(summary_text(info), id="review-summary")
        with TabbedContent(id="review-tabs"):
            with TabPane("Code", id="tab-code"):
                with VerticalScroll():
                    yield Static(
                        Syntax(info.source, "python", line_numbers=True, theme="monokai", word_wrap=False),
                        id="review-code",
                    )
            with TabPane("Diff", id="tab-diff"):
                with VerticalScroll():
                    yield Static(self._diff(), id="review-diff")
            with TabPane("Rationale", id="tab-rationale"):
                with VerticalScroll():
                    yield Static(info.rationale or Text("No rationale given.", style="dim"), id="review-rationale")
            with TabPane("LLM exchange", id="tab-llm"):
                with VerticalScroll():
                    yield Static(exchange_text(info), id="review-llm")
            with TabPane("Checks", id="tab-checks"):
                with VerticalScroll():
                    yield Static(checks_text(info), id="review-checks")
        yield Footer()

    def _diff(self) -> Text:
        if self.info.parent_source is None:
            return Text("No parent: this proposal is written from scratch.", style="dim")
        lines = unified_diff(self.info.parent_source, self.info.source, self.info.parent or "parent", self.info.name)
        if not lines:
            return Text("Identical to its parent.", style="dim")
        return coloured_diff(lines)

    def action_tab(self, tab: str) -> None:
        self.query_one(TabbedContent).active = tab

    def action_accept(self) -> None:
        if not self.info.valid:
            self.notify("This proposal failed validation: edit, reject or regenerate it.", severity="error")
            return
        self.dismiss(ReviewDecision("accept"))

    def action_reject(self) -> None:
        def done(reason: str | None) -> None:
            if reason:
                self.dismiss(ReviewDecision("reject", reason=reason))

        self.app.push_screen(RejectReasonScreen(), done)

    def action_regenerate(self) -> None:
        self.dismiss(ReviewDecision("regenerate"))

    def action_edit(self) -> None:
        def done(source: str | None) -> None:
            if source is not None:
                self.dismiss(ReviewDecision("edit", source=source))

        self.app.push_screen(EditorScreen(self.info.source, self.info.name), done)

    def action_edit_external(self) -> None:
        editor = os.environ.get("VISUAL") or os.environ.get("EDITOR")
        if not editor:
            self.notify("Set $EDITOR (or $VISUAL) to edit in your own editor; `e` opens the built-in one.", severity="warning")
            return
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder) / f"{self.info.name or 'policy'}.py"
            path.write_text(self.info.source, encoding="utf-8")
            try:
                with self.app.suspend():
                    subprocess.run([*shlex.split(editor), str(path)], check=False)
            except Exception as error:  # noqa: BLE001 - e.g. suspend unsupported in tests/web
                self.notify(f"Could not run {editor}: {error}", severity="error")
                return
            source = path.read_text(encoding="utf-8")
        if source == self.info.source:
            self.notify("No change made in the editor.")
            return
        self.dismiss(ReviewDecision("edit", source=source))
