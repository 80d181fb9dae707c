"""`csro run`: a headless CSRO run (or `--resume` of a recorded one).

Settings come from defaults < user config < config file < environment < these flags (see
`csro_tui.config`).  The run is recorded as a session; the display shows
one row per finished iteration (live in a terminal, one printed line per
iteration otherwise) and a summary at the end.  Ctrl-C (or SIGTERM) asks
the engine to stop after its current step, so nothing completed is lost;
`--resume SESSION` continues it.  A second Ctrl-C aborts at once.
An LLM key goes only to a base URL named here, in the environment or in the
user's own config; `--trust-base-url` confirms one a file or the resumed
session names (`oracles.llm.keys`).  Sandbox limits raised above their
defaults are said before the run starts.
"""

from __future__ import annotations

import argparse
import json
import signal
from contextlib import contextmanager
from typing import Any, Iterator

from rich.console import Group
from rich.live import Live
from rich.table import Table
from rich.text import Text

from csro_tui.commands._limits import add_limit_arguments
from csro_tui.commands._output import RunClock, Ticker, pipe_aware_console
from csro_tui.commands.eval import add_backend_arguments, whole_number
from csro_tui.config import SANDBOX_LIMIT_FIELDS, load_run_config
from csro_tui.errors import ConfigError
from csro_tui.numbers import counted, number, sparkline
from csro_tui.oracles.llm.keys import KeyTrust
from csro_tui.sandbox.limits import loosened_limits, loosened_text
from csro_tui.sessions.store import SessionStore
from csro_tui.text import clean_text, one_line, plain

EXIT_STOPPED = 130


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "run",
        help="run CSRO iterations headless, recorded as a session",
        description=(
            "Run CSRO: each iteration the oracle proposes a policy as code, the gate validates "
            "and previews it, the reviewer (auto or a script) decides, and accepted code joins "
            "the population and the meta-game. Recorded under the sessions directory."
        ),
    )
    add = parser.add_argument
    add("--game", help="game name, e.g. kuhn_poker, leduc_poker, rrps, repeated_leduc (default kuhn_poker)")
    add("--oracle", help="oracle name: best-response, seed, human, llm, ... (default best-response)")
    add("--iterations", type=_count, help="oracle iterations in total (default 10)")
    add("--solver", help="meta-solver: nash, prd, rm, uniform, alpharank (default nash)")
    add("--review", help="auto (accept only proposals that beat the meta-strategy and repeat nothing; "
        "auto:THRESHOLD for another threshold than 0), valid (accept every valid proposal) "
        "or script:FILE (decisions from a JSON/JSONL file)")
    add("--seed", type=int, help="session seed; every evaluation seed derives from it (default: a fresh secret one, recorded in the session)")
    add("--episodes", type=_positive, help="episodes per payoff entry in sampled games (default: the game's)")
    add("--smoke-episodes", type=_positive, help="episodes of the validation match against each member (default 2)")
    add("--preview-episodes", type=_positive, help="episodes of the preview against each member in sampled games (default 10, five seat-swapped pairs)")
    add("--benchmark", choices=("auto", "on", "off"), help="score against the game's benchmark bots (default auto: sampled games)")
    add("--benchmark-episodes", type=_positive,
        help="episodes per benchmark bot (default 20, as csro eval plays; fewer is faster and noisier)")
    add("--seeds", dest="seed_policies", type=_seed_names, help="initial population: comma-separated seed policy names (default: the game's first)")
    add("--max-attempts", type=_positive, help="oracle attempts per iteration before moving on (default 3)")
    add("--populations", type=int, choices=(1, 2),
        help="1: one population whose members play both seats (default); 2: one population per seat, "
        "as OpenSpiel's psro_v2 (a proposal per seat each iteration)")
    add("--workers", type=_positive, help="evaluation processes (default: CPU count)")
    add_backend_arguments(parser)
    add_limit_arguments(parser)
    add("--model", help="LLM model, for llm oracles")
    add("--base-url", help="LLM API base URL, for llm oracles")
    # LLM oracle settings; they go into the oracle's options (see LLM_OPTION_FLAGS).
    add("--api-key-env", metavar="VAR", help="environment variable holding the API key (default OPENAI_API_KEY)")
    add("--trust-base-url", action="store_true",
        help="send the API key to the base URL (and read it from the api_key_env) that csro.toml, --config "
             "or the resumed session names; without it a key goes only where you named: --base-url, "
             "OPENAI_BASE_URL, or ~/.config/csro/config.toml")
    add("--temperature", type=float, help="LLM sampling temperature (default 0.7)")
    add("--max-tokens", type=_positive, help="LLM reply length limit in tokens (default 4096)")
    add("--llm-budget", type=_positive, metavar="N",
        help="LLM calls per proposal (llm: 3 per candidate, llm-refine: 10, llm-evolve: 16; evolve: mutations, 24)")
    add("--candidates", type=_positive, metavar="K", help="llm oracle: candidates per iteration, best by preview (default 1)")
    add("--llm", metavar="BACKEND",
        help="live (default) or recorded:SESSION to replay a session's recorded LLM calls without a server")
    add("--oracle-option", action="append", default=[], metavar="KEY=VALUE",
        help="an option for the oracle (VALUE read as JSON if it parses); repeatable")
    add("--session-dir", "--sessions-dir", dest="sessions_dir",
        help="where sessions are recorded (default ./sessions or $CSRO_SESSIONS_DIR)")
    add("--config", help="config file (TOML; default ./csro.toml or $CSRO_CONFIG)")
    add("--resume", metavar="SESSION", help="continue a stopped or crashed session (id or path)")
    parser.set_defaults(func=run)


def _seed_names(text: str) -> str:
    """Comma-separated seed policy names, none of them empty (`--seeds ''` or `--seeds ,,` would silently mean the default)."""
    names = [part.strip() for part in text.split(",")]
    if not any(names):
        raise argparse.ArgumentTypeError(f"no seed policy named in {text!r} (comma-separated names; `csro games GAME` lists them)")
    if not all(names):
        raise argparse.ArgumentTypeError(f"an empty name in {text!r} (comma-separated names, no empty ones)")
    return text


def _positive(text: str) -> int:
    value = _count(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {value}")
    return value


def _count(text: str) -> int:
    value = whole_number(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must not be negative: {value}")
    return value


FLAG_FIELDS = (
    "game", "oracle", "iterations", "solver", "review", "seed", "episodes", "smoke_episodes",
    "preview_episodes", "benchmark", "benchmark_episodes", "seed_policies", "max_attempts", "populations",
    "workers", "backend", "ray_address", "model", "base_url", "sessions_dir", *SANDBOX_LIMIT_FIELDS,
)


# Flags that are oracle options: argparse dest -> option key.
LLM_OPTION_FLAGS = {
    "api_key_env": "api_key_env",
    "temperature": "temperature",
    "max_tokens": "max_tokens",
    "llm_budget": "budget",
    "candidates": "candidates",
    "llm": "llm",
}


def given_flags(args: argparse.Namespace) -> dict[str, Any]:
    """The settings given on the command line (None = not given)."""
    flags = {name: getattr(args, name) for name in FLAG_FIELDS if getattr(args, name) is not None}
    llm_options = {
        option: getattr(args, dest) for dest, option in LLM_OPTION_FLAGS.items() if getattr(args, dest, None) is not None
    }
    if args.oracle_option or llm_options:
        flags["oracle_options"] = {**parse_oracle_options(args.oracle_option), **llm_options}
    return flags


def parse_oracle_options(items: list[str]) -> dict[str, Any]:
    options: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"--oracle-option {item!r}: use KEY=VALUE")
        try:
            options[key.strip()] = json.loads(value)
        except json.JSONDecodeError:
            options[key.strip()] = value
    return options


def user_key_trust(args: argparse.Namespace, flags: dict[str, Any]) -> KeyTrust:
    """Where this command line lets an LLM key go: its --base-url (or --oracle-option base_url),
    --api-key-env and --trust-base-url, with the environment and the user's own config."""
    options = flags.get("oracle_options", {})
    return KeyTrust.of_user(
        base_urls=(flags.get("base_url"), options.get("base_url")),
        key_variables=(options.get("api_key_env"),),
        confirmed=bool(getattr(args, "trust_base_url", False)),
    )


def run(args: argparse.Namespace) -> int:
    # Until the engine runs (then stop_on_signals), SIGTERM ends the command as
    # Ctrl-C does: "csro: interrupted", status 130; no event is recorded before the run.
    previous_sigterm = signal.signal(signal.SIGTERM, _interrupt)
    try:
        return _run(args)
    finally:
        signal.signal(signal.SIGTERM, previous_sigterm)


def _interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


def _run(args: argparse.Namespace) -> int:
    from csro_tui.engine import new_engine, resume_engine  # start-up time: importing it loads numpy
    from csro_tui.engine.setup import check_offline_oracle_options, resolve_recorded_llm  # start-up time: as above

    console = pipe_aware_console()
    flags = given_flags(args)
    config = load_run_config(flags, config_file=args.config)
    if not args.resume:  # a resumed session's oracle is the recorded one
        check_offline_oracle_options(config.oracle, parse_oracle_options(args.oracle_option))
    store = SessionStore(config.sessions_dir)
    for options in (config.oracle_options, flags.get("oracle_options", {})):
        resolve_recorded_llm(options, store)
    key_trust = user_key_trust(args, flags)
    if args.resume:
        overrides = {k: v for k, v in flags.items() if k != "sessions_dir"}
        engine, warnings = resume_engine(args.resume, store=store, overrides=overrides, key_trust=key_trust)
        for warning in warnings:
            console.print(f"[yellow]warning:[/] {clean_text(warning, markup=True)}", highlight=False)
        console.print(f"resuming session [bold]{clean_text(engine.session_id, markup=True)}[/] "
                      f"({engine.state.completed_iterations} of {engine.config.iterations} iterations done)",
                      highlight=False)
    else:
        engine = new_engine(config, store=store, key_trust=key_trust)
    loosened = loosened_text(loosened_limits(engine.config.to_dict()))
    if loosened:  # csro.toml, a flag or the resumed session raised them: said before anything runs (issue 35)
        console.print(plain(f"warning: {loosened}", "yellow"))
    try:
        display = RunDisplay(console, engine)
        with stop_on_signals(engine, console), display:
            outcome = engine.run()
    finally:
        if engine.writer is not None:
            engine.writer.close()
    if display.output_closed:
        raise BrokenPipeError  # cli.main ends it quietly
    display.summary(outcome)
    return 0 if outcome.reason == "completed" else EXIT_STOPPED


@contextmanager
def stop_on_signals(engine: Any, console: Any) -> Iterator[None]:
    """First Ctrl-C/SIGTERM: stop after the current step; a second Ctrl-C aborts."""

    def request_stop(signum: int, frame: Any) -> None:
        if engine.stop_requested and signum == signal.SIGINT:
            raise KeyboardInterrupt
        engine.request_stop()
        console.print("[yellow]stopping after the current step… (Ctrl-C again to abort)[/]")

    previous = {sig: signal.signal(sig, request_stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


class RunDisplay:
    """Progress and the per-iteration table, fed by engine events."""

    def __init__(self, console: Any, engine: Any) -> None:
        self.console = console
        self.engine = engine
        self.target = engine.config.iterations
        self.activity = "starting"
        self.shown = 0  # rows already printed (non-terminal output)
        self.live = None
        self.ticker = None
        self.output_closed = False  # stdout's reader went away

        self.clock = RunClock(engine.state.completed_iterations, self.target)
        engine.subscribe(self.on_event)
        if hasattr(engine.evaluator, "on_cluster_status"):  # the Ray backend's progress, live
            engine.evaluator.on_cluster_status = self.on_cluster_status

    def __enter__(self) -> "RunDisplay":
        if self.console.is_terminal:
            self.live = Live(self.render(), console=self.console, auto_refresh=False, transient=False)
            self.live.__enter__()
        else:
            try:
                print(one_line(f"session {self.engine.session_id}: {self.engine.config.game}, oracle "
                               f"{self.engine.config.oracle}, solver {self.engine.config.solver}"), flush=True)
            except BrokenPipeError:  # nobody reads: record the session as stopped, not half-made
                self.output_closed = True
                self.engine.request_stop()

            # Piped or logged: a progress line on stderr every few seconds,
            # so a long iteration is not minutes of silence.
            self.ticker = Ticker(self.print_progress).start()
        return self

    def progress_line(self) -> str:
        done = self.engine.state.completed_iterations
        return f"csro run: {done}/{self.target} iterations · {self.activity} · {self.clock.describe(done)}{self.cluster_note()}"

    def cluster_note(self) -> str:
        """' · ray: 3/15 jobs, 2/2 workers alive' while the Ray backend plays a batch."""
        status = getattr(self.engine.evaluator, "cluster_status", lambda: None)()
        return f" · {status.line()}" if status is not None and status.done < status.total else ""

    def on_cluster_status(self, status: Any) -> None:
        if self.live is not None:
            self.live.update(self.render(), refresh=True)

    def print_progress(self) -> None:
        import sys

        print(one_line(self.progress_line()), file=sys.stderr, flush=True)

    def __exit__(self, *exc: object) -> None:
        self.activity = "done"
        if self.ticker is not None:
            self.ticker.stop()
        if self.live is not None:
            self.live.update(self.render(), refresh=True)
            self.live.__exit__(None, None, None)

    ACTIVITY = {
        "iteration_started": "asking the oracle",
        "proposal_created": "validating (sandboxed run against the population)",
        "proposal_validated": "previewing",
        "proposal_previewed": "reviewing",
        "proposal_decided": "decided",
        "policy_added": "evaluating new payoff entries (then the benchmark, where scored)",
        "payoffs_evaluated": "scoring against the benchmark bots, where scored; solving the meta-game",
        "benchmark_evaluated": "scoring against the benchmark",
        "meta_solved": "computing metrics",
        "oracle_failed": "the oracle failed; retrying",
    }

    def on_event(self, event: Any) -> None:
        if self.output_closed:
            return
        try:
            self._show_event(event)
        except BrokenPipeError:
            # The reader went away (`csro run | head`): stop after the current
            # step (the session stays resumable) and end as cli.py ends any
            # closed pipe, quietly.
            self.output_closed = True
            self.engine.request_stop()

    def _show_event(self, event: Any) -> None:
        self.activity = self.ACTIVITY.get(event.TYPE, self.activity)
        if self.live is not None:
            self.live.update(self.render(), refresh=True)
        elif event.TYPE == "iteration_finished":
            self._print_new_rows()
        if event.TYPE == "proposal_decided":
            self._show_failed_proposal(event)
        progress = getattr(event, "progress", "") if event.TYPE == "iteration_finished" else ""
        if progress:
            # The gate's note that the run stopped improving (it may quote a rejection reason).

            self._note(f"iteration {event.iteration}: {one_line(progress, 300)}")

    def _note(self, line: str) -> None:
        """A line between the iteration rows (above the live table when there is one)."""
        if self.live is not None:
            self.console.print(plain(line, "yellow"))
        else:
            print(line, flush=True)

    def _show_failed_proposal(self, event: Any) -> None:
        """The oracle's last failed code was reviewed (`Proposal.failure`): say why it failed
        and where its code is, so a person can fix it (in the workbench: `e` on its review)."""
        entry = self.engine.state.proposals.get(event.proposal_id)
        failure = getattr(getattr(entry, "proposal", None), "failure", "")
        if not failure:
            return
        line = (f"iteration {entry.iteration}: the oracle's code failed ({one_line(failure, 200)}); "
                f"{event.action.removesuffix('e')}ed by {event.decided_by}. Its code is proposal {event.proposal_id} of session "
                f"{self.engine.session_id} (the timeline's o in the workbench, `csro {self.engine.session_id}`)")
        self._note(line)

    def _print_new_rows(self) -> None:
        # start-up time: importing it loads numpy
        from csro_tui.sessions.summary import informative_nash_conv, iteration_rows

        rows = iteration_rows(self.engine.state)
        show_nash_conv = informative_nash_conv(rows)
        for row in rows[self.shown:]:
            parts = [f"iteration {row.iteration:>3}  {row.proposal or '-':<24} {row.decision or '-':<28} "
                     f"population {row.population_size:>3}"]
            if row.gain is not None:
                parts.append(f"gain {number(row.gain, signed=True)}")
            if row.headline_text:
                parts.append(row.headline_text)
            if show_nash_conv or row.metric_name == "meta-NashConv":
                parts.append(f"meta-NashConv {number(row.meta_nash_conv)}")
            if row.reason:
                parts.append(f"rejected: {row.reason} ({self._where_reasons()}, event {row.reason_event})")
            print(clean_text("  ".join(parts), keep_newlines=False), flush=True)  # names, reasons: the log's
        self.shown = len(rows)

    def _where_reasons(self) -> str:
        writer = self.engine.writer
        return f"{(writer.directory / 'events.jsonl').resolve()}" if writer is not None else "not recorded"

    def render(self) -> Any:
        # start-up time: importing it loads numpy
        from csro_tui.sessions.summary import informative_nash_conv, iteration_rows

        state = self.engine.state
        rows = iteration_rows(state)
        show_nash_conv = informative_nash_conv(rows)
        table = Table()
        columns = [("iter", "right"), ("proposal", "left"), ("decision", "left"), ("pop", "right"),
                   ("gain", "right"), ("metric", "right")]
        if show_nash_conv:
            columns.append(("meta-NashConv", "right"))
        reasons = any(row.reason for row in rows)
        if reasons:
            columns.append(("why rejected (event)", "left"))
        for column, justify in columns:
            table.add_column(column, justify=justify, overflow="fold")
        for row in rows:
            cells = [str(row.iteration), plain(row.proposal or "-"), plain(row.decision or "-"), str(row.population_size),
                     number(row.gain, signed=True), row.headline_text or "-"]
            if show_nash_conv:
                cells.append(number(row.meta_nash_conv))
            if reasons:
                cells.append(plain(f"{row.reason} ({row.reason_event})" if row.reason else ""))
            table.add_row(*cells)
        done = state.completed_iterations
        status = f"{done}/{self.target} iterations · {self.activity} · {self.clock.describe(done)}{self.cluster_note()}"
        # The id on its own line, folded only if the terminal is narrower than it (never cut).
        parts = [Text(clean_text(f"csro run · {self.engine.session_id}"), overflow="fold"), table]
        if reasons:
            parts.append(Text(clean_text(f"full reasons: {self._where_reasons()} (event numbers above); "
                                         f"csro replay {self.engine.session_id} lists them"), style="dim"))
        parts.append(Text(status, style="dim"))
        return Group(*parts)

    def summary(self, outcome: Any) -> None:
        from csro_tui.sessions.state import best_metric  # start-up time: importing it loads numpy
        from csro_tui.sessions.summary import headline_series, iteration_rows  # start-up time: importing it loads numpy

        state = outcome.state
        if self.live is None:
            self._print_new_rows()
        weights = sorted(state.meta_strategy.items(), key=lambda kv: -kv[1])
        mixture = ", ".join(f"{state.member(pid).name} {w:.3f}" for pid, w in weights if w > 1e-6)
        if state.metagame.populations == 2:
            from csro_tui.sessions.summary import seat_mixtures_text  # start-up time: importing it loads numpy

            mixture = seat_mixtures_text(state, lambda member: member.name, digits=3, floor=1e-6)
        latest = state.latest_metrics
        lines = [
            f"{outcome.reason}: {outcome.message}" if outcome.message else outcome.reason,
            f"session {self.engine.session_id} ({self.engine.writer.directory.resolve() if self.engine.writer else 'not recorded'})",
            f"population {len(state.population)} · meta-strategy: {mixture or '-'}",
        ]
        if latest is not None:
            # NashConv only where it says something (an exact solver's is ~0).
            figures = [f"meta-NashConv {number(latest.meta_nash_conv)}"] if abs(latest.meta_nash_conv) >= 5e-5 else []
            if latest.exploitability is not None:
                figures.append(f"exploitability {number(latest.exploitability)}")
            if latest.benchmark:
                meta = latest.benchmark["meta"]
                episodes = self.engine.config.benchmark_episodes
                figures.append(f"AggScore {number(meta['agg_score'], stderr=meta.get('agg_score_stderr'))}"
                               + (f" ({counted(episodes, 'episode')} per bot)" if episodes else ""))
            if figures:
                lines.append(" · ".join(figures))
        best = best_metric(state.metrics)
        if best is not None:
            lines.append(f"best {best[0]} {number(best[1])}")
        name, values = headline_series(iteration_rows(state))
        trend = closing_sparkline(name, values, self.console.width)
        if trend:
            lines.append(trend)
        if outcome.reason != "completed":
            where = self.engine.config.sessions_dir
            flag = "" if where == "sessions" else f" --session-dir {where}"
            lines.append(f"continue with: csro run --resume {self.engine.session_id}{flag}")
        for line in lines:
            print(clean_text(line, keep_newlines=False), flush=True)  # names and messages: the log's


# The closing sparkline keeps at least this many marks, however narrow the terminal.
MIN_SPARKLINE_MARKS = 8


def closing_sparkline(name: str, values: list[float | None], width: int) -> str:
    """"exploitability per iteration: █▆▄▁  0.3333 → 0.0694", within `width` columns: a longer
    run is resampled ("... over 150 iterations: "); "" with fewer than two values."""
    known = [v for v in values if v is not None]
    if len(known) < 2:
        return ""
    ends = f"  {number(known[0])} → {number(known[-1])}"
    label = f"{name} per iteration: "
    if len(values) > width - len(label) - len(ends):
        over = f"{name} over {counted(len(values), 'iteration')}: "
        room = max(width - len(over) - len(ends), MIN_SPARKLINE_MARKS)
        if len(values) > room:
            return f"{over}{sparkline(values, room)}{ends}"
    return f"{label}{sparkline(values)}{ends}"
