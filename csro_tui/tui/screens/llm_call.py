"""The LLM call in flight, whole: its state, the scores of this proposal's earlier
replies and the reply as it streams in (`l` on the dashboard).  On a small
terminal the dashboard's panel shows only the reply's last lines."""

from __future__ import annotations

import time

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import Footer, Static

from csro_tui.text import plain
from csro_tui.tui.widgets.title_header import TitleHeader


def call_text(activity: object | None, last_reply: str) -> Text:
    """The call's state, the earlier replies' scores, then the reply so far (untrusted: never markup)."""
    text = Text()
    if activity is None:
        text.append("No LLM call in flight now: the oracle is scoring a reply, or its work ended.\n", style="bold")
        if last_reply:
            text.append("\nThe last reply seen:\n\n", style="dim")
            text.append_text(plain(last_reply))
        return text
    text.append_text(plain(activity.line(time.monotonic()) + "\n", style="bold"))
    for note in activity.scored:
        text.append_text(plain(f"  {note}\n", style="dim"))
    text.append("\n")
    if activity.reply:
        text.append_text(plain(activity.reply))
    elif activity.calls[0].streamed:
        text.append("(nothing yet: the model reads the prompt first; minutes on a small local model)", style="dim")
    else:
        text.append("(the reply arrives whole when the call ends: streaming is off for this server)", style="dim")
    return text


class LLMCallScreen(Screen[None]):
    BINDINGS = [
        Binding("escape", "app.pop_screen", "Back", id="llm_call.back"),
        Binding("c", "app.cancel_work", "Cancel the call", id="llm_call.cancel"),
        Binding("question_mark", "app.help", "Help", id="llm_call.help"),
    ]

    def __init__(self, activity: object | None = None) -> None:
        super().__init__()
        self._activity = activity
        self._last_reply = getattr(activity, "reply", "") or ""

    def compose(self) -> ComposeResult:
        yield TitleHeader()
        with VerticalScroll(id="llm-call-body"):
            yield Static(id="llm-call-text")
        yield Footer()

    def on_mount(self) -> None:
        self.sub_title = "LLM call in flight"
        self.show(self._activity)

    def show(self, activity: object | None) -> None:
        """A newer state of the call (the app polls twice a second); follows the reply's end
        unless the person scrolled up to read."""
        self._activity = activity
        if activity is not None and activity.reply:
            self._last_reply = activity.reply
        body = self.query_one("#llm-call-body", VerticalScroll)
        following = body.scroll_y >= body.max_scroll_y - 1
        self.query_one("#llm-call-text", Static).update(call_text(activity, self._last_reply))
        if following:
            body.call_after_refresh(body.scroll_end, animate=False)
