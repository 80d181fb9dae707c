"""`csro games`: the games csro-tui knows, with their benchmark populations."""

from __future__ import annotations

import argparse

# How many benchmark names to list before summarising the rest.
NAMES_SHOWN = 3


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "games",
        help="list the games, their benchmark populations and evaluation modes",
        description="List the registered games: name, title, benchmark population, exact or sampled evaluation, default episodes.",
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.table import Table

    table = Table(title="csro games")
    table.add_column("name", style="bold")
    table.add_column("title")
    table.add_column("benchmark", overflow="fold")
    table.add_column("evaluation")
    table.add_column("episodes", justify="right")
    for spec in _specs():
        bots = [bot.name for bot in spec.benchmark()]
        table.add_row(
            spec.name,
            spec.title,
            _summarise(bots),
            "exact" if spec.exact else "sampled",
            "-" if spec.exact else str(spec.default_episodes),
        )
    console = Console()
    console.print(table)
    console.print(
        "Any other two-player OpenSpiel game string also works (generic adapter); "
        "parameters go in parentheses, e.g. rrps(num_repetitions=100).",
        style="dim",
    )
    return 0


def _specs():
    from csro_tui.games.registry import get_game, list_games

    for entry in list_games():
        yield get_game(entry) if isinstance(entry, str) else entry


def _summarise(names: list[str]) -> str:
    if not names:
        return "none"
    shown = ", ".join(names[:NAMES_SHOWN])
    more = f", +{len(names) - NAMES_SHOWN} more" if len(names) > NAMES_SHOWN else ""
    return f"{len(names)}: {shown}{more}"
