"""`csro crosstable --game G`: every pair of a population, and each member's metrics.

The population is the game's benchmark, or the members given with
--participants (policy files, seed:NAME, benchmark bot names).  Each pair is
played once with seats swapped (or computed exactly); its mirror entry is
the negation, since seat-averaged payoffs of a zero-sum game are
antisymmetric, and the diagonal is 0 for the same reason.  Each member's
PopReturn, PopExpl and AggScore are taken over the whole population,
itself included, as in OpenSpiel's roshambo_population_example.py.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

from rich.table import Table

from csro_tui.commands._output import stdout_console
from csro_tui.commands.eval import (
    EXIT_INVALID,
    EXIT_POLICY_FAILED,
    InvalidPolicy,
    add_backend_arguments,
    isolation_description,
    job_progress,
    load_game,
    load_participant,
    positive_int,
    referee_pool,
    with_workers_note,
)
from csro_tui.errors import CsroError
from csro_tui.files import write_csv
from csro_tui.evaluation.participants import benchmark_participants
from csro_tui.evaluation.population_metrics import agg_score_stderr, population_metrics
from csro_tui.evaluation.sampling import derive, new_master_seed
from csro_tui.text import one_line, plain
from csro_tui.numbers import NOT_MEASURABLE_NOTE, counted, number, plain_numbers

# Larger populations get the metrics table only; the matrix goes to --out.
MAX_MATRIX_SHOWN = 10


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "crosstable",
        help="play every pair of a population and report each member's metrics",
        description=(
            "Play every pair of the benchmark population (or of --participants) with "
            "seats swapped; print PopReturn, PopExpl and AggScore per member and write "
            "the cross-table to --out (CSV or JSON by extension)."
        ),
    )
    parser.add_argument("--game", required=True, help="game name, e.g. rrps, kuhn_poker")
    parser.add_argument(
        "--participants",
        nargs="+",
        metavar="MEMBER",
        help="policy files, seed:NAME or benchmark bot names (default: the benchmark population)",
    )
    parser.add_argument("--episodes", type=positive_int, help="episodes per pair (default: the game's)")
    parser.add_argument(
        "--seed", type=int,
        help="master seed of the matches (default: a fresh secret one, printed so --seed repeats the run)",
    )
    parser.add_argument("--workers", type=positive_int, help="parallel referee processes (default: CPU count)")
    parser.add_argument("--out", type=Path, help="write the cross-table here: .csv, otherwise JSON")
    add_backend_arguments(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    # start-up time: importing it loads numpy, pyspiel
    from csro_tui.evaluation.runner import MatchJob, evaluate_matchups

    spec = load_game(args.game)
    try:
        if args.participants:
            members = [load_participant(spec, reference) for reference in args.participants]
        else:
            members = benchmark_participants(spec)
    except InvalidPolicy:
        return EXIT_INVALID
    names = _unique_names([member.name for member in members])
    if len(members) < 2:
        raise CsroError("a cross-table needs at least two participants")
    episodes = args.episodes or spec.default_episodes

    # A secret master seed unless one is given, as in `csro eval`: policies see only
    # seeds derived from it by a keyed hash (evaluation/sampling.py), so they cannot predict them.
    seed = args.seed if args.seed is not None else new_master_seed()
    pairs = [(i, j) for i in range(len(members)) for j in range(i + 1, len(members))]
    jobs = [MatchJob(members[i], members[j], episodes, derive(seed, "crosstable", names[i], names[j])) for i, j in pairs]
    with job_progress("cross-table", len(jobs)) as advance, referee_pool(spec, args) as pool:
        results = evaluate_matchups(
            spec, jobs, workers=args.workers, progress=with_workers_note(advance, pool), pool=pool
        )

    size = len(members)
    matrix = [[0.0] * size for _ in range(size)]
    stderr: list[list[float | None]] = [[0.0] * size for _ in range(size)]
    failures = []
    for (i, j), result in zip(pairs, results):
        if result.failure is not None:
            matrix[i][j] = matrix[j][i] = math.nan
            failures.append(f"{names[i]} vs {names[j]}: {result.failure.summary()}")
            continue
        matrix[i][j], matrix[j][i] = result.mean, -result.mean
        # None: fewer than two seat-swapped pairs, which cannot measure their own noise
        stderr[i][j] = stderr[j][i] = result.stderr if result.stderr_measurable else None
    metrics = _member_metrics(names, matrix)

    _print(spec, names, matrix, metrics, episodes, stderr)
    if args.out is not None:
        _write(args.out, spec, names, matrix, stderr, metrics, episodes, seed)
    if not spec.exact:
        print(f"seed {seed} (repeat this cross-table with --seed {seed})")
    for line in failures:
        print(one_line(f"csro: error: {line} (repeat with --seed {seed})"), file=sys.stderr)
    return EXIT_POLICY_FAILED if failures else 0


def _unique_names(names: list[str]) -> list[str]:
    """Names as given, numbered where two members share one."""
    seen: dict[str, int] = {}
    unique = []
    for name in names:
        seen[name] = seen.get(name, 0) + 1
        unique.append(name if seen[name] == 1 else f"{name}#{seen[name]}")
    return unique


def _member_metrics(names: list[str], matrix: list[list[float]]) -> dict:
    """PopReturn/PopExpl/AggScore per member (None where a payoff is missing)."""
    metrics = {}
    for i, name in enumerate(names):
        row = {names[j]: matrix[i][j] for j in range(len(names))}
        metrics[name] = None if any(math.isnan(v) for v in row.values()) else population_metrics(row)
    return metrics


def _print(spec, names, matrix, metrics, episodes, stderr) -> None:

    console = stdout_console()
    how = "exact" if spec.exact else f"{counted(episodes, 'episode')} per pair, seats swapped"
    if len(names) <= MAX_MATRIX_SHOWN:
        grid = Table(title=f"{spec.title} cross-table: row's mean return against column ({how})")
        grid.add_column("")
        for index in range(len(names)):
            grid.add_column(str(index + 1), justify="right")
        for i, name in enumerate(names):
            grid.add_row(plain(f"{i + 1} {name}"), *(_cell(value) for value in matrix[i]))
        console.print(grid)

    ranking = Table(title=f"{spec.title} population metrics ({how})")
    for column in ("rank", "member", "PopReturn", "PopExpl", "AggScore"):
        ranking.add_column(column, justify="left" if column == "member" else "right")
    ordered = sorted(names, key=lambda n: -metrics[n].agg_score if metrics[n] else math.inf)
    for rank, name in enumerate(ordered, start=1):
        m = metrics[name]
        values = tuple(_number(v) for v in (m.pop_return, m.pop_expl, m.agg_score)) if m else ("failed",) * 3
        if m and not spec.exact:
            i = names.index(name)
            errors = {names[j]: stderr[i][j] for j in range(len(names))}
            if any(error is None for error in errors.values()):
                values = (*values[:2], number(m.agg_score, signed=True, measurable=False))
            else:
                values = (*values[:2], number(m.agg_score, signed=True, stderr=agg_score_stderr(m.per_opponent, errors)))
        ranking.add_row(str(rank), plain(name), *values)
    console.print(ranking)
    if not spec.exact and any(error is None for row in stderr for error in row):
        console.print(NOT_MEASURABLE_NOTE, highlight=False)
    console.print(isolation_description(), style="dim")


def _number(value: float) -> str:
    return number(value, signed=True)


def _cell(value: float) -> str:
    return "failed" if math.isnan(value) else number(value, 3, signed=True)


def _write(path: Path, spec, names, matrix, stderr, metrics, episodes, seed) -> None:
    try:
        if path.suffix.lower() == ".csv":
            rows = [["member", *names, "PopReturn", "PopExpl", "AggScore"]]
            for i, name in enumerate(names):
                m = metrics[name]
                tail = [m.pop_return, m.pop_expl, m.agg_score] if m else ["", "", ""]
                rows.append(["" if v is None else v for v in plain_numbers([name, *matrix[i], *tail])])
            write_csv(path, rows)  # member names are file names and bot names: cells no spreadsheet runs
        else:
            document = {
                "game": spec.name,
                "exact": bool(spec.exact),
                "episodes": None if spec.exact else episodes,
                "seed": seed,
                "members": names,
                "matrix": [[None if math.isnan(v) else v for v in row] for row in matrix],
                "stderr": stderr,  # null where not measurable (fewer than two seat-swapped pairs)
                "stderr_measurable": all(error is not None for row in stderr for error in row),
                "metrics": {name: (m.to_dict() if m else None) for name, m in metrics.items()},
            }
            path.write_text(json.dumps(plain_numbers(document), indent=2) + "\n", encoding="utf-8")
    except OSError as error:
        raise CsroError(f"cannot write {path}: {error.strerror or error}") from None
