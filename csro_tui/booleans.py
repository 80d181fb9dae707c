"""On/off words read as booleans: the one rule for settings typed as text.

Configuration files, environment variables, flags and an oracle's options all
say yes and no the same way: 1/true/yes/on and 0/false/no/off, in any case.
"""

from __future__ import annotations

TRUE_WORDS = ("1", "true", "yes", "on")
FALSE_WORDS = ("0", "false", "no", "off")


def parse_boolean(value: object) -> bool | None:
    """A bool as it is; text (or a value's `str`) that is one of the words, as
    its bool; None for anything else (the caller words the error)."""
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in TRUE_WORDS:
        return True
    if text in FALSE_WORDS:
        return False
    return None
