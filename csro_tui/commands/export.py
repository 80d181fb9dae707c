"""`csro export SESSION --out DIR`: policies as modules, payoffs as CSV, a Markdown report."""

from __future__ import annotations

import argparse

from csro_tui.commands.sessions import add_sessions_dir_argument, sessions_store
from csro_tui.numbers import counted


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "export",
        help="export a session's policies, payoff matrix and report",
        description="Write each policy of SESSION as a standalone module with a header comment "
        "(origin, parent, meta-strategy weight, scores), the payoff matrix as CSV, and a Markdown "
        "report of the run into DIR.",
    )
    parser.add_argument("session", metavar="SESSION", help="session id (under the sessions directory) or path")
    parser.add_argument("--out", required=True, metavar="DIR", help="directory to write into (created if needed)")
    parser.add_argument("--step", type=int, help="export the state after event K (default: the end)")
    parser.add_argument("--diversity", action="store_true",
                        help="profile the members with no recorded behaviour profile (runs them in the sandbox) "
                        "so the report's diversity heat map covers them all; the log is not changed")
    add_sessions_dir_argument(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import sys
    from pathlib import Path

    from csro_tui.sessions.state import fold  # start-up time: importing it loads numpy
    from csro_tui.text import one_line  # start-up time: importing it loads rich

    log = sessions_store(args).read(args.session)
    for warning in log.warnings:  # (its text quotes the log)
        print(f"warning: {one_line(warning)}", file=sys.stderr)
    state = fold(log.events)
    if args.step is not None:
        state = state.at(args.step)
    if args.diversity:
        # imported when used, not at the top: keeps csro's start-up fast
        from csro_tui.games.registry import get_game
        from csro_tui.profiles.session import member_profiles

        print("profiling the members without a recorded profile in the sandbox…", file=sys.stderr, flush=True)
        _, computed = member_profiles(get_game(state.started.game), state)
        for event in computed:  # into this export's copy of the state only
            event.seq = state.step + 1
            state.apply(event)
    # imported when used, not at the top: keeps csro's start-up fast
    from csro_tui.profiles.session import export_with_diversity

    written = export_with_diversity(state, Path(args.out))
    policies = sum(1 for path in written if path.parent.name == "policies")
    others = [path.name for path in written if path.parent.name != "policies"]
    print(one_line(f"exported {counted(policies, 'policy', 'policies')}, {', '.join(others)} to {Path(args.out).resolve()}"))
    return 0
