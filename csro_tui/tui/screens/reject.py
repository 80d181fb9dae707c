"""Asks for the reason of a rejection: recorded with the decision; LLM oracles receive it."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Label

from csro_tui.oracles.registry import reads_rejection_reasons
from csro_tui.text import one_line, plain


def reason_note(oracle: str) -> str:
    """Who reads the reason: the LLM oracles put it in their next prompt; the offline ones
    (best-response, seed, evolve, human) propose by their own rule and never read it."""
    if not oracle or reads_rejection_reasons(oracle):
        return "Why reject it? The oracle gets this reason in its next prompt."
    return f"Why reject it? The reason is recorded with the decision; the {one_line(oracle, 40)} oracle does not read reasons."


class RejectReasonScreen(ModalScreen[str | None]):
    BINDINGS = [Binding("escape", "cancel", "Cancel", id="reject.cancel")]

    def __init__(self, oracle: str = "") -> None:
        super().__init__()
        self.oracle = oracle

    def compose(self) -> ComposeResult:
        with Vertical(id="reject-box"):
            yield Label(plain(reason_note(self.oracle)), id="reject-note")
            yield Input(placeholder="reason (enter to reject, escape to go back)", id="reject-reason")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        reason = event.value.strip()
        if not reason:
            self.notify("A rejection needs a reason.", severity="warning")
            return
        self.dismiss(reason)

    def action_cancel(self) -> None:
        self.dismiss(None)
