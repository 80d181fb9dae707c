"""The one helper for untrusted display text shows escapes visibly and is never markup (issue 35)."""

import re

import pytest
from rich.console import Console

from csro_tui.text import clean_text, one_line, plain

# Each sequence a hostile name or reason may carry, and what the reader sees instead.
HOSTILE = {
    "OSC 52 clipboard write": ("\x1b]52;c;ZXZpbA==\x07", "\\x1b]52;c;ZXZpbA==\\x07"),
    "OSC 0 title": ("\x1b]0;pwned\x1b\\", "\\x1b]0;pwned\\x1b\\"),
    "OSC 8 link": ("\x1b]8;;http://evil\x1b\\click\x1b]8;;\x1b\\", "\\x1b]8;;http://evil\\x1b\\click\\x1b]8;;\\x1b\\"),
    "CSI 2J clear screen": ("\x1b[2J", "\\x1b[2J"),
    "8-bit CSI (C1)": ("\x9b2J", "\\x9b2J"),
    "bell and backspace": ("\x07\x08", "\\x07\\x08"),
    "bidi override": ("\u202eexe.txt", "\\u202eexe.txt"),
    "bidi isolate": ("\u2066x\u2069", "\\u2066x\\u2069"),
    "carriage return": ("safe\rEVIL", "safe\\x0dEVIL"),
}
# What must never reach a terminal: C0 but tab/newline, DEL, C1, the bidi controls.
UNSAFE_BYTES = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069]")


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_each_sequence_is_shown_visibly_and_none_survives(case):
    raw, shown = HOSTILE[case]
    assert clean_text(f"a{raw}b") == f"a{shown}b"
    assert not UNSAFE_BYTES.search(clean_text(raw))


def test_tab_and_newline_stay_and_crlf_becomes_a_newline():
    assert clean_text("x\ty\r\nz\n") == "x\ty\nz\n"


def test_one_line_joins_lines_and_cuts():
    assert one_line("first\nsecond\x1b[31m red") == "first second\\x1b[31m red"
    assert one_line("abcdefghij", limit=5) == "abcd…"


def test_markup_is_escaped_on_request_and_prints_literally():
    hostile = "[/oops] [bold]not bold[/bold] \x1b[2J"
    console = Console(width=120, record=True, color_system=None)
    console.print(clean_text(hostile, markup=True))  # would raise MarkupError unescaped
    console.print(one_line(hostile, markup=True))
    assert console.export_text().splitlines() == ["[/oops] [bold]not bold[/bold] \\x1b[2J"] * 2


def test_plain_is_never_parsed_as_markup():
    text = plain("[/oops] [bold]not bold[/bold]")
    console = Console(width=80, record=True, color_system=None)
    console.print(text)
    assert "[/oops] [bold]not bold[/bold]" in console.export_text()
    assert text.spans == []


def test_non_strings_are_converted():
    assert clean_text(ValueError("bad\x1b[0m")) == "bad\\x1b[0m"
