"""`csro repair SESSION`: make a session with a corrupt line readable again.

A log with a bad line in the middle (a disk error, a bad edit) cannot be read
at all.  Repair copies the whole log beside it (events.jsonl.bak), keeps every
event before the first bad line, drops that line and everything after it, and
says what was dropped.  The session then replays and resumes from the last
event kept (`SessionStore.repair`).
"""

from __future__ import annotations

import argparse
from collections import Counter

from csro_tui.commands.sessions import add_sessions_dir_argument, sessions_store
from csro_tui.numbers import counted
from csro_tui.sessions.store import read_log

# Dropped lines listed one by one up to this many; more are counted by kind.
MAX_LISTED_LINES = 12


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "repair",
        help="make a session with a corrupt log line readable again (keeps a backup)",
        description="Copy the session's log to events.jsonl.bak beside it, keep every event before the "
        "first bad line and drop the rest, and print what was dropped. The session can then be replayed "
        "and resumed (csro run --resume) from the last event kept. Run it while no csro run writes the session.",
    )
    parser.add_argument("session", metavar="SESSION", help="session id (under the sessions directory) or path")
    add_sessions_dir_argument(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from csro_tui.sessions.state import fold  # start-up time: importing it loads numpy
    from csro_tui.text import clean_text, one_line  # start-up time: importing it loads rich

    store = sessions_store(args)
    result = store.repair(args.session)
    if not result.repaired:
        print(f"{result.path}: nothing to repair ({result.kept_events} events, every line reads)")
        return 0
    lines = [
        f"repaired {result.path}",
        f"line {result.dropped[0][0]}: {one_line(result.problem, 200)}",
        f"kept events 1-{result.kept_events} (lines 1-{result.kept_lines}); "
        f"dropped {counted(len(result.dropped), 'line')}:",
    ]
    # what a dropped line held comes from the log: shown on one line, its escapes removed
    lines += ["  " + one_line(line) for line in _dropped_lines(result.dropped)]
    lines.append(f"the whole log before the repair: {result.backup}")
    state = fold(read_log(result.path).events)
    directory = result.path.parent
    status = f"closed ({state.closed.reason})" if state.closed is not None else "open"
    lines.append(f"the session now ends after {counted(state.completed_iterations, 'iteration')}, {status}; "
                 f"csro replay {directory} shows it")
    if state.closed is None:
        lines.append(f"continue with: csro run --resume {directory}")
    for line in lines:
        print(clean_text(line, keep_newlines=False))  # what was dropped quotes the log
    return 0


def _dropped_lines(dropped: list[tuple[int, str]]) -> list[str]:
    """Each dropped line, or the first few and the rest counted by what they held."""
    if len(dropped) <= MAX_LISTED_LINES:
        return [f"line {number}: {what}" for number, what in dropped]
    shown = dropped[:MAX_LISTED_LINES - 1]
    rest = Counter(what.split(" (")[0] for _, what in dropped[len(shown):])
    counts = ", ".join(f"{count} {kind}" for kind, count in rest.most_common())
    return [f"line {number}: {what}" for number, what in shown] + [
        f"lines {dropped[len(shown)][0]}-{dropped[-1][0]}: {counts}"
    ]
