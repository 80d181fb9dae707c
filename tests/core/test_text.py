"""The one helper for untrusted display text strips escapes and is never markup."""

from rich.console import Console

from csro_tui.text import clean_text, one_line, plain


def test_escape_sequences_are_removed_whole():
    hostile = "a\x1b]2;pwned title\x07b\x1b[2Jc\x1b]52;c;ZXZpbA==\x1b\\d\x1bPdcs\x1b\\e"
    assert clean_text(hostile) == "abcde"


def test_c0_c1_and_del_are_removed_but_tab_and_newline_stay():
    assert clean_text("x\x00\x07\x08\x7f\x9b\x85y\tz\nw\r\n") == "xy\tz\nw\n"


def test_one_line_joins_lines_and_cuts():
    assert one_line("first\nsecond\x1b[31m red") == "first second red"
    assert one_line("abcdefghij", limit=5) == "abcd…"


def test_plain_is_never_parsed_as_markup():
    text = plain("[/oops] [bold]not bold[/bold]")
    console = Console(width=80, record=True, color_system=None)
    console.print(text)
    assert "[/oops] [bold]not bold[/bold]" in console.export_text()
    assert text.spans == []


def test_non_strings_are_converted():
    assert clean_text(ValueError("bad\x1b[0m")) == "bad"
