"""`csro games [GAME]`: the games csro-tui knows; one game's policy-facing details.

Without GAME, a table of the registered games.  With GAME, what a policy
for it sees: the `game` dict its `__init__` receives, the keys of `obs`
with an example observation taken from a real (seeded, random) episode,
its seed policies (for `seed:NAME` and `--seeds`) and its benchmark bots.
"""

from __future__ import annotations

import argparse

from csro_tui.numbers import ordinal

# How many benchmark names to list before summarising the rest.
NAMES_SHOWN = 3


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "games",
        help="list the games, their benchmark populations and evaluation modes",
        description="List the registered games: name, title, benchmark population, exact or sampled evaluation, "
        "default episodes. With GAME: the game dict and observation a policy receives (with an example), "
        "its seed policies and benchmark bots.",
    )
    parser.add_argument("game", nargs="?", metavar="GAME",
                        help="show this game's policy interface, seeds and bots (e.g. rrps, kuhn_poker)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.game:
        return show_game(args.game)
    from rich.table import Table  # start-up time: importing it loads rich

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
    from csro_tui.commands._output import stdout_console  # start-up time: importing it loads rich

    console = stdout_console()
    console.print(table)
    console.print(
        "Any other two-player OpenSpiel game string also works (generic adapter); "
        "parameters go in parentheses, e.g. rrps(num_repetitions=100). "
        "`csro games NAME` shows what a policy for it sees, its seed policies (seed:NAME) and its bots.",
        style="dim",
    )
    return 0


def _specs():
    # start-up time: importing it loads numpy, open_spiel, pyspiel
    from csro_tui.games.registry import get_game, list_games

    for entry in list_games():
        yield get_game(entry) if isinstance(entry, str) else entry


def _summarise(names: list[str]) -> str:
    if not names:
        return "none"
    shown = ", ".join(names[:NAMES_SHOWN])
    more = f", +{len(names) - NAMES_SHOWN} more" if len(names) > NAMES_SHOWN else ""
    return f"{len(names)}: {shown}{more}"


def show_game(name: str) -> int:
    """Print one game's policy interface, seed policies and benchmark bots (plain text, pipe-friendly)."""
    import json
    import textwrap

    from csro_tui.games.registry import get_game  # start-up time: importing it loads numpy, open_spiel, pyspiel
    from csro_tui.text import clean_text  # start-up time: importing it loads rich

    spec = get_game(name)
    evaluation = "exact" if spec.exact else f"sampled, {spec.default_episodes} episodes per matchup by default"
    out = [f"{spec.title} ({spec.name}): {evaluation}", ""]

    game = spec.example_game(player=0)
    rules = game.pop("rules", "")
    out.append("Policy.__init__(player, game) receives `game` (this player 0's, with an example seed):")
    out += [f"  {key}: {json.dumps(value, ensure_ascii=False)}" for key, value in game.items()]
    if rules:
        out += ["  game[\"rules\"]:"] + ["    " + line for line in clean_text(rules).splitlines()]
    out += ["", "Policy.act(obs) receives `obs`:"]
    out += ["  " + line for line in clean_text(spec.observation_text).splitlines()]
    try:
        wanted = 3
        example, decision = spec.example_decision(player=0, decisions=wanted)
        where = f"player 0 at its {ordinal(decision)} decision of a seeded random episode"
        if decision < wanted:
            where += ", its last: the episode ended there"
        out += ["", f"An example obs ({where}):"]
        out += ["  " + line for line in json.dumps(example, ensure_ascii=False).splitlines()]
    except (ValueError, NotImplementedError) as error:
        out += ["", f"(no example observation: {clean_text(error, keep_newlines=False)})"]

    seeds = spec.seed_policies()
    out += ["", f"Seed policies ({len(seeds)}; use as seed:NAME with csro eval, or --seeds NAME,... with csro run):"]
    width = max((len(seed) for seed in seeds), default=0)
    for seed, source in seeds.items():
        out.append(f"  {seed:<{width}}  {_summary_line(source)}".rstrip())
    if not seeds:
        out.append("  none")

    bots = [bot.name for bot in spec.benchmark()]
    out += ["", f"Benchmark bots ({len(bots)}; the population csro eval plays, and names csro eval accepts):"]
    out += textwrap.wrap(", ".join(bots), width=100, initial_indent="  ", subsequent_indent="  ") or ["  none"]
    print("\n".join(out))
    return 0


def _summary_line(source: str) -> str:
    """The first line of a seed policy's module docstring."""
    import ast

    from csro_tui.text import one_line  # start-up time: importing it loads rich

    try:
        doc = ast.get_docstring(ast.parse(source)) or ""
    except SyntaxError:
        return ""
    return one_line(doc.strip().splitlines()[0] if doc.strip() else "", 90)
