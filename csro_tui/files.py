"""Data from files made elsewhere, read and written back without being obeyed.

A session log, a review script or a sweep manifest may come from anyone
(docs/SECURITY.md, "Files from elsewhere"); what the program writes from
them must stay data:

- `path_inside`: the one way a path is built from recorded or received
  text (a member id, a session id, a name: `file_name`): refused unless it
  stays inside its folder, symbolic links followed;
- `load_json`: a JSON document with its size and nesting bounded, so a
  crafted file is an error with a reason, never a `RecursionError`;
- `csv_cell` / `write_csv`: cells a spreadsheet will not run as formulas;
- `markdown_text` / `markdown_code`: text that renders as itself in Markdown
  and never as HTML.
"""

from __future__ import annotations

import csv
import json
import math
import os
import re
from pathlib import Path
from typing import Any, Iterable

from csro_tui.errors import CsroError


class UnsafePath(CsroError):
    """A path from recorded or received text that would leave its folder."""


def path_inside(folder: str | Path, *parts: str) -> Path:
    """`folder/part/...`, checked to stay inside `folder` once resolved (`..`, an
    absolute part and a symbolic link that leads out are all refused: UnsafePath)."""
    folder = Path(folder)
    for part in parts:
        if not isinstance(part, str) or not part or "\0" in part or os.path.isabs(part):
            raise UnsafePath(f"{folder}: refused the name {quoted(part)}: not a path inside the folder")
    target = folder.joinpath(*parts)
    base = folder.resolve()
    resolved = target.resolve()
    if resolved == base or not resolved.is_relative_to(base):
        raise UnsafePath(f"{folder}: refused the name {quoted('/'.join(parts))}: it leads outside the folder "
                         f"(to {quoted(str(resolved))})")
    return target


_NOT_IN_FILE_NAME = re.compile(r"[^A-Za-z0-9_]+")


def file_name(text: str, fallback: str = "policy") -> str:
    """A recorded name as part of a file name: letters, digits and `_` only (never a path)."""
    return _NOT_IN_FILE_NAME.sub("_", text).strip("_") or fallback


def quoted(value: Any, limit: int = 60) -> str:
    """Untrusted text quoted for an error message: its repr (control characters shown as
    escapes), cut short."""
    if isinstance(value, str) and len(value) > limit:
        return repr(value[:limit]) + "…"
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "…"


# --- JSON -------------------------------------------------------------------------------

# Deeper than any record the program writes (a session event nests about eight levels).
MAX_JSON_DEPTH = 64
# A session event with a long LLM exchange is a few hundred kB; far more is no honest line.
MAX_JSON_BYTES = 64 * 1024 * 1024


class JsonTooLarge(ValueError):
    """A JSON document over the size or nesting bound."""


def load_json(raw: bytes | str, *, max_bytes: int = MAX_JSON_BYTES, max_depth: int = MAX_JSON_DEPTH) -> Any:
    """`json.loads` of untrusted text: JsonTooLarge over the bounds, ValueError (with
    json's message) when it is not JSON; a RecursionError never leaves it.

    The size is checked before parsing.  The nesting is bounded while parsing by
    json's own recursion check (the C parser raises RecursionError, cleanly, a
    thousand levels down; caught here) and after it by an iterative walk that stops
    at `max_depth`: far cheaper than scanning the text first (5 us against 700 us
    for a 37 kB event), and nothing deeper reaches the code that reads it."""
    if len(raw) > max_bytes:
        unit = "characters" if isinstance(raw, str) else "bytes"
        raise JsonTooLarge(f"JSON of {len(raw)} {unit}, more than the {max_bytes} one record may hold")
    try:
        value = json.loads(raw)
    except RecursionError:
        raise JsonTooLarge(f"JSON nested deeper than {max_depth} levels") from None
    if _deeper_than(value, max_depth):
        raise JsonTooLarge(f"JSON nested deeper than {max_depth} levels")
    return value


def _deeper_than(value: Any, limit: int) -> bool:
    """Whether lists and objects in `value` nest deeper than `limit` (no recursion)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > limit:
            return True
        children = item.values() if isinstance(item, dict) else item if isinstance(item, list) else ()
        stack.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))
    return False


# --- CSV --------------------------------------------------------------------------------

# What a spreadsheet may start a formula with (OWASP, "CSV Injection").
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def csv_cell(value: Any) -> Any:
    """A cell that a spreadsheet shows as written: numbers stay numbers (a negative
    one is no formula), text starting like a formula gets a leading `'`."""
    if value is None or isinstance(value, (bool, int, float)):
        return value
    text = str(value)
    if text.startswith(_FORMULA_START) and not _is_number(text):
        return "'" + text
    return text


def _is_number(text: str) -> bool:
    try:
        return math.isfinite(float(text)) or text.strip().lower() in ("nan", "inf", "-inf", "+inf")
    except ValueError:
        return False


def write_csv(path: Path, rows: Iterable[Iterable[Any]]) -> None:
    """Rows of cells to `path`, every cell through `csv_cell`."""
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        for row in rows:
            writer.writerow([csv_cell(cell) for cell in row])


# --- Markdown ---------------------------------------------------------------------------

# `_` is left alone: ids and names are full of it (kuhn_poker, beat_last) and at worst it
# italicises; links, images, code, tables and HTML are what must not form.
_MARKDOWN_SPECIAL = re.compile(r"([\\`*\[\]|~])")


def markdown_text(value: Any) -> str:
    """Text that renders as itself in Markdown, on one line: HTML's `<`, `>` and `&`
    as entities, Markdown's marks for links and images, code, tables, bold and
    strike-through escaped."""
    from csro_tui.text import one_line  # start-up time: importing it loads rich

    text = one_line(value).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return _MARKDOWN_SPECIAL.sub(r"\\\1", text)


def markdown_code(value: Any) -> str:
    """Text as a Markdown code span: one line, no backtick to end it early, table pipes escaped
    (inside a code span HTML is shown, not rendered)."""
    from csro_tui.text import one_line  # start-up time: importing it loads rich

    return "`" + one_line(value).replace("`", "'").replace("|", "\\|") + "`"
