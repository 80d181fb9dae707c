"""Edit a proposal's code before deciding; the result goes back as an edit."""

from __future__ import annotations

from textual._tree_sitter import TREE_SITTER
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import Footer, Label, TextArea

from csro_tui.text import plain


def code_area(source: str, *, read_only: bool, id: str | None = None) -> TextArea:
    """A Python TextArea; plain text where tree-sitter is not installed."""
    area = TextArea.code_editor(
        source, language="python" if TREE_SITTER else None, read_only=read_only, id=id
    )
    return area


class EditorScreen(Screen[str | None]):
    """Dismisses with the edited source, or None when the edit is discarded."""

    BINDINGS = [
        Binding("ctrl+s", "submit", "Send edit", id="editor.submit"),
        # priority: the code area takes a plain esc for itself (it moves focus), so esc never discarded
        Binding("escape", "discard", "Discard", id="editor.discard", priority=True),
    ]

    def __init__(self, source: str, title: str = "") -> None:
        super().__init__()
        self.original = source
        self.title_text = title
        self._discard_armed = False  # esc once more discards changes that were not sent

    def compose(self) -> ComposeResult:
        yield Label(
            plain(f"Editing {self.title_text} — ctrl+s sends it back to the engine, which validates "
            "and previews it again before you can accept it; the oracle's original is kept and the diff shown."),
            id="editor-title",
        )
        yield code_area(self.original, read_only=False, id="editor-area")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one(TextArea).focus()

    def action_submit(self) -> None:
        text = self.query_one(TextArea).text
        if text == self.original:
            self.notify("No change to send; escape discards the edit.", severity="warning")
            return
        self.dismiss(text)

    @property
    def unsent(self) -> bool:
        """The code differs from what the editor opened with and has not been sent."""
        return self.query_one(TextArea).text != self.original

    def on_text_area_changed(self, _event: TextArea.Changed) -> None:
        self._discard_armed = False

    def action_discard(self) -> None:
        """Esc: back to the review. With changes, the first esc only warns (an esc from habit
        threw away a whole edit)."""
        if self.unsent and not self._discard_armed:
            self._discard_armed = True
            self.notify("Your changes are not sent: esc again discards them, ctrl+s sends them.", severity="warning")
            return
        self.dismiss(None)
