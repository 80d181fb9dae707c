"""`csro eval POLICY --game G`: one policy against the game's benchmark population.

POLICY is a policy file, `seed:NAME` (one of the game's seed policies) or a
benchmark bot's name.  Code is validated first (issues are printed with
their line numbers, exit 2); then every benchmark member is played (or
computed exactly, for Kuhn and Leduc) with seats swapped, and the result is
a table of per-opponent payoffs with PopReturn, PopExpl and AggScore, or
with --json one machine-readable object.  A policy failure ends the command
with one line and exit 1.

The helpers here (`load_game`, `load_participant`, `job_progress`) are
shared with `csro crosstable`.
"""

from __future__ import annotations

import argparse
import json
import sys
from contextlib import contextmanager
from typing import TYPE_CHECKING, Iterator

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from rich.table import Table

from csro_tui.commands._limits import add_limit_arguments, given_limits
from csro_tui.commands._output import ProgressLines, stdout_console
from csro_tui.config import load_run_config
from csro_tui.errors import ConfigError
from csro_tui.evaluation.participants import CodePolicy, benchmark_participants, resolve_participant
from csro_tui.evaluation.population_metrics import agg_score_stderr, population_metrics
from csro_tui.evaluation.sampling import derive, new_master_seed
from csro_tui.numbers import NOT_MEASURABLE_NOTE, counted, fixed, number, plain_numbers
from csro_tui.sandbox.clock import describe_printed, describe_timing, timing_of
from csro_tui.sandbox.validation import validate_source
from csro_tui.text import one_line, plain

if TYPE_CHECKING:
    from csro_tui.evaluation.participants import Participant
    from csro_tui.games.base import GameSpec

EXIT_POLICY_FAILED = 1
EXIT_INVALID = 2
MAX_ISSUES_SHOWN = 20


class InvalidPolicy(Exception):
    """Validation issues were printed; the command exits with EXIT_INVALID."""


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "eval",
        help="evaluate a policy against a game's benchmark population",
        description=(
            "Play POLICY (a file, seed:NAME or a benchmark bot) against every member of "
            "the game's benchmark population, seats swapped, and report per-opponent "
            "payoffs with PopReturn, PopExpl and AggScore (exploitability where exact)."
        ),
    )
    parser.add_argument("policy", metavar="POLICY", help="policy file, seed:NAME, or a benchmark bot name")
    parser.add_argument("--game", required=True, help="game name, e.g. rrps, kuhn_poker, leduc_poker, repeated_leduc")
    parser.add_argument("--episodes", type=positive_int, help="episodes per opponent (default: the game's)")
    parser.add_argument(
        "--seed", type=int,
        help="master seed of the evaluation (default: a fresh secret one, printed so --seed repeats the run)",
    )
    parser.add_argument("--workers", type=positive_int, help="parallel referee processes (default: CPU count)")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of tables")

    add_limit_arguments(parser)
    add_backend_arguments(parser)
    parser.set_defaults(func=run)


def add_backend_arguments(parser: argparse.ArgumentParser) -> None:
    """--backend and --ray-address (also `backend` / `ray_address` in csro.toml)."""
    parser.add_argument(
        "--backend", choices=("local", "ray"),
        help="where matches are played: processes here, or actors on a Ray cluster (default local)",
    )
    parser.add_argument(
        "--ray-address", metavar="ADDR",
        help="the Ray cluster: HOST:PORT, ray://HOST:PORT or auto (default $RAY_ADDRESS, else a Ray started here)",
    )


def whole_number(text: str) -> int:
    """An argparse type: the int `text` names, or a one-line usage error."""
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None


def positive_int(text: str) -> int:
    value = whole_number(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {value}")
    return value


def run(args: argparse.Namespace) -> int:
    from csro_tui.evaluation.exact import exploitability  # start-up time: importing it loads numpy, open_spiel, pyspiel
    # start-up time: importing it loads numpy, pyspiel
    from csro_tui.evaluation.runner import MatchJob, evaluate_matchups

    spec = load_game(args.game)
    try:
        participant = load_participant(spec, args.policy)
    except InvalidPolicy:
        return EXIT_INVALID
    episodes = args.episodes or spec.default_episodes
    opponents = benchmark_participants(spec)
    # A secret master seed unless one is given: policies see only seeds
    # derived from it by a keyed hash (evaluation/sampling.py).
    seed = args.seed if args.seed is not None else new_master_seed()
    jobs = [MatchJob(participant, opponent, episodes, derive(seed, "eval", opponent.name)) for opponent in opponents]
    with job_progress(f"evaluating {one_line(participant.name, 80)}", len(jobs)) as advance, \
            referee_pool(spec, args) as pool:
        results = evaluate_matchups(
            spec, jobs, workers=args.workers, progress=with_workers_note(advance, pool), pool=pool,
            limits=_limits(args),
        )

    failed = next((result for result in results if result.failure is not None), None)
    if failed is not None:
        if args.json:
            print(json.dumps(_report(spec, participant, episodes, seed, results, None, None), indent=2))
        print(f"csro: error: {one_line(failed.failure.summary())} (against {one_line(failed.b)}; "
              f"repeat with --seed {seed})", file=sys.stderr)
        return EXIT_POLICY_FAILED

    metrics = population_metrics({result.b: result.mean for result in results})
    expl = exploitability(spec, participant) if spec.exact else None
    if args.json:
        print(json.dumps(_report(spec, participant, episodes, seed, results, metrics, expl), indent=2))
    else:
        _print_tables(spec, participant, episodes, results, metrics, expl)
        print(f"seed {seed} (repeat this evaluation with --seed {seed})")
    return 0


# ---------------------------------------------------------------- shared helpers


def load_game(name: str) -> "GameSpec":
    from csro_tui.games.registry import get_game  # start-up time: importing it loads numpy, open_spiel, pyspiel

    return get_game(name)


def load_participant(spec: "GameSpec", reference: str) -> "Participant":
    """Resolve a reference; print validation issues and raise InvalidPolicy."""
    participant = resolve_participant(spec, reference)
    if isinstance(participant, CodePolicy):
        issues = validate_source(participant.source)
        if issues:
            print(one_line(f"csro: error: {reference} is not a valid policy ({len(issues)} issue(s)):"), file=sys.stderr)
            for issue in issues[:MAX_ISSUES_SHOWN]:
                print(one_line(f"{reference}:{issue.line}:{issue.col}: {issue.message}"), file=sys.stderr)
            if len(issues) > MAX_ISSUES_SHOWN:
                print(f"... and {len(issues) - MAX_ISSUES_SHOWN} more", file=sys.stderr)
            raise InvalidPolicy(reference)
    return participant


@contextmanager
def referee_pool(spec: "GameSpec", args: argparse.Namespace) -> Iterator:
    """None for the local backend (evaluate_matchups picks its processes), else
    a Ray pool, closed at the end."""
    settings = load_run_config({"backend": args.backend, "ray_address": args.ray_address})
    if settings.backend != "ray" or spec.exact:  # exact games are computed here
        yield None
        return
    from csro_tui.evaluation.ray_backend import RayRefereePool  # start-up time: importing it loads numpy, pyspiel

    pool = RayRefereePool(spec, args.workers, address=settings.ray_address)
    try:
        yield pool
    finally:
        pool.close()


def with_workers_note(advance, pool):
    """The progress callback, noting the Ray workers alive when a Ray pool plays."""
    if pool is None:
        return advance

    def report(done: float, total: int) -> None:
        status = pool.last_status
        advance(done, total, f"{status.workers_alive}/{status.workers} Ray workers" if status else "")

    return report


@contextmanager
def job_progress(description: str, total: int) -> Iterator:
    """Progress on stderr; yields the runner's progress callback.

    In a terminal, a rich bar with elapsed time and time left; when stderr
    is piped or logged, a line every few seconds (done/total, rate, time
    left; see `_output.ProgressLines`). stdout, tables or --json, is never
    touched.
    """

    console = Console(stderr=True)
    if not console.is_terminal:
        lines = ProgressLines(description, total)
        yield lines.update
        return
    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("·"),
        TimeRemainingColumn(),
        TextColumn("left"),
        console=console,
        transient=True,
    ) as progress:
        task = progress.add_task(description, total=total)

        def advance(done: float, _total: int, note: str = "") -> None:
            progress.update(task, completed=done, description=f"{description} · {note}" if note else description)

        yield advance


def isolation_description() -> str:
    """The sandbox's isolation, one line for a footer."""
    from csro_tui.sandbox.sandbox import describe_isolation  # start-up time: importing it loads orjson

    return describe_isolation()


def isolation_name() -> str:
    """"bubblewrap" or "rlimits" (or why neither), for machine-readable output."""
    from csro_tui.sandbox.sandbox import isolation_mode  # start-up time: importing it loads orjson

    try:
        return isolation_mode()
    except ConfigError as error:
        return f"misconfigured: {error}"


def format_payoff(mean: float, stderr: float | None, exact: bool, measurable: bool = True) -> str:
    return number(mean, signed=True, stderr=None if exact else stderr, measurable=exact or measurable)


def metric_stderrs(results) -> dict[str, float | None]:
    """Conservative stderrs of PopReturn, PopExpl and AggScore from sampled results
    (see `evaluation.population_metrics.agg_score_stderr`); None when a result's error could
    not be measured (fewer than two seat-swapped pairs), since each figure uses them all."""
    if not all(result.stderr_measurable for result in results):
        return {"pop_return_stderr": None, "pop_expl_stderr": None, "agg_score_stderr": None}
    means = {result.b: result.mean for result in results}
    errors = {result.b: result.stderr for result in results}
    worst = min(means, key=lambda name: means[name])
    return {
        "pop_return_stderr": sum(errors.values()) / len(errors),
        "pop_expl_stderr": errors[worst],
        "agg_score_stderr": agg_score_stderr(means, errors),
    }


def result_record(result) -> dict:
    """A result for --json: `stderr` null and `stderr_measurable` false where fewer than
    two seat-swapped pairs were played (one pair cannot measure its own noise)."""
    record = result.to_dict()
    record["stderr_measurable"] = result.stderr_measurable
    if not result.stderr_measurable:
        record["stderr"] = None
    return record


# ---------------------------------------------------------------- output


def _report(spec, participant, episodes, seed, results, metrics, expl) -> dict:
    scores = metrics.to_dict() if metrics else None
    if scores is not None and not spec.exact:
        scores.update(metric_stderrs(results))
        scores["stderr_measurable"] = all(result.stderr_measurable for result in results)
    return plain_numbers({
        "game": spec.name,
        "policy": participant.name,
        "exact": bool(spec.exact),
        "episodes": None if spec.exact else episodes,
        "seed": seed,
        "isolation": isolation_name(),
        "isolation_layers": isolation_description(),
        "results": [result_record(result) for result in results],
        "timing": _timing(results),
        "metrics": scores,
        "exploitability": expl,
    })


def _limits(args):
    """The sandbox limits the flags give (None: the defaults)."""
    from csro_tui.sandbox.sandbox import limits_from  # start-up time: importing it loads orjson

    return limits_from(given_limits(args))


def _timing(results) -> dict | None:
    return timing_of(results)


def _print_tables(spec, participant, episodes, results, metrics, expl) -> None:
    console = stdout_console()
    how = "exact" if spec.exact else f"{counted(episodes, 'episode')} per opponent, seats swapped"
    table = Table(title=plain(f"{one_line(participant.name, 80)} vs the {spec.title} benchmark ({how})"))
    table.add_column("opponent")
    table.add_column("mean return" if spec.exact else "mean ± stderr", justify="right")
    for result in results:
        table.add_row(plain(one_line(result.b, 80)),
                      format_payoff(result.mean, result.stderr, result.exact, result.stderr_measurable))
    console.print(table)
    measurable = all(result.stderr_measurable for result in results)

    summary = Table(show_header=False)
    summary.add_column("metric")
    summary.add_column("value", justify="right")
    errors = {} if spec.exact else metric_stderrs(results)
    for label, key in (("PopReturn", "pop_return"), ("PopExpl", "pop_expl"), ("AggScore", "agg_score")):
        summary.add_row(label, format_payoff(getattr(metrics, key), errors.get(f"{key}_stderr"), spec.exact, measurable))
    if expl is not None:
        summary.add_row("exploitability", fixed(expl))
    console.print(summary)
    if not measurable:
        console.print(plain(NOT_MEASURABLE_NOTE))
    timing = describe_timing(_timing(results))
    if timing:  # "slow: ..." when act is far slower than the contract expects
        console.print(plain(f"timing: {timing}", style="bold yellow" if "slow: " in timing else "dim"))
    printed = describe_printed(_timing(results))
    if printed:
        console.print(plain(printed, style="bold yellow"))
    console.print(plain(isolation_description(), style="dim"))
