"""`csro sweep FILE.toml`: every configuration of a grid, each repeated, as ordinary sessions at once.

The file is parsed and checked before anything runs (`experiments.sweep_file`);
the sessions run concurrently in local worker processes or as Ray tasks
(`experiments.scheduler`), each an ordinary session under the sessions
directory (same events, replay and TUI), listed in the sweep's manifest
(`experiments.manifest`).  Running the same file again starts only what is
missing and resumes what was stopped or crashed.
"""

from __future__ import annotations

import argparse
import signal
import sys
from typing import Any

from csro_tui.commands.eval import whole_number

EXIT_FAILED = 1
EXIT_STOPPED = 130


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "sweep",
        help="run a grid of sessions at once (locally or on a Ray cluster)",
        description=(
            "Run every configuration of the sweep file's [grid], each repeated (repeats = N, or seeds = [...]), "
            "as its own ordinary session, several at once. [options] takes csro.toml's keys, [oracle_options] and "
            "[llm] as in csro.toml. The sweep's manifest is kept in SESSIONS_DIR/sweeps/NAME/. Running the same "
            "file again starts only what is missing and resumes what was stopped or crashed. Ctrl-C stops every "
            "session after its current step, resumable."
        ),
    )
    add = parser.add_argument
    add("file", metavar="FILE.toml", help="the sweep file")
    add("--workers", type=_positive,
        help="sessions at once (default: CPUs / each session's evaluation processes; with --backend ray: "
             "every session is submitted and Ray queues what the cluster has no room for)")
    add("--backend", choices=("local", "ray"), default="local",
        help="local (worker processes on this machine, the default) or ray: each session a Ray task asking for "
             "the CPUs its evaluation uses ([options] workers, default 1), evaluating on the node Ray gives it; "
             "the sessions directory must be on storage every node mounts at the same path")
    add("--ray-address", default="", metavar="ADDR",
        help="the Ray cluster (HOST:PORT, auto or ray://...; default $RAY_ADDRESS, else a Ray started here)")
    add("--session-dir", "--sessions-dir", dest="sessions_dir",
        help="where the sessions are recorded (default ./sessions or $CSRO_SESSIONS_DIR)")
    add("--config", help="config file beneath the sweep's settings (TOML; default ./csro.toml or $CSRO_CONFIG)")
    add("--dry-run", action="store_true",
        help="check the file and list its sessions, each new, done, stopped or failed; run nothing")
    parser.set_defaults(func=run)


def _positive(text: str) -> int:
    value = whole_number(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {value}")
    return value


def run(args: argparse.Namespace) -> int:
    from csro_tui.commands._output import pipe_aware_console  # start-up time: loaded only when this runs
    from csro_tui.experiments.manifest import session_status, sweep_dir  # start-up time: loaded only when this runs
    from csro_tui.experiments.scheduler import run_sweep  # start-up time: loaded only when this runs
    from csro_tui.experiments.sweep_file import read_sweep  # start-up time: loaded only when this runs
    from csro_tui.sessions.store import default_sessions_root  # start-up time: loaded only when this runs
    from csro_tui.text import one_line  # start-up time: importing it loads rich

    sweep = read_sweep(args.file, config_file=args.config)
    sessions_dir = args.sessions_dir or str(default_sessions_root())
    console = pipe_aware_console()
    statuses = {cell.session_id: session_status(sessions_dir, cell.session_id) for cell in sweep.cells}
    todo = {kind: sum(1 for s in statuses.values() if s.kind == kind) for kind in ("new", "stopped", "failed", "done")}
    from csro_tui.numbers import counted  # start-up time: loaded only when this runs

    # The sweep file's names and labels, and the reasons runs end with, are untrusted text (issue 35).
    print(one_line(f"sweep {sweep.name}: {counted(sweep.configurations, 'configuration')} × "
                   f"{counted(sweep.repeats, 'repeat')} = {counted(len(sweep.cells), 'session')} ({todo['done']} done, "
                   f"{todo['stopped'] + todo['failed']} to resume, {todo['new']} to start) · "
                   f"{sweep_dir(sessions_dir, sweep.name)}"), flush=True)
    if args.dry_run:
        for cell in sweep.cells:
            status = statuses[cell.session_id]
            print("  " + one_line(f"{cell.session_id}  {cell.label} repeat {cell.repeat}  {status.kind}"), flush=True)
        return 0

    def progress(p: Any) -> None:
        print(one_line(f"csro sweep: {p.line()}"), file=sys.stderr, flush=True)

    def finished(run: Any) -> None:
        why = f": {run.reason}" if run.state != "done" and run.reason else ""
        print(one_line(f"{run.state}: {run.cell.session_id}{why}"), flush=True)

    result = run_sweep(sweep, sessions_dir, workers=args.workers, backend=args.backend,
                       ray_address=args.ray_address, on_progress=progress, on_finished=finished)
    if result.interrupted:
        # Every session has stopped; another Ctrl-C (people press it twice) must not
        # cut the summary and the resume hint that follow.
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    _summary(console, result, sessions_dir)
    if result.interrupted:
        print(one_line(f"stopped: every session is resumable; run `csro sweep {args.file}"
                       + (f" --sessions-dir {args.sessions_dir}" if args.sessions_dir else "") + "` again to finish"),
              flush=True)
        return EXIT_STOPPED
    return EXIT_FAILED if result.count("failed") else 0


def _summary(console: Any, result: Any, sessions_dir: str) -> None:
    from csro_tui.commands._output import duration, print_table  # start-up time: loaded only when this runs
    from csro_tui.experiments.compare import session_summary  # start-up time: loaded only when this runs
    from csro_tui.numbers import number  # start-up time: loaded only when this runs
    from csro_tui.sessions.state import fold  # start-up time: loaded only when this runs
    from csro_tui.sessions.store import SessionStore  # start-up time: loaded only when this runs

    store = SessionStore(sessions_dir)
    rows = []
    calls = tokens = 0
    for run in result.runs:
        final = iterations = llm = spent = "-"
        try:
            summary = session_summary(fold(store.read(run.cell.session_id).events))
            final = f"{summary.metric} {number(summary.final, stderr=summary.final_stderr)}" if summary.final is not None else "-"
            iterations = str(summary.completed_iterations)
            calls, tokens = calls + summary.llm.calls, tokens + summary.llm.tokens
            llm = f"{summary.llm.calls} / {summary.llm.tokens}" if summary.llm.calls else "-"
            spent = duration(summary.wall_seconds)  # running time from its log (not time queued)
        except Exception:  # noqa: BLE001 - a session that never started has no log
            pass
        rows.append([run.cell.session_id, run.cell.label, str(run.cell.repeat), run.state, iterations, final, llm,
                     spent, run.reason if run.state != "done" else ""])
    print_table(console, "sweep sessions", [("session", "left"), ("configuration", "left"), ("repeat", "right"),
                                            ("state", "left"), ("iterations", "right"), ("final", "right"),
                                            ("LLM calls / tokens", "right"), ("time", "right"), ("reason", "left")],
                rows, whole=("session",), drop_order=("LLM calls / tokens", "time", "configuration"))
    counts = ", ".join(f"{result.count(s)} {s}" for s in ("done", "failed", "stopped", "queued") if result.count(s))
    print(f"{counts} · LLM calls {calls}, tokens {tokens}", flush=True)
