"""`csro sessions`: the recorded sessions, newest first."""

from __future__ import annotations

import argparse


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "sessions",
        help="list recorded sessions",
        description="List the sessions under the sessions directory: id, game, oracle, iterations, "
        "population size, best metric, date and status. Unreadable logs are listed with the reason.",
    )
    add_sessions_dir_argument(parser)
    parser.set_defaults(func=run)


def add_sessions_dir_argument(parser: argparse.ArgumentParser) -> None:
    """--session-dir (alias --sessions-dir), for the commands that read recorded sessions."""
    parser.add_argument("--session-dir", "--sessions-dir", dest="sessions_dir",
                        help="sessions directory (default ./sessions or $CSRO_SESSIONS_DIR)")


def run(args: argparse.Namespace) -> int:
    import sys

    from rich.console import Console
    from rich.table import Table

    from csro_tui.sessions.store import SessionStore

    store = SessionStore(args.sessions_dir)
    infos = store.list_sessions()
    console = Console(width=None if sys.stdout.isatty() else 160)
    if not infos:
        console.print(f"no sessions under {store.root}", highlight=False)
        return 0
    table = Table(title=f"sessions in {store.root}", title_justify="left")
    for column, justify in (("id", "left"), ("game", "left"), ("oracle", "left"), ("iterations", "right"),
                            ("population", "right"), ("best metric", "right"), ("date", "left"), ("status", "left")):
        table.add_column(column, justify=justify, overflow="fold")
    for info in infos:
        if info.error:
            table.add_row(info.id, "", "", "", "", "", "", f"[red]unreadable[/]: {info.error}")
            continue
        best = f"{info.best_metric[0]} {info.best_metric[1]:.4f}" if info.best_metric else "-"
        date = info.started.replace("T", " ")[:19]
        table.add_row(info.id, info.game, info.oracle, str(info.iterations), str(info.population_size), best,
                      date, info.closed or "open (resumable)")
    console.print(table)
    return 0
