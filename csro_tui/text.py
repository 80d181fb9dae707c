"""Text that came from outside the program (a policy, an LLM, a file) made safe to show.

Policy and LLM output is untrusted: an exception message may carry ESC
sequences (clear the screen, retitle the window, write the clipboard with
OSC 52) or Rich markup (``[/oops]`` raises ``MarkupError``). Everything the
CLI prints or the TUI shows that derives from such text goes through
``clean_text`` (for printing) or ``plain`` (a Rich ``Text`` that is never
parsed as markup). One helper, used everywhere.
"""

from __future__ import annotations

import re

from rich.text import Text

# C0 controls except tab and newline, DEL, and C1 controls (U+0080..U+009F,
# which include the 8-bit CSI and OSC introducers). ESC (U+001B) is in C0.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
# A whole escape sequence, removed before the lone controls so its printable
# tail ("]2;title") does not survive: CSI ... final byte, OSC ... BEL/ST,
# and two-byte ESC sequences.
_ESCAPE_SEQUENCE = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]"  # CSI
    r"|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?"  # OSC, ended by BEL or ST (or cut off)
    r"|\x1b[PX^_][^\x1b]*(?:\x1b\\)?"  # DCS, SOS, PM, APC
    r"|\x1b[@-Z\\-_]"  # other two-byte sequences
)


def clean_text(value: object, *, keep_newlines: bool = True) -> str:
    """``str(value)`` with escape sequences and control characters removed.

    Tab and newline are kept (newlines become spaces when ``keep_newlines``
    is false, for one-line messages); ``\\r\\n`` becomes ``\\n``.
    """
    text = value if isinstance(value, str) else str(value)
    text = text.replace("\r\n", "\n")
    text = _ESCAPE_SEQUENCE.sub("", text)
    text = _CONTROL.sub("", text)
    if not keep_newlines:
        text = " ".join(text.split("\n"))
    return text


def one_line(value: object, limit: int | None = None) -> str:
    """``clean_text`` on one line, cut to ``limit`` characters with an ellipsis."""
    text = clean_text(value, keep_newlines=False).strip()
    if limit is not None and len(text) > limit:
        text = text[: max(limit - 1, 0)] + "…"
    return text


def plain(value: object, style: str = "") -> Text:
    """A Rich ``Text`` of ``clean_text(value)``: shown literally, never parsed as markup."""
    return Text(clean_text(value), style=style)
