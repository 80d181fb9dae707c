"""`csro replay SESSION [--step K] [--verify]`: a recorded session's state.

The state after event K (default: the last) is rebuilt by folding the log,
without evaluating anything or calling an oracle: the population, the
payoff matrix, the meta-strategy and the metrics of every iteration.
`--verify` re-runs the recorded evaluations from their seeds and the
meta-solver, and reports whether they reproduce (exit 1 if not).
"""

from __future__ import annotations

import argparse
import os

from csro_tui.commands.sessions import add_sessions_dir_argument, sessions_store
from csro_tui.config import SANDBOX_LIMIT_FIELDS
from csro_tui.numbers import counted, number
from csro_tui.sessions.store import EVENTS_FILE

EXIT_NOT_REPRODUCED = 1
MATRIX_MAX_COLUMNS = 16  # wider matrices are summarised; `csro export` writes them whole


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "replay",
        help="show a recorded session's state at any step; optionally verify it",
        description="Rebuild a session's state after event K from its log (no evaluation, no LLM) and "
        "print its population, payoff matrix, meta-strategy and metrics. --verify re-runs the recorded "
        "evaluations (same seeds) and meta-solves and reports whether they reproduce.",
    )
    parser.add_argument("session", metavar="SESSION", help="session id (under the sessions directory) or path")
    parser.add_argument("--step", type=int, metavar="K", help="the state after event K (default: the last)")
    parser.add_argument("--verify", action="store_true", help="re-run the recorded evaluations and meta-solves")
    parser.add_argument("--diversity", action="store_true",
                        help="profile the members with no recorded behaviour profile (runs them in the sandbox) "
                        "for the behaviour diversity; without it only recorded profiles are shown")
    add_sessions_dir_argument(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from csro_tui.sessions.state import fold  # start-up time: importing it loads numpy

    from csro_tui.commands._output import stdout_console  # start-up time: importing it loads rich

    from csro_tui.text import clean_text  # start-up time: importing it loads rich

    console = stdout_console()
    store = sessions_store(args)
    log = store.read(args.session)
    for warning in log.warnings:
        console.print(f"[yellow]warning:[/] {clean_text(warning, markup=True)}", highlight=False)
    state = fold(log.events)
    if args.step is not None:
        state = state.at(args.step)
    show_state(console, state, last_step=log.events[-1].seq,
               events_file=store.resolve(args.session).resolve() / EVENTS_FILE)
    show_diversity(console, state, compute=args.diversity)
    if not args.verify:
        return 0
    return verify_state(console, state)


def _number(value: float | None) -> str:
    return number(value)


def whole_number_table(title: str, columns, rows, *, numeric=()):
    """A table whose `numeric` columns are right-aligned and never cut or folded; text columns fold."""
    from rich.table import Table  # start-up time: importing it loads rich

    from csro_tui.text import plain  # start-up time: importing it loads rich

    table = Table(title=title, title_justify="left")
    for index, column in enumerate(columns):
        if column in numeric:
            width = max([len(column), *(len(str(row[index])) for row in rows)])
            table.add_column(column, justify="right", no_wrap=True, min_width=width)
        else:
            table.add_column(column, justify="left", overflow="fold")
    for row in rows:
        table.add_row(*(plain(cell) for cell in row))
    return table


def show_seat_matrix(console, state) -> None:
    """Two populations: the seat-0 x seat-1 matrix (seat 0's member's return)."""
    rows_ids = [m.id for m in state.seat_members(0)]
    cols_ids = [m.id for m in state.seat_members(1)]
    if rows_ids and cols_ids:
        show_matrix(console, "payoff matrix (seat-0 member's return against the seat-1 member)", state.seat_matrix(),
                    rows_ids, cols_ids, corner="seat 0 \\ seat 1")


def show_matrix(console, title: str, matrix, rows_ids: list[str], cols_ids: list[str], corner: str = "") -> None:
    """As many columns as fit whole (a payoff is never cut to "-0.33…"), at most MATRIX_MAX_COLUMNS."""
    rows = [[policy_id, *(_number(float(matrix[i, j])) for j in range(len(cols_ids)))] for i, policy_id in enumerate(rows_ids)]
    widths = [max(len(str(row[k])) for row in rows + [[corner, *cols_ids]]) + 3 for k in range(len(cols_ids) + 1)]
    fitting = 0
    while fitting < min(len(cols_ids), MATRIX_MAX_COLUMNS) and sum(widths[:fitting + 2]) + 1 <= console.width:
        fitting += 1
    fitting = max(fitting, 1)
    shown = cols_ids[:fitting]
    console.print(whole_number_table(title, [corner, *shown], [row[:fitting + 1] for row in rows], numeric=shown))
    if len(cols_ids) > len(shown):
        console.print(f"({counted(len(cols_ids) - len(shown), 'more column')} at this width; "
                      "`csro export` writes the whole matrix)", highlight=False)


def show_state(console, state, *, last_step: int, events_file=None) -> None:
    from rich.table import Table  # start-up time: importing it loads rich

    from csro_tui.sessions.summary import iteration_rows, member_rows  # start-up time: importing it loads numpy
    from csro_tui.text import clean_text, plain  # start-up time: importing it loads rich

    # Every name, id and message below comes from the log: untrusted text (issue 35).
    started = state.started
    console.print(
        f"[bold]{clean_text(started.session_id, markup=True)}[/] · "
        + clean_text(f"{started.game} · oracle {started.oracle} · solver {started.solver} · "
                     f"step {state.step} of {last_step}", markup=True),
        highlight=False,
    )
    members = member_rows(state)
    two = state.metagame.populations == 2
    with_agg = any(row.agg_score is not None for row in members)  # games without benchmark bots have none
    columns = ("id", "name", *(("seat",) if two else ()), "origin", "parent", "iter", "weight", "vs meta") \
        + (("AggScore",) if with_agg else ())
    cells = [[row.id, row.name, *((f"seat {row.seat}",) if two else ()), row.origin_text, row.parent or "-",
              str(row.iteration), f"{row.weight:.4f}",
              _number(row.payoff_vs_meta), *((_number(row.agg_score),) if with_agg else ())] for row in members]
    title = "populations (one per seat; weight: in its seat's meta-strategy)" if two else "population"
    console.print(whole_number_table(title, columns, cells, numeric=("iter", "weight", "vs meta", "AggScore")))

    ids = state.ids
    if two:
        show_seat_matrix(console, state)
    elif ids:
        show_matrix(console, "payoff matrix (row vs column, seats averaged)", state.matrix(ids), ids, ids)

    weights = sorted(state.meta_strategy.items(), key=lambda kv: -kv[1])
    mixture = ", ".join(f"{pid} {w:.4f}" for pid, w in weights if w > 1e-9) or "-"
    if two:
        from csro_tui.sessions.summary import seat_mixtures_text  # start-up time: importing it loads numpy

        mixture = seat_mixtures_text(state, lambda member: member.id)
    solver = f" ({state.meta.solver}, NashConv {_number(state.meta.nash_conv)})" if state.meta else ""
    value = f"; seat 0's value {_number(state.meta.value)}" if two and state.meta else ""
    console.print(plain(f"meta-strategy{solver}: {mixture}{value}"), highlight=False)

    from csro_tui.sessions.summary import informative_nash_conv, rejections  # start-up time: importing it loads numpy
    from csro_tui.text import one_line, plain  # start-up time: importing it loads rich

    rows = iteration_rows(state)
    show_nash_conv = informative_nash_conv(rows)
    columns = ["iter", "proposal", "decision", "pop", "gain", "metric"] + (["meta-NashConv"] if show_nash_conv else [])
    cells = [[str(row.iteration), row.proposal or "-", row.decision or "-", str(row.population_size),
              number(row.gain, signed=True), row.headline_text or "-",
              *([_number(row.meta_nash_conv)] if show_nash_conv else [])] for row in rows]
    console.print(whole_number_table("iterations (gain: the new policy's payoff against the previous meta-strategy)",
                                     columns, cells, numeric=("iter", "pop", "gain", "metric", "meta-NashConv")))
    rejected = rejections(state)
    if rejected:
        table = Table(title=f"rejections ({len(rejected)})", title_justify="left")
        for column in ("event", "iter", "proposal", "by", "why"):
            table.add_column(column, justify="right" if column in ("event", "iter") else "left",
                             overflow="fold")
        for rejection in rejected:
            table.add_row(str(rejection.event), str(rejection.iteration), plain(rejection.name),
                          plain(rejection.decided_by), plain(rejection.why))
        console.print(table)
        console.print(plain(f"full text of each reason: that event in {events_file or 'events.jsonl'}"), soft_wrap=True)
    latest = state.latest_metrics
    if latest is not None and latest.benchmark:
        meta = latest.benchmark["meta"]
        best = latest.benchmark["best_member"]
        console.print(plain(
            f"benchmark: meta-strategy PopReturn {_number(meta['pop_return'])} PopExpl {_number(meta['pop_expl'])} "
            f"AggScore {number(meta['agg_score'], stderr=meta.get('agg_score_stderr'))}; best member {best['id']} "
            f"AggScore {number(best['agg_score'], stderr=best.get('agg_score_stderr'))}"),
            highlight=False,
        )
    if state.games:
        from csro_tui.sessions.summary import game_records  # start-up time: importing it loads numpy

        played = Table(title=f"games played by hand ({len(state.games)})", title_justify="left")
        for column in ("opponent", "games", "won", "lost", "tied", "your total"):
            played.add_column(column, justify="left" if column == "opponent" else "right")
        for record in game_records(state):
            played.add_row(plain(record.opponent), str(record.games), str(record.wins), str(record.losses), str(record.ties),
                           _number(record.total))
        console.print(played)
    if state.open_iteration is not None and state.open_iteration.number > 0:
        number_ = state.open_iteration.number
        if state.step < last_step:
            console.print(f"iteration {number_} is in progress at step {state.step} (the log goes on to step {last_step})")
        elif state.closed is not None:
            console.print(plain(f"iteration {number_} is unfinished: the run ended during it "
                                f"({state.closed.reason}: {one_line(state.closed.message, 200)})"))
        else:
            console.print(plain(f"iteration {number_} is unfinished (the run stopped during it; "
                                f"csro run --resume {state.started.session_id} continues it)"), highlight=False)


def show_diversity(console, state, *, compute: bool) -> None:
    """The population's behaviour diversity (issue 22): recorded profiles, or with
    `compute` every member profiled (sandboxed) where none was recorded."""
    if len(state.population) < 2:
        return
    if state.metagame.populations == 2:  # each seat's population apart, compared in its own states
        import copy

        for seat in (0, 1):
            view = copy.copy(state)
            view.population = state.seat_members(seat)
            console.print(f"seat {seat}'s population", highlight=False)
            _show_diversity(console, view, compute=compute, seat=seat)
        return
    _show_diversity(console, state, compute=compute)


def _show_diversity(console, state, *, compute: bool, seat: int | None = None) -> None:
    # imported when used, not at the top: keeps csro's start-up fast
    from csro_tui.profiles.session import population_diversity, recorded_diversity

    if len(state.population) < 2:
        return
    if compute:
        # imported when used, not at the top: keeps csro's start-up fast
        # imported when used, not at the top: keeps csro's start-up fast
        import sys

        # imported when used, not at the top: keeps csro's start-up fast
        from csro_tui.games.registry import get_game

        missing = [m.id for m in state.population if m.id not in state.profiles]
        if missing:
            print(f"profiling {len(missing)} member(s) in the sandbox…", file=sys.stderr, flush=True)
        diversity = population_diversity(get_game(state.started.game), state, seat=seat)
    else:
        diversity = recorded_diversity(state, seat=seat)
    if diversity is None:
        console.print("behaviour diversity: fewer than two members have a recorded profile "
                      "(--diversity profiles them)", highlight=False)
        return
    shown = diversity.ids[:MATRIX_MAX_COLUMNS]
    rows = [[policy_id, *(f"{diversity.distances[i, j]:.2f}" for j in range(len(shown)))]
            for i, policy_id in enumerate(shown)]
    console.print(whole_number_table("behaviour distance (0: the same behaviour; ordered so clusters show)",
                                     ["", *shown], rows, numeric=shown))
    from csro_tui.text import plain  # start-up time: importing it loads rich

    for line in diversity.lines():
        console.print(plain(line), highlight=False)
    missing = len(state.population) - len(diversity.ids)
    if missing:
        console.print(f"{missing} member(s) have no recorded profile (--diversity profiles them)", highlight=False)


def verify_state(console, state) -> int:
    from csro_tui.engine.evaluator import GameEvaluator  # start-up time: importing it loads numpy
    from csro_tui.engine.setup import recorded_config  # start-up time: importing it loads numpy
    from csro_tui.games.registry import get_game  # start-up time: importing it loads numpy, open_spiel, pyspiel
    from csro_tui.meta.solvers import solve  # start-up time: importing it loads numpy, scipy
    from csro_tui.engine.verify import verify  # start-up time: importing it loads numpy

    from csro_tui.evaluation import table_cache  # start-up time: importing it loads numpy
    from csro_tui.text import clean_text  # start-up time: importing it loads rich

    config = recorded_config(state)
    spec = get_game(config.game)
    # A verification asks the policies again: no exact table from the disk cache.
    cache_setting = os.environ.get(table_cache.CACHE_DIR_ENV_VAR)
    os.environ[table_cache.CACHE_DIR_ENV_VAR] = "off"
    from csro_tui.sandbox.sandbox import limits_from  # start-up time: importing it loads orjson, rich

    # The recorded sandbox limits (a budget decides whether a policy fails).
    limits = limits_from({name: getattr(config, name, None) for name in SANDBOX_LIMIT_FIELDS})
    evaluator = GameEvaluator(spec, workers=config.workers, limits=limits)
    try:
        result = verify(state, spec=spec, evaluator=evaluator, meta_solve=solve,
                        progress=lambda message: console.print(f"[dim]{clean_text(message, markup=True)}[/]",
                                                               highlight=False))
    finally:
        evaluator.close()
        if cache_setting is None:
            os.environ.pop(table_cache.CACHE_DIR_ENV_VAR, None)
        else:
            os.environ[table_cache.CACHE_DIR_ENV_VAR] = cache_setting
    for check in result.failures:
        console.print(
            "[red]differs[/]: " + clean_text(f"{check.what}: recorded {_number(check.recorded)}, now "
                                             f"{_number(check.recomputed)}" + (f" ({check.note})" if check.note else ""),
                                             markup=True),
            highlight=False,
        )
    if result.ok:
        console.print(f"[green]reproduced[/]: all {len(result.checks)} recorded evaluations and meta-solves")
        return 0
    console.print(f"[red]not reproduced[/]: {len(result.failures)} of {len(result.checks)} checks differ")
    return EXIT_NOT_REPRODUCED
