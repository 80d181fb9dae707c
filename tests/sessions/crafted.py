"""Session logs an attacker might hand a user, made from a real recorded one (issue 35).

`recorded()` is the version-1 RRPS session of tests/data as a list of records, to
change before `write_log` writes it where a test wants it.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any, Callable

from csro_tui.sessions.store import EVENTS_FILE

RECORDED = Path(__file__).resolve().parents[1] / "data" / "sessions_v1" / "rrps20-seed"
# The line of each event of RECORDED used below (1-based, as errors number them).
P2_ADDED_LINE = 24  # policy_added of p2 (the first line naming p2 as an id)
BENCHMARK_LINE = 4  # benchmark_evaluated of p0


def recorded() -> list[dict[str, Any]]:
    return [json.loads(line) for line in (RECORDED / EVENTS_FILE).read_text().splitlines()]


def renamed_id(records: list[dict[str, Any]], old: str, new: str) -> list[dict[str, Any]]:
    """Every occurrence of the id `old` (as a value or a key) replaced by `new`."""
    def walk(value: Any) -> Any:
        if isinstance(value, dict):
            return {(new if key == old else key): walk(item) for key, item in value.items()}
        if isinstance(value, list):
            return [walk(item) for item in value]
        return new if value == old else value

    return [walk(record) for record in records]


def write_log(directory: Path, records: list[dict[str, Any]] | None = None, *,
              lines: list[str] | None = None, change: Callable[[list[str]], None] | None = None) -> Path:
    """A session directory holding `records` (or raw `lines`), one a line."""
    directory.mkdir(parents=True, exist_ok=True)
    text = lines if lines is not None else [json.dumps(record) for record in (records or recorded())]
    if change is not None:
        change(text)
    (directory / EVENTS_FILE).write_text("\n".join(text) + "\n")
    return directory


def nested_line(seq: int, depth: int = 100_000) -> str:
    """A well-formed event line but for a value nested `depth` lists deep (a RecursionError in json)."""
    return (f'{{"v": 1, "seq": {seq}, "ts": "x", "type": "game_played", "policy_id": "p0", "opponent": "x", '
            f'"seat": 0, "transcript": {"[" * depth}{"]" * depth}, "returns": [0, 0]}}')


def good_copy(directory: Path) -> Path:
    shutil.copytree(RECORDED, directory)
    return directory


def tree(root: Path) -> dict[str, tuple[int, int]]:
    """Every file and directory under `root` (links not followed): path -> (size, mtime in ns)."""
    found = {}
    for folder, directories, files in os.walk(root):
        for name in directories + files:
            path = Path(folder) / name
            info = path.lstat()
            found[str(path.relative_to(root))] = (info.st_size if path.is_file() else 0, info.st_mtime_ns)
    return found
