"""Edit a proposal's code before deciding; the result goes back as an edit."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import Footer, Label, TextArea

from csro_tui.text import plain


def code_area(source: str, *, read_only: bool, id: str | None = None) -> TextArea:
    """A Python TextArea; plain text where tree-sitter is not installed."""
    from textual._tree_sitter import TREE_SITTER  # textual falls back itself; we say so

    area = TextArea.code_editor(
        source, language="python" if TREE_SITTER else None, read_only=read_only, id=id
    )
    return area


class EditorScreen(Screen[str | None]):
    """Dismisses with the edited source, or None when the edit is discarded."""

    BINDINGS = [
        Binding("ctrl+s", "submit", "Send edit", id="editor.submit"),
        Binding("escape", "discard", "Discard", id="editor.discard"),
    ]

    def __init__(self, source: str, title: str = "") -> None:
        super().__init__()
        self.original = source
        self.title_text = title

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

    def action_discard(self) -> None:
        self.dismiss(None)
