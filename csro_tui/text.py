"""Text that came from outside the program (a policy, an LLM, a file) made safe to show.

Policy and LLM output, and every name, reason and message in a session log,
sweep file or config file, is untrusted (issue 35): it may carry ESC sequences
(clear the screen with CSI 2J, retitle the window with OSC 0/2, write the
clipboard with OSC 52, plant links with OSC 8), C1 controls (8-bit CSI/OSC),
bidirectional overrides that make text read differently than it runs, or Rich
markup (``[/oops]`` raises ``MarkupError``). ``clean_text`` is the one
function that makes such text safe for a terminal: every such character is
shown visibly as its escape (``\\x1b``, ``\\u202e``), so the reader sees that
something was there and the terminal never acts on it; with ``markup=True``
Rich markup is escaped too, for text printed through Rich with markup on.
``one_line`` (one line, cut) and ``plain`` (a Rich ``Text``, never parsed as
markup) are built on it. Everything the CLI prints or the TUI shows that
derives from such text goes through one of them.
"""

from __future__ import annotations

import re

from rich.markup import escape
from rich.text import Text

# C0 controls except tab and newline (ESC is one), DEL, C1 controls (U+0080..U+009F,
# the 8-bit CSI and OSC introducers among them), the bidirectional marks, embeddings,
# overrides and isolates, and the Unicode line and paragraph separators.
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069]")


def _visible(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def clean_text(value: object, *, keep_newlines: bool = True, markup: bool = False) -> str:
    """``str(value)`` safe for a terminal: control characters and escape sequences shown visibly.

    Tab and newline are kept (newlines become spaces when ``keep_newlines``
    is false, for one-line messages); ``\\r\\n`` becomes ``\\n``. ``markup``: also
    escape Rich markup, for a string printed by Rich with markup on.
    """
    text = value if isinstance(value, str) else str(value)
    text = text.replace("\r\n", "\n")
    if not keep_newlines:
        text = " ".join(text.split("\n"))
    text = _UNSAFE.sub(_visible, text)
    return escape(text) if markup else text


def one_line(value: object, limit: int | None = None, *, markup: bool = False) -> str:
    """``clean_text`` on one line, cut to ``limit`` characters with an ellipsis."""
    text = clean_text(value, keep_newlines=False).strip()
    if limit is not None and len(text) > limit:
        text = text[: max(limit - 1, 0)] + "…"
    return escape(text) if markup else text


def plain(value: object, style: str = "") -> Text:
    """A Rich ``Text`` of ``clean_text(value)``: shown literally, never parsed as markup."""
    return Text(clean_text(value), style=style)
