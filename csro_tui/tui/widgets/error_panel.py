"""A session that closed with an error says so until it is resumed: the
one-line reason, where the details are, how to resume."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from csro_tui.text import clean_text, one_line
from csro_tui.tui.model import DashboardData

# Lines of a traceback shown in the panel (its last ones: where it failed).
TRACEBACK_LINES = 6


def error_text(data: DashboardData, *, session_dir: str = "", details: str = "", live: bool = False) -> Text | None:
    """The panel's text, or None when the session did not close with an error.

    `details` is what the app caught itself (a worker's traceback), shown
    even before the session recorded anything. `live`: on the live dashboard,
    where `n` goes on after the error; elsewhere (a timeline) R resumes."""
    if not data.failed and not details:
        return None
    text = Text()
    reason = data.closed_message if data.failed else (details.strip().splitlines() or [""])[-1]
    text.append("✘ The session closed with an error: ", style="bold red")
    text.append(one_line(reason, 300) or "(no message)", style="red")
    text.append("\n")
    if data.failed:
        text.append("Resume: n here, or " if live else "Resume: R on its timeline (s lists sessions), or ")
        text.append(f"csro run --resume {one_line(data.session_id)}", style="bold")
        text.append("\n")
        where = f"{session_dir}/events.jsonl" if session_dir else "the session's events.jsonl"
        text.append(f"Recorded in {one_line(where)}, event #{data.closed_event}; nothing before it is lost.\n")
    lines = clean_text(details).rstrip().splitlines()
    if len(lines) > 1:  # a traceback (a one-line error is the reason above)
        text.append("Traceback (last lines):\n", style="dim")
        for line in lines[-TRACEBACK_LINES:]:
            text.append(f"  {line}\n", style="dim")
    text.rstrip()
    return text


class ErrorPanel(Static):
    """Hidden unless the session shown closed with an error (or the app caught one)."""

    SCOPED_CSS = False  # the -short rule names the screen
    DEFAULT_CSS = """
    ErrorPanel {
        display: none;
        height: auto;
        max-height: 12;
        border: heavy $error;
        padding: 0 1;
        background: $error 10%;
    }
    ErrorPanel.-shown { display: block; }
    /* 80x24: the reason and how to resume first, a thin rule instead of a box */
    Screen.-short ErrorPanel { max-height: 5; border: none; border-left: thick $error; }
    """

    def __init__(self, **kwargs) -> None:
        super().__init__("", **kwargs)
        self.details = ""

    def show(self, data: DashboardData, *, session_dir: str = "", live: bool = False) -> None:
        text = error_text(data, session_dir=session_dir, details=self.details, live=live)
        self.set_class(text is not None, "-shown")
        self.update(text if text is not None else "")
