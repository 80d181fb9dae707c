"""Get policy code out of a model's reply.

Two shapes of reply are understood:

* a full module, usually in a Markdown code fence: `extract_code(reply)`;
* AlphaEvolve-style edits to an existing module, applied by
  `apply_edits(source, reply)`:

      <<<<<<< SEARCH
      old lines
      =======
      new lines
      >>>>>>> REPLACE

Both raise `CsroError` subclasses (`NoCodeError`, `EditError`) with a one-line
reason the oracle can show or feed back; an oracle asking for edits falls back
to `extract_code` when `apply_edits` fails.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

from csro_tui.errors import CsroError
from csro_tui.sandbox.contract import POLICY_CLASS_NAME

_POLICY_CLASS = re.compile(rf"^class\s+{POLICY_CLASS_NAME}\b", re.MULTILINE)
# An opening fence: ``` or ~~~ (3 or more), optional info string.
_FENCE_OPEN = re.compile(r"^ {0,3}(?P<fence>`{3,}|~{3,})\s*(?P<info>[^\s`]*)[^`]*$")
_PYTHON_TAGS = {"", "python", "py", "python3", "py3"}
# Lines that can start a module when a reply has prose around unfenced code.
_CODE_START = re.compile(r"^(import |from |class |def |@|#|\"\"\"|''')")
_MAX_PARSE_TRIES = 60


class NoCodeError(CsroError):
    """The reply holds no usable policy module."""


class EditError(CsroError):
    """A SEARCH/REPLACE edit could not be applied; `block` is its 1-based number (None: the reply as a whole)."""

    def __init__(self, message: str, block: int | None = None) -> None:
        super().__init__(message)
        self.block = block


# --------------------------------------------------------------------- full code
@dataclass
class _Block:
    info: str
    text: str
    closed: bool


def _fenced_blocks(text: str) -> list[_Block]:
    """Markdown fenced blocks in order; a fence left open at the end is kept (truncated reply)."""
    blocks: list[_Block] = []
    lines = text.split("\n")
    index = 0
    while index < len(lines):
        opening = _FENCE_OPEN.match(lines[index])
        if opening is None:
            index += 1
            continue
        fence = opening.group("fence")
        closing = re.compile(rf"^ {{0,3}}{re.escape(fence[0])}{{{len(fence)},}}\s*$")
        body: list[str] = []
        index += 1
        closed = False
        while index < len(lines):
            if closing.match(lines[index]):
                closed = True
                index += 1
                break
            body.append(lines[index])
            index += 1
        blocks.append(_Block(opening.group("info").lower(), "\n".join(body), closed))
    return blocks


def _finish(code: str) -> str:
    return code.strip("\n").rstrip() + "\n"


def extract_code(reply: str) -> str:
    """The policy module in `reply`, ending with one newline.

    Preference: among fenced blocks, the last one defining `class Policy`
    (an unterminated fence at the end of a truncated reply counts); with no
    fences, the reply itself if it is Python (prose before or after it is
    trimmed).  Raises `NoCodeError` saying why nothing fits.
    """
    if not isinstance(reply, str) or not reply.strip():
        raise NoCodeError("the reply is empty")
    text = reply.replace("\r\n", "\n").replace("\r", "\n")
    blocks = _fenced_blocks(text)
    if blocks:
        with_policy = [b for b in blocks if _POLICY_CLASS.search(b.text)]
        if with_policy:
            return _finish(with_policy[-1].text)
        python_blocks = [b for b in blocks if b.info in _PYTHON_TAGS and b.text.strip()]
        noun = "code block" if len(blocks) == 1 else f"{len(blocks)} code blocks"
        if not python_blocks:
            raise NoCodeError(f"the reply's {noun} hold no Python code")
        raise NoCodeError(f"none of the reply's {noun} defines class {POLICY_CLASS_NAME}")
    return _unfenced_code(text)


def _unfenced_code(text: str) -> str:
    """A reply without fences: the whole of it, or the largest Python part defining Policy."""
    if not _POLICY_CLASS.search(text):
        raise NoCodeError(f"the reply has no code block and no class {POLICY_CLASS_NAME}")
    if _parses(text):
        return _finish(text)
    lines = text.split("\n")
    policy_line = next(i for i, line in enumerate(lines) if _POLICY_CLASS.match(line))
    starts = [i for i, line in enumerate(lines[: policy_line + 1]) if _CODE_START.match(line)]
    # Ends: the end of the text, then each blank line after the class (prose
    # after the code is usually separated by one), longest first.
    ends = [len(lines)] + [i for i in range(len(lines) - 1, policy_line, -1) if not lines[i].strip()]
    tries = 0
    for start in starts:
        for end in ends:
            tries += 1
            if tries > _MAX_PARSE_TRIES:
                break
            candidate = "\n".join(lines[start:end])
            if _POLICY_CLASS.search(candidate) and _parses(candidate):
                return _finish(candidate)
    raise NoCodeError(
        f"the reply has no code block, and the text around class {POLICY_CLASS_NAME} is not valid Python"
    )


def _parses(text: str) -> bool:
    try:
        ast.parse(text)
    except (SyntaxError, ValueError):
        return False
    return True


# --------------------------------------------------------------------- edits
_SEARCH = re.compile(r"^\s*<{5,}\s*SEARCH\s*$")
_DIVIDER = re.compile(r"^\s*={5,}\s*$")
_REPLACE = re.compile(r"^\s*>{5,}\s*REPLACE\s*$")


@dataclass
class EditBlock:
    """One SEARCH/REPLACE pair, as lines without line endings."""

    search: list[str]
    replace: list[str]


def parse_edits(reply: str) -> list[EditBlock]:
    """The SEARCH/REPLACE blocks in `reply`; raises `EditError` if there are none or one is incomplete."""
    lines = reply.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    blocks: list[EditBlock] = []
    index = 0
    while index < len(lines):
        if not _SEARCH.match(lines[index]):
            index += 1
            continue
        number = len(blocks) + 1
        search: list[str] = []
        index += 1
        while index < len(lines) and not _DIVIDER.match(lines[index]):
            if _SEARCH.match(lines[index]) or _REPLACE.match(lines[index]):
                raise EditError(f"edit block {number} has no ======= line between SEARCH and REPLACE", number)
            search.append(lines[index])
            index += 1
        if index >= len(lines):
            raise EditError(f"edit block {number} is incomplete (no =======)", number)
        replace: list[str] = []
        index += 1
        while index < len(lines) and not _REPLACE.match(lines[index]):
            if _SEARCH.match(lines[index]):
                raise EditError(f"edit block {number} is incomplete (no >>>>>>> REPLACE)", number)
            replace.append(lines[index])
            index += 1
        if index >= len(lines):
            raise EditError(f"edit block {number} is incomplete (no >>>>>>> REPLACE)", number)
        index += 1
        blocks.append(EditBlock(search, replace))
    if not blocks:
        raise EditError("the reply has no SEARCH/REPLACE blocks")
    return blocks


def apply_edits(source: str, reply: str) -> str:
    """Apply the reply's SEARCH/REPLACE blocks to `source`, in order.

    Each block's SEARCH lines are found by exact line match first, then
    ignoring trailing and repeated whitespace and blank lines, then also
    ignoring a consistent difference in indentation (the replacement is then
    re-indented by the same amount).  A SEARCH that is empty, not found, or
    found in more than one place raises `EditError` naming the block.
    """
    blocks = parse_edits(reply)
    lines = source.replace("\r\n", "\n").split("\n")
    ends_with_newline = source.endswith("\n")
    if ends_with_newline:
        lines = lines[:-1]
    for number, block in enumerate(blocks, start=1):
        lines = _apply_block(lines, block, number, len(blocks))
    result = "\n".join(lines)
    return result + "\n" if ends_with_newline or result else result


def _apply_block(lines: list[str], block: EditBlock, number: int, total: int) -> list[str]:
    label = f"edit block {number} of {total}"
    search = _trim_blank_edges(block.search)
    if not search:
        raise EditError(f"{label} has an empty SEARCH section", number)
    for matcher in (_match_exact, _match_loose, _match_reindented):
        matches = matcher(lines, search)
        if len(matches) > 1:
            raise EditError(f"{label}: SEARCH text matches {len(matches)} places; quote more lines", number)
        if matches:
            start, end, shift = matches[0]
            replacement = [_shift_indent(line, shift) for line in block.replace]
            return lines[:start] + replacement + lines[end:]
    first = next(line for line in search if line.strip()).strip()
    raise EditError(f"{label}: SEARCH text not found in the code (it starts {first[:60]!r})", number)


def _trim_blank_edges(lines: list[str]) -> list[str]:
    start, end = 0, len(lines)
    while start < end and not lines[start].strip():
        start += 1
    while end > start and not lines[end - 1].strip():
        end -= 1
    return lines[start:end]


def _match_exact(lines: list[str], search: list[str]) -> list[tuple[int, int, int]]:
    size = len(search)
    return [(i, i + size, 0) for i in range(len(lines) - size + 1) if lines[i : i + size] == search]


def _indent_width(line: str) -> int:
    return len(line.expandtabs(4)) - len(line.expandtabs(4).lstrip())


def _normalise(line: str, keep_indent: bool) -> str:
    words = " ".join(line.split())
    return " " * _indent_width(line) + words if keep_indent else words


def _match_lines(lines: list[str], search: list[str], keep_indent: bool) -> list[tuple[int, int, int]]:
    """Matches ignoring blank lines and whitespace runs; each (start, end, indent shift)."""
    wanted = [_normalise(line, keep_indent) for line in search if line.strip()]
    wanted_indents = [_indent_width(line) for line in search if line.strip()]
    content = [i for i, line in enumerate(lines) if line.strip()]
    normalised = [_normalise(lines[i], keep_indent) for i in content]
    matches = []
    for offset in range(len(content) - len(wanted) + 1):
        if normalised[offset : offset + len(wanted)] != wanted:
            continue
        found = content[offset : offset + len(wanted)]
        shifts = {_indent_width(lines[i]) - w for i, w in zip(found, wanted_indents)}
        if len(shifts) != 1:
            continue  # relative indentation differs: not the same code
        matches.append((found[0], found[-1] + 1, shifts.pop()))
    return matches


def _match_loose(lines: list[str], search: list[str]) -> list[tuple[int, int, int]]:
    return _match_lines(lines, search, keep_indent=True)


def _match_reindented(lines: list[str], search: list[str]) -> list[tuple[int, int, int]]:
    return _match_lines(lines, search, keep_indent=False)


def _shift_indent(line: str, shift: int) -> str:
    if shift == 0 or not line.strip():
        return line
    if shift > 0:
        return " " * shift + line
    expanded = line.expandtabs(4)
    removable = min(-shift, _indent_width(expanded))
    return expanded[removable:]
