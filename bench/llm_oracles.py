"""Section 7: the LLM oracles with a real model, beside the offline oracles on the same wall clock.

    .venv/bin/python -m bench.llm_oracles --base-url "$(scripts/local-llm.sh url)" [--calls 8] [--games ...]
    .venv/bin/python -m bench --only 7        # the same with the defaults, reading $CSRO_REAL_LLM_BASE_URL

For each game (kuhn_poker, leduc_poker, rrps with short matches) each LLM
oracle (llm, llm-refine, llm-evolve) runs CSRO with `--review auto` (3
attempts per iteration, as `csro run`) until it has made `--calls` LLM calls
(checked after each decision, so a run may overshoot by less than one
proposal's calls).
Then the offline oracles (best-response where the game has one, seed,
evolve) run for the longest wall time an LLM oracle took on that game, or
10 iterations, whichever ends first.

Per run: LLM calls; replies holding statically valid code; proposals that
validated in the sandbox; proposals accepted; the meta-strategy's
exploitability (poker) or AggScore against the 43 RoShamBo bots (rrps)
after each iteration; prompt and completion tokens (as the server counted
them); the largest prompt; wall time; tokens and seconds per accepted
policy.  For rrps the AggScore of every seed policy alone is measured too
(`csro eval seed:NAME`), for the target "meta-strategy above the best seed".

Every figure comes from this run; the sessions are kept (path printed) so
each reply can be read with `csro replay` or the TUI.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.common import Table, fmt_seconds, machine_line

LLM_ORACLES = ("llm", "llm-refine", "llm-evolve")
OFFLINE_ORACLES = ("best-response", "seed", "evolve")
GAMES = ("kuhn_poker", "leduc_poker", "rrps")
# LLM calls one proposal may use: small, so that a fixed budget of calls covers several iterations.
CALLS_PER_PROPOSAL = {"llm": 2, "llm-refine": 4, "llm-evolve": 4}
DEFAULT_MODEL = "qwen2.5-coder-1.5b-instruct"
# Offline oracles stop after this many iterations or the LLM oracles' wall clock, whichever comes first.
OFFLINE_ITERATIONS = 10
# Attempts per iteration, as `csro run` defaults to: an iteration whose attempts all fail ends the run.
MAX_ATTEMPTS = 3
KUHN_TARGET = 0.1  # issue 14: Kuhn exploitability below 0.1 within 10 iterations of llm-refine


@dataclass
class OracleRun:
    game: str
    oracle: str
    wall_s: float = 0.0
    calls: int = 0
    replies_with_code: int = 0
    proposals: int = 0
    valid_proposals: int = 0
    accepted: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    largest_prompt: int = 0
    failed_calls: int = 0
    # The meta-strategy's measure after the seeds (index 0) and after each iteration.
    curve: list[float | None] = field(default_factory=list)
    best_member: str = ""
    closed: str = ""
    session: str = ""
    rejections: dict[str, int] = field(default_factory=dict)

    @property
    def final(self) -> float | None:
        return self.curve[-1] if self.curve else None

    def per_accepted(self, total: float) -> str:
        if not self.accepted:
            return "-"
        value = total / self.accepted
        return f"{value:.0f}" if value >= 10 else f"{value:.2g}"


def game_string(game: str, repetitions: int) -> str:
    return f"rrps(num_repetitions={repetitions})" if game == "rrps" else game


def measure_of(game: str) -> str:
    return "AggScore" if game.startswith("rrps") else "exploitability"


def metric_value(game: str, metrics: Any) -> float | None:
    if game.startswith("rrps"):
        scores = (metrics.benchmark or {}).get("meta") or {}
        return scores.get("agg_score")
    return metrics.exploitability


def calls_of(state) -> list[dict[str, Any]]:
    from csro_tui.sessions.events import OracleFailed, ProposalCreated

    calls: list[dict[str, Any]] = []
    for event in state.events:
        if isinstance(event, ProposalCreated) and event.edited_from is None:
            calls += event.proposal.llm_calls or []
        elif isinstance(event, OracleFailed):
            calls += event.llm_calls or []
    return calls


def summarise(game: str, oracle: str, state, wall_s: float, session: str) -> OracleRun:
    from csro_tui.oracles.llm.conversation import code_from_reply

    run = OracleRun(game=game, oracle=oracle, wall_s=wall_s, session=session)
    calls = calls_of(state)
    run.calls = len(calls)
    for call in calls:
        if call.get("error"):
            run.failed_calls += 1
            continue
        run.prompt_tokens += call.get("prompt_tokens") or 0
        run.completion_tokens += call.get("completion_tokens") or 0
        run.largest_prompt = max(run.largest_prompt, call.get("prompt_tokens") or 0)
        source, _ = code_from_reply(call.get("response") or "", call.get("finish_reason"))
        run.replies_with_code += source is not None
    for proposal in state.proposals.values():
        if proposal.edited_from is not None:
            continue
        run.proposals += 1
        run.valid_proposals += bool(proposal.validation and proposal.validation.valid)
        if proposal.decision is not None and proposal.decision.action == "accept":
            run.accepted += 1
        elif proposal.decision is not None:
            reason = (proposal.decision.reason or "").split(":")[0].split("(")[0].strip()[:40] or "?"
            run.rejections[reason] = run.rejections.get(reason, 0) + 1
    for failure in state.oracle_failures:
        reason = "oracle failed: " + (failure.error or "").split(":")[0][:30]
        run.rejections[reason] = run.rejections.get(reason, 0) + 1
    by_iteration = {m.iteration: m for m in state.metrics}
    last_iteration = max(state.iterations, default=0)
    value = None
    for number in range(0, last_iteration + 1):
        if number in by_iteration:
            value = metric_value(game, by_iteration[number])
        run.curve.append(value)
    if state.metrics and state.metrics[-1].benchmark:
        best = state.metrics[-1].benchmark.get("best_member") or {}
        if best:
            run.best_member = f"{best.get('id')} {best.get('agg_score', float('nan')):+.3f}"
    run.closed = state.closed.reason if state.closed else "open"
    if state.closed and state.closed.reason == "error":
        run.closed = f"error ({state.closed.message[:80]})"
    return run


def run_oracle(game: str, oracle: str, *, sessions: Path, call_budget: int | None, wall_budget: float,
               iterations: int, llm: dict[str, Any]) -> OracleRun:
    """One CSRO run (auto reviewer), stopped by calls or wall time; an error ends it and is reported."""
    from csro_tui.config import RunConfig
    from csro_tui.engine.setup import new_engine
    from csro_tui.errors import CsroError
    from csro_tui.sessions.events import IterationFinished, OracleFailed, ProposalCreated, ProposalDecided
    from csro_tui.sessions.store import SessionStore

    options: dict[str, Any] = {}
    if oracle in LLM_ORACLES:
        options = {"budget": min(CALLS_PER_PROPOSAL[oracle], call_budget or CALLS_PER_PROPOSAL[oracle]), "max_tokens": llm["max_tokens"], "timeout": 900,
                   "max_retries": 1, "concurrency": 1, "temperature": llm["temperature"],
                   # llama-cpp-python's server reports usage on plain requests only; counted tokens, not estimates
                   "stream": False}
        if oracle == "llm-refine":
            options["start"] = llm["refine_start"]
    config = RunConfig(game=game, oracle=oracle, iterations=iterations, review="auto", seed=0, max_attempts=MAX_ATTEMPTS,
                       sessions_dir=str(sessions), oracle_options=options,
                       model=llm["model"] if oracle in LLM_ORACLES else "",
                       base_url=llm["base_url"] if oracle in LLM_ORACLES else "")
    engine = new_engine(config, store=SessionStore(sessions))
    started = time.perf_counter()
    used = {"calls": 0}

    def out_of_budget() -> bool:
        out_of_calls = call_budget is not None and used["calls"] >= call_budget
        return out_of_calls or time.perf_counter() - started >= wall_budget

    def watch(event) -> None:
        # Stop where nothing accepted is left pending: after a rejection, a failed attempt, or an
        # iteration (an accepted proposal has joined by then).
        if isinstance(event, ProposalCreated) and event.edited_from is None:
            used["calls"] += len(event.proposal.llm_calls or [])
        elif isinstance(event, OracleFailed):
            used["calls"] += len(event.llm_calls or [])
            if out_of_budget():
                engine.request_stop()
        elif isinstance(event, ProposalDecided) and event.action == "reject":
            if out_of_budget():
                engine.request_stop()
        elif isinstance(event, IterationFinished):
            if out_of_budget():
                engine.request_stop()
            label = f"{used['calls']} calls, " if oracle in LLM_ORACLES else ""
            print(f"    {game} {oracle}: iteration {event.iteration} "
                  f"{'accepted ' + event.accepted if event.accepted else 'nothing accepted'} "
                  f"({label}{time.perf_counter() - started:.0f} s)", flush=True)

    engine.subscribe(watch)
    try:
        engine.run()
    except CsroError as error:  # recorded as the session's close; the figures so far still count
        print(f"    {game} {oracle}: the run ended with an error: {str(error)[:300]}", flush=True)
    wall = time.perf_counter() - started
    state = engine.snapshot()
    return summarise(game, oracle, state, wall, str(sessions / (engine.session_id or "")))


def seed_agg_scores(game: str, episodes: int) -> dict[str, float]:
    """Each seed policy's AggScore against the benchmark bots, through `csro eval --json`."""
    from csro_tui.games.registry import get_game

    scores: dict[str, float] = {}
    for name in get_game(game).seed_policies():
        completed = subprocess.run(
            [sys.executable, "-m", "csro_tui.cli", "eval", f"seed:{name}", "--game", game,
             "--episodes", str(episodes), "--json"],
            capture_output=True, text=True, timeout=1800,
        )
        if completed.returncode != 0:
            print(f"    csro eval seed:{name} failed: {completed.stderr.strip()[-300:]}", flush=True)
            continue
        scores[name] = json.loads(completed.stdout)["metrics"]["agg_score"]
    return scores


def fmt_value(value: float | None) -> str:
    return "-" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{value:.4f}"


def curve_text(run: OracleRun) -> str:
    return " ".join(fmt_value(v) for v in run.curve)


def add_rows(table: Table, run: OracleRun, llm_run: bool, note_extra: str = "") -> None:
    measure = measure_of(run.game)
    if llm_run:
        ours = (f"{run.accepted} accepted of {run.proposals} proposals; {run.calls} calls, "
                f"{run.replies_with_code} replies with valid code, {run.valid_proposals} proposals ran")
        per = (f"per accepted policy: {run.per_accepted(run.prompt_tokens + run.completion_tokens)} tokens, "
               f"{run.per_accepted(run.wall_s)} s")
    else:
        ours = f"{run.accepted} accepted of {run.proposals} proposals"
        per = f"per accepted policy: {run.per_accepted(run.wall_s)} s"
    # The wall time is ours too; the offline oracles' rows are the comparison.
    table.add("7", f"{run.game} {run.oracle}: final {measure} {fmt_value(run.final)}",
              f"{ours}; wall {fmt_seconds(run.wall_s)}", "", "", "", None,
              note=(f"{measure} per iteration {curve_text(run)}; {per}; tokens in/out "
                    f"{run.prompt_tokens}/{run.completion_tokens}, largest prompt {run.largest_prompt}; "
                    f"rejections {run.rejections or '{}'}; closed {run.closed}; "
                    + (f"best member {run.best_member}; " if run.best_member else "")
                    + f"session {run.session}{note_extra}"))


def add_kuhn_target(table: Table, run: OracleRun, note: str) -> None:
    """The issue's target row: the meta-strategy's exploitability below KUHN_TARGET within 10 iterations."""
    within = [v for v in run.curve[1:11] if v is not None]
    best = min(within) if within else None
    table.add("7", f"kuhn llm-refine: exploitability < {KUHN_TARGET} within 10 iterations",
              fmt_value(best), f"seeds alone {fmt_value(run.curve[0] if run.curve else None)}",
              "", f"< {KUHN_TARGET}", best is not None and best < KUHN_TARGET, note=note)


def llm_oracles(table: Table, quick: bool, *, base_url: str | None = None, model: str = DEFAULT_MODEL,
                calls: int | None = None, games: tuple[str, ...] = GAMES, oracles: tuple[str, ...] = LLM_ORACLES,
                offline: tuple[str, ...] = OFFLINE_ORACLES, repetitions: int = 100, max_tokens: int = 1024,
                sessions: Path | None = None, temperature: float = 0.3, refine_start: str = "example",
                ) -> list[OracleRun]:
    """The section: every game, every LLM oracle on `calls` calls, then the offline ones on the same clock."""
    base_url = base_url or os.environ.get("CSRO_REAL_LLM_BASE_URL")
    if not base_url:
        table.add("7", "LLM oracles with a real model", "skipped", "", note="no model: set CSRO_REAL_LLM_BASE_URL "
                  "(scripts/local-llm.sh start) or pass --base-url to python -m bench.llm_oracles")
        return []
    calls = calls or (4 if quick else 8)
    sessions = sessions or Path(tempfile.mkdtemp(prefix="csro-bench-llm-"))
    print(f"  sessions under {sessions}; model {model} at {base_url}; {calls} calls per LLM oracle", flush=True)
    llm = {"base_url": base_url, "model": model, "max_tokens": max_tokens, "temperature": temperature,
           "refine_start": refine_start}
    runs: list[OracleRun] = []
    from csro_tui.games.registry import get_game

    for name in games:
        game = game_string(name, repetitions)
        llm_runs = []
        for oracle in oracles:
            print(f"  {game} {oracle} ...", flush=True)
            run = run_oracle(game, oracle, sessions=sessions, call_budget=calls, wall_budget=3600,
                             iterations=calls, llm=llm)
            llm_runs.append(run)
            add_rows(table, run, True)
        runs += llm_runs
        clock = max((r.wall_s for r in llm_runs), default=60.0)
        exact = get_game(game).exact
        for oracle in offline:
            if oracle == "best-response" and not exact:
                continue
            print(f"  {game} {oracle} for {clock:.0f} s ...", flush=True)
            run = run_oracle(game, oracle, sessions=sessions, call_budget=None, wall_budget=clock,
                             iterations=OFFLINE_ITERATIONS, llm=llm)
            runs.append(run)
            add_rows(table, run, False, note_extra=f"; wall-clock budget {clock:.0f} s (the slowest LLM oracle's)")
        if name == "kuhn_poker":
            for run in llm_runs:
                if run.oracle == "llm-refine":
                    add_kuhn_target(table, run, f"{len(run.curve) - 1} iterations in the call budget ({calls} calls, "
                                                f"{CALLS_PER_PROPOSAL['llm-refine']} per proposal)")
        if name == "rrps":
            seeds = seed_agg_scores(game, episodes=2)
            if seeds:
                best_seed = max(seeds, key=seeds.get)
                print(f"    seed AggScores: {json.dumps({k: round(v, 4) for k, v in seeds.items()})}", flush=True)
                for run in llm_runs:
                    final = run.final
                    table.add("7", f"rrps {run.oracle}: meta AggScore above the best seed's",
                              fmt_value(final), f"{best_seed} {seeds[best_seed]:.4f}", "",
                              "> best seed", final is not None and final > seeds[best_seed],
                              note=f"all seeds {json.dumps({k: round(v, 4) for k, v in seeds.items()})}")
    return runs


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.llm_oracles", description=__doc__.splitlines()[0])
    parser.add_argument("--base-url", default=os.environ.get("CSRO_REAL_LLM_BASE_URL"),
                        help="OpenAI-compatible base URL (default $CSRO_REAL_LLM_BASE_URL)")
    parser.add_argument("--model", default=os.environ.get("CSRO_REAL_LLM_MODEL", DEFAULT_MODEL))
    parser.add_argument("--calls", type=int, default=8, help="LLM calls per LLM oracle and game (default 8)")
    parser.add_argument("--games", default=",".join(GAMES), help=f"comma-separated, from {', '.join(GAMES)}")
    parser.add_argument("--oracles", default=",".join(LLM_ORACLES), help="LLM oracles to run")
    parser.add_argument("--offline", default=",".join(OFFLINE_ORACLES), help="offline oracles ('' for none)")
    parser.add_argument("--rrps-repetitions", type=int, default=100, help="throws per RRPS match (default 100)")
    parser.add_argument("--max-tokens", type=int, default=1024, help="reply limit per call (default 1024)")
    parser.add_argument("--sessions", type=Path, help="where to record the sessions (default: a new temp dir)")
    parser.add_argument("--json", type=Path, help="also write every run's figures here")
    parser.add_argument("--temperature", type=float, default=0.3, help="LLM sampling temperature (default 0.3)")
    parser.add_argument("--refine-start", default="example", choices=("example", "zero-shot", "member"),
                        help="llm-refine's root (default example: every call edits working code)")
    parser.add_argument("--report", type=Path, nargs="+", metavar="SESSION",
                        help="no runs: print the section's table for these recorded sessions (csro run ...)")
    args = parser.parse_args(argv)
    if args.report:
        return report(args.report)
    if not args.base_url:
        parser.error("no model: pass --base-url or set CSRO_REAL_LLM_BASE_URL (scripts/local-llm.sh start)")

    def names(text: str, known: tuple[str, ...]) -> tuple[str, ...]:
        chosen = tuple(part.strip() for part in text.split(",") if part.strip())
        unknown = [n for n in chosen if n not in known]
        if unknown:
            parser.error(f"unknown {', '.join(unknown)}; choose from {', '.join(known)}")
        return chosen

    print(f"csro-tui LLM oracle benchmark; {machine_line()}", flush=True)
    table = Table()
    started = time.perf_counter()
    runs = llm_oracles(table, False, base_url=args.base_url, model=args.model, calls=args.calls,
                       games=names(args.games, GAMES), oracles=names(args.oracles, LLM_ORACLES),
                       offline=names(args.offline, OFFLINE_ORACLES), repetitions=args.rrps_repetitions,
                       max_tokens=args.max_tokens, sessions=args.sessions, temperature=args.temperature,
                       refine_start=args.refine_start)
    print()
    print(f"csro-tui LLM oracle benchmark; {machine_line()}; total {time.perf_counter() - started:.0f} s")
    print(table.render())
    if args.json:
        args.json.write_text(json.dumps([run.__dict__ for run in runs], indent=1))
    return 0


def report(session_dirs: list[Path]) -> int:
    """The section's rows for sessions recorded by `csro run` (wall time from their first to last event)."""
    from csro_tui.sessions.state import fold
    from csro_tui.sessions.store import SessionStore

    table = Table()
    for directory in session_dirs:
        state = fold(SessionStore(directory.parent).read(directory.name).events)
        times = [event.ts for event in state.events if getattr(event, "ts", None)]
        wall = _seconds_between(times[0], times[-1]) if len(times) > 1 else 0.0
        run = summarise(state.config["game"], state.config["oracle"], state, wall, str(directory))
        add_rows(table, run, run.oracle in LLM_ORACLES)
        if run.game == "kuhn_poker" and run.oracle == "llm-refine":
            add_kuhn_target(table, run, f"{len(run.curve) - 1} iterations, {run.calls} calls; options "
                                        f"{json.dumps(state.config.get('oracle_options') or {})}")
    print(table.render())
    return 0


def _seconds_between(first: str, last: str) -> float:
    from datetime import datetime

    return (datetime.fromisoformat(last.replace("Z", "+00:00"))
            - datetime.fromisoformat(first.replace("Z", "+00:00"))).total_seconds()


if __name__ == "__main__":
    raise SystemExit(main())
