"""Asks for the reason of a rejection; the oracle receives it."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Label


class RejectReasonScreen(ModalScreen[str | None]):
    BINDINGS = [Binding("escape", "cancel", "Cancel", id="reject.cancel")]

    def compose(self) -> ComposeResult:
        with Vertical(id="reject-box"):
            yield Label("Why reject it? The oracle sees this reason.")
            yield Input(placeholder="reason (enter to reject, escape to go back)", id="reject-reason")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        reason = event.value.strip()
        if not reason:
            self.notify("A rejection needs a reason.", severity="warning")
            return
        self.dismiss(reason)

    def action_cancel(self) -> None:
        self.dismiss(None)
