"""One recorded proposal, opened from a session's timeline: its code, the
diffs (the oracle's original -> a person's edit, parent -> proposal), its
validation, preview and decision with the full rejection reason."""

from __future__ import annotations

from typing import Any

from rich.console import Group
from rich.syntax import Syntax
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import Footer, Static, TabbedContent, TabPane

from csro_tui.text import clean_text, plain
from csro_tui.tui.adapt import proposal_info
from csro_tui.tui.screens.review import checks_text, diff_text, edit_note, exchange_text, summary_text


class ProposalScreen(Screen[None]):
    """`[`/`]` move to the previous / next proposal of the session."""

    DEFAULT_CSS = """
    #proposal-summary { height: auto; padding: 0 1; background: $boost; }
    #proposal-tabs { height: 1fr; }
    """

    DIFF_KEY = "3"  # named in the summary of an edited proposal
    BINDINGS = [
        Binding("escape,q", "app.pop_screen", "Back", id="proposal.back"),
        Binding("left_square_bracket", "move(-1)", "Previous proposal", id="proposal.previous"),
        Binding("right_square_bracket", "move(1)", "Next proposal", id="proposal.next"),
        Binding("1", "tab('proposal-decision')", "Decision", id="proposal.tab_decision", show=False),
        Binding("2", "tab('proposal-code')", "Code", id="proposal.tab_code", show=False),
        Binding(DIFF_KEY, "tab('proposal-diff')", "Diff", id="proposal.tab_diff", show=False),
        # the review screen's order (Code, Diff, Rationale, LLM exchange, Checks) after the decision
        Binding("4", "tab('proposal-rationale')", "Rationale", id="proposal.tab_rationale", show=False),
        Binding("5", "tab('proposal-llm')", "LLM exchange", id="proposal.tab_llm", show=False),
        Binding("6", "tab('proposal-checks')", "Checks", id="proposal.tab_checks", show=False),
    ]

    def __init__(self, state: Any, proposal_id: str) -> None:
        super().__init__()
        self.state = state
        self.order = list(state.proposals)
        self.proposal_id = proposal_id

    def compose(self) -> ComposeResult:
        yield Static(id="proposal-summary")
        with TabbedContent(id="proposal-tabs"):
            for pane_id, title in (
                ("proposal-decision", "Decision"),
                ("proposal-code", "Code"),
                ("proposal-diff", "Diff"),
                ("proposal-rationale", "Rationale"),
                ("proposal-llm", "LLM exchange"),
                ("proposal-checks", "Checks"),
            ):
                with TabPane(title, id=pane_id):
                    with VerticalScroll():
                        yield Static(id=f"{pane_id}-body")
        yield Footer()

    def on_mount(self) -> None:
        self._fill()

    def _fill(self) -> None:
        info, decision = proposal_info(self.state, self.proposal_id)
        position = self.order.index(self.proposal_id) + 1
        self.sub_title = f"proposal {self.proposal_id} ({position} of {len(self.order)})"
        summary = summary_text(info, hint=f"(proposal {position} of {len(self.order)}: [ ] previous/next, keys 1-6 tabs)",
                               diff_key=self.DIFF_KEY)
        self.query_one("#proposal-summary", Static).update(summary)
        verdict = Text()
        verdict.append("Decision\n", style="bold underline")
        verdict.append_text(plain(decision))
        self.query_one("#proposal-decision-body", Static).update(verdict)
        code = Syntax(clean_text(info.source), "python", line_numbers=True, theme="monokai", word_wrap=False)
        self.query_one("#proposal-code-body", Static).update(Group(edit_note(info), code) if info.history else code)
        self.query_one("#proposal-diff-body", Static).update(diff_text(info))
        self.query_one("#proposal-checks-body", Static).update(checks_text(info))
        rationale = plain(info.rationale) if info.rationale else Text("No rationale given.", style="dim")
        self.query_one("#proposal-rationale-body", Static).update(rationale)
        self.query_one("#proposal-llm-body", Static).update(exchange_text(info))

    def action_tab(self, tab: str) -> None:
        self.query_one(TabbedContent).active = tab

    def action_move(self, delta: int) -> None:
        index = self.order.index(self.proposal_id) + delta
        if not 0 <= index < len(self.order):
            self.notify("No more proposals that way.", timeout=3)
            return
        self.proposal_id = self.order[index]
        self._fill()
