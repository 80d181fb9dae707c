"""Unified diff of a proposal against its parent, as coloured rich Text."""

from __future__ import annotations

import difflib

from rich.text import Text


def unified_diff(old: str, new: str, old_name: str = "parent", new_name: str = "proposal") -> list[str]:
    return list(
        difflib.unified_diff(
            old.splitlines(), new.splitlines(), fromfile=old_name, tofile=new_name, lineterm=""
        )
    )


def coloured_diff(lines: list[str]) -> Text:
    text = Text()
    for i, line in enumerate(lines):
        if line.startswith(("+++", "---")):
            style = "bold"
        elif line.startswith("@@"):
            style = "cyan"
        elif line.startswith("+"):
            style = "green"
        elif line.startswith("-"):
            style = "red"
        else:
            style = ""
        text.append(line, style=style)
        if i < len(lines) - 1:
            text.append("\n")
    return text
