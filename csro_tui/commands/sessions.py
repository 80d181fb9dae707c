"""`csro sessions`: the recorded sessions, newest first."""

from __future__ import annotations

import argparse

from csro_tui.config import load_run_config
from csro_tui.numbers import number
from csro_tui.sessions.store import SessionStore


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "sessions",
        help="list recorded sessions",
        description="List the sessions under the sessions directory: id, game, oracle, iterations, "
        "population size (seat 0 + seat 1 with two populations), best metric, date and status. Unreadable logs are listed with the reason.",
    )
    add_sessions_dir_argument(parser)
    parser.set_defaults(func=run)


def add_sessions_dir_argument(parser: argparse.ArgumentParser) -> None:
    """--session-dir (alias --sessions-dir) and --config, for the commands that read recorded sessions."""
    parser.add_argument("--session-dir", "--sessions-dir", dest="sessions_dir",
                        help="sessions directory (default: sessions_dir in csro.toml, $CSRO_SESSIONS_DIR, ./sessions)")
    parser.add_argument("--config", help="config file (TOML; default ./csro.toml or $CSRO_CONFIG)")


def sessions_store(args: argparse.Namespace) -> SessionStore:
    """The SessionStore the flags name, through the one layering `csro run` uses
    (defaults < config file < CSRO_SESSIONS_DIR < --sessions-dir: config.load_run_config)."""
    config = load_run_config({"sessions_dir": args.sessions_dir}, config_file=getattr(args, "config", None))
    return SessionStore(config.sessions_dir)


# Columns left out first when the terminal is too narrow for all of them
# (the id and status always stay: what to copy, and whether it can resume).
SESSIONS_DROP_ORDER = ("population", "iterations", "date", "oracle", "best metric", "game")
CHOOSE_ANOTHER = "another directory: --sessions-dir DIR, CSRO_SESSIONS_DIR or sessions_dir in csro.toml"


def population_text(info) -> str:
    """The population's size; with two populations, seat 0's + seat 1's."""
    return "{}+{}".format(*info.seat_sizes) if info.seat_sizes else str(info.population_size)


def _status(info) -> str:
    if info.closed is None:
        return "open (resumable)"
    return f"{info.closed}: the oracle finished" if info.oracle_finished else info.closed


def run(args: argparse.Namespace) -> int:
    from rich.text import Text  # start-up time: importing it loads rich

    from csro_tui.commands._output import pipe_aware_console, print_table  # start-up time: importing it loads rich
    from csro_tui.text import one_line  # start-up time: importing it loads rich

    store = sessions_store(args)
    where = store.root.resolve()
    infos = store.list_sessions()
    console = pipe_aware_console()
    if not infos:
        missing = "" if store.root.is_dir() else " (the directory does not exist)"
        print(f"no sessions under {where}{missing}; {CHOOSE_ANOTHER}")
        return 0
    rows = []
    for info in infos:
        if info.error:
            rows.append([info.id, "", "", "", "", "", "", Text.assemble(("unreadable", "red"), f": {one_line(info.error)}")])
            continue
        best = f"{info.best_metric[0]} {number(info.best_metric[1])}" if info.best_metric else "-"
        date = info.started.replace("T", " ")[:19]
        rows.append([info.id, info.game, info.oracle, str(info.iterations), population_text(info), best,
                     date, _status(info)])
    columns = [("id", "left"), ("game", "left"), ("oracle", "left"), ("iterations", "right"),
               ("population", "right"), ("best metric", "right"), ("date", "left"), ("status", "left")]
    print_table(console, f"{len(infos)} session{'s' if len(infos) != 1 else ''} in {where}", columns, rows,
                drop_order=SESSIONS_DROP_ORDER)
    return 0
