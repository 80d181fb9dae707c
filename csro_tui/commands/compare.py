"""`csro compare`: sessions side by side, per configuration, across repeats.

Sessions are named (`csro compare ID ID ...`) or a sweep's (`--sweep NAME`);
they are grouped by configuration (`experiments.compare`) and each figure is
the mean across repeats with a 95% confidence interval.  The table and a
plot of the headline figure per iteration are printed; `--out DIR` also
writes compare.csv, curves.csv, compare.json and compare.svg.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "compare",
        help="compare sessions per configuration: figures across repeats with confidence intervals",
        description=(
            "Group sessions by configuration (their recorded settings, seed and where they ran aside) and give, "
            "per configuration, the final and best headline figure (exploitability, or benchmark AggScore) as the "
            "mean across repeats with a 95%% t-interval (one session: its own ± stderr where sampled), "
            "iterations and running time (to --target, if given), population size, proposals accepted and "
            "rejected, and LLM calls, tokens and cost; then the figure per iteration, one line per configuration."
        ),
    )
    add = parser.add_argument
    add("sessions", nargs="*", metavar="SESSION", help="session ids (or directories)")
    add("--sweep", metavar="NAME", help="every session of this sweep (csro sweep's name = ...)")
    add("--target", type=float, metavar="VALUE",
        help="report iterations and running time until the figure first reaches VALUE "
             "(exploitability at or below, AggScore at or above)")
    add("--out", metavar="DIR", help="also write compare.csv, curves.csv, compare.json and compare.svg into DIR")
    add("--session-dir", "--sessions-dir", dest="sessions_dir",
        help="where the sessions are (default ./sessions or $CSRO_SESSIONS_DIR)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from csro_tui.commands._output import pipe_aware_console  # start-up time: loaded only when this runs
    from csro_tui.errors import ConfigError  # start-up time: loaded only when this runs
    from csro_tui.experiments.compare import compare_sessions, load_summaries  # start-up time: loaded only when this runs
    from csro_tui.sessions.store import SessionStore, default_sessions_root  # start-up time: loaded only when this runs
    from csro_tui.text import one_line  # start-up time: importing it loads rich

    store = SessionStore(args.sessions_dir or default_sessions_root())
    references = list(args.sessions)
    labels: dict[str, str] = {}
    if args.sweep:
        from csro_tui.experiments.manifest import find_manifest, session_status  # start-up time: loaded only when this runs

        manifest = find_manifest(store.root, args.sweep)
        waiting = []
        for cell in manifest["cells"]:
            if session_status(store.root, cell["session"]).kind == "new":
                waiting.append(cell["session"])
                continue
            references.append(cell["session"])
            labels[cell["session"]] = cell["label"]
        if waiting:
            print(one_line(f"not started yet, left out: {', '.join(waiting)}"), flush=True)
    if not references:
        raise ConfigError("name sessions to compare (csro compare ID ID ...) or a sweep (--sweep NAME)")
    summaries = load_summaries(store, references)
    rows = compare_sessions(summaries, target=args.target, labels=labels or None)
    console = pipe_aware_console()
    print_comparison(console, rows, args.target)
    if args.out:
        for path in write_comparison(rows, Path(args.out), args.target):
            print(f"wrote {path}", flush=True)
    return 0


def print_comparison(console: Any, rows: list[Any], target: float | None) -> None:
    from csro_tui.commands._output import print_table  # start-up time: loaded only when this runs
    from csro_tui.experiments.compare import charts_by_metric, series_letter, table_rows  # start-up time: loaded only when this runs
    from csro_tui.sessions.plot import text_chart  # start-up time: loaded only when this runs
    from csro_tui.text import one_line  # start-up time: importing it loads rich

    columns, cells = table_rows(rows, target)
    print_table(console, "configurations (mean ± 95% CI across repeats)", columns, cells, whole=("configuration",),
                drop_order=("cost", "tokens", "LLM calls", "accepted/rejected", "population", "time", "figure"))
    charts = charts_by_metric(rows)
    if len(charts) > 1:  # sessions of different games: each figure on its own axis
        print(f"\n{len(charts)} figures ({', '.join(m for m, _ in charts)}): one chart each, never on one axis",
              flush=True)
    for metric, indexed in charts:
        letters = [series_letter(index) for index, _ in indexed]  # the table's letters
        lines = text_chart([(label, xs, ys) for _, (label, xs, ys, _) in indexed],
                           width=max(20, min(console.width - 16, 72)), marks=letters)
        if lines:
            print(f"\n{one_line(metric)} per iteration (mean across repeats):", flush=True)
            for line in lines:
                print(line, flush=True)
            for letter, (_, (label, *_rest)) in zip(letters, indexed):
                print(f"  {letter}  {one_line(label)}", flush=True)


def write_comparison(rows: list[Any], out: Path, target: float | None) -> list[Path]:
    import json

    from csro_tui.errors import SessionError  # start-up time: loaded only when this runs
    from csro_tui.files import write_csv  # start-up time: loaded only when this runs
    from csro_tui.experiments.compare import charts_by_metric  # start-up time: loaded only when this runs
    from csro_tui.sessions.plot import bands_chart_svg  # start-up time: loaded only when this runs

    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise SessionError(f"{out}: cannot create the output directory ({error.strerror})") from None
    data = [row.to_dict() for row in rows]
    table = out / "compare.csv"
    header = ["configuration", "n", "figure", "final_mean", "final_ci95", "best_mean", "best_ci95",
              "iterations_mean", "seconds_mean", "seconds_ci95", "iterations_to_target_mean",
              "seconds_to_target_mean", "reached_target", "population_mean", "accepted", "rejected",
              "llm_calls", "llm_tokens", "llm_cost_usd", "sessions"]
    rows_out: list[list[Any]] = [header]
    for row in data:
        rows_out.append([row["configuration"], len(row["sessions"]), row["metric"], row["final"]["mean"],
                         row["final"]["ci95_half_width"], row["best"]["mean"], row["best"]["ci95_half_width"],
                         row["iterations"]["mean"], row["wall_seconds"]["mean"],
                         row["wall_seconds"]["ci95_half_width"],
                         (row["iterations_to_target"] or {}).get("mean"), (row["seconds_to_target"] or {}).get("mean"),
                         row["reached_target"] if target is not None else None, row["population"]["mean"],
                         row["accepted"], row["rejected"], row["llm_calls"], row["llm_tokens"], row["llm_cost_usd"],
                         " ".join(row["sessions"])])
    write_csv(table, rows_out)  # configuration labels come from a sweep file: cells no spreadsheet runs
    curves = out / "curves.csv"
    write_csv(curves, [["configuration", "iteration", "mean", "ci95_half_width", "n"],
                       *([row["configuration"], point["iteration"], point["mean"], point["ci95_half_width"], point["n"]]
                         for row in data for point in row["curve"])])
    document = out / "compare.json"
    per_session = [{"session": s.session_id, "configuration": row.label, "figure": s.metric, "final": s.final,
                    "final_stderr": s.final_stderr, "best": s.best, "iterations": s.completed_iterations,
                    "seconds": s.wall_seconds, "population": s.population, "accepted": s.accepted,
                    "rejected": s.rejected, "llm_calls": s.llm.calls, "llm_tokens": s.llm.tokens,
                    "llm_cost_usd": s.llm.cost_usd, "series": dict(zip(s.iterations, s.values))}
                   for row in rows for s in row.sessions]
    document.write_text(json.dumps({"target": target, "confidence": 0.95, "configurations": data,
                                    "sessions": per_session}, indent=2) + "\n", encoding="utf-8")
    written = [table, curves, document]
    charts = charts_by_metric(rows)
    for metric, indexed in charts:  # one chart per figure: sessions of different games never share an axis
        series = [s for _, s in indexed if s[1]]
        if not series:
            continue
        plot = out / ("compare.svg" if len(charts) == 1 else f"compare-{metric.replace(' ', '_')}.svg")
        plot.write_text(bands_chart_svg(f"{metric} per iteration (mean, 95% CI band across repeats)", series,
                                        y_label=metric, floor=0.0 if metric == "exploitability" else None),
                        encoding="utf-8")
        written.append(plot)
    return written
