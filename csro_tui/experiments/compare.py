"""Sessions side by side: per configuration, figures across repeats with confidence intervals.

`session_summary` reads one session's figures from its state, with the same
functions `csro run`, `replay` and `export` use (`iteration_rows`,
`headline_series`), so compare's numbers are the sessions' own.
`compare_sessions` groups summaries by configuration (the recorded
configuration without what never changes a result: seed, workers, backend,
where sessions live) and gives each figure as the mean across repeats with
a 95% Student-t confidence interval (with one session: the session's own
± stderr where its figure is sampled, else no interval).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Iterable

# Recorded settings that do not define a configuration.
NOT_CONFIGURATION = ("seed", "workers", "backend", "ray_address", "sessions_dir", "base_url", "iterations")
CONFIDENCE = 0.95


@dataclass(frozen=True)
class LLMTotals:
    calls: int = 0
    tokens: int = 0
    cost_usd: float | None = None


def llm_totals(events: Iterable[Any]) -> LLMTotals:
    """Every LLM call a session recorded: the oracle's proposals (not reviewers' edits) and failed attempts."""
    from csro_tui.oracles.llm.client import LLMCall, usage_of  # start-up time: loaded only when this runs

    calls = []
    for event in events:
        records: Any = ()
        if event.TYPE == "proposal_created" and getattr(event, "edited_from", None) is None:
            records = event.proposal.llm_calls or ()
        elif event.TYPE == "oracle_failed":
            records = getattr(event, "llm_calls", None) or ()
        for record in records:
            try:
                calls.append(LLMCall.from_dict(record))
            except Exception:  # noqa: BLE001 - a malformed record counts as a call without usage
                calls.append(None)
    usage = usage_of(c for c in calls if c is not None)
    return LLMTotals(calls=len(calls), tokens=usage.total_tokens, cost_usd=usage.cost_usd)


def _seconds(ts: str) -> float:
    return datetime.fromisoformat(ts.replace("Z", "+00:00")).timestamp()


def active_clock(events: list[Any]) -> dict[int, float]:
    """Seconds of running time at each event (by seq), not counting the time a session sat stopped."""
    clock: dict[int, float] = {}
    total = 0.0
    previous: float | None = None
    for event in events:
        now = _seconds(event.ts) if event.ts else None
        if now is not None and previous is not None and event.TYPE != "session_resumed":
            total += max(0.0, now - previous)
        clock[event.seq] = total
        previous = now
        if event.TYPE == "session_closed":
            previous = None  # stopped: the time until the resume is not running time
        if event.TYPE == "session_resumed":
            previous = now
    return clock


@dataclass(frozen=True)
class SessionSummary:
    session_id: str
    configuration: dict[str, Any]
    metric: str  # "exploitability", "AggScore" or "gain vs previous meta-strategy"
    iterations: list[int]  # iteration numbers of the series (0 = seeds)
    values: list[float | None]
    stderrs: list[float | None]
    seconds: list[float]  # running time when each iteration finished
    final: float | None
    final_stderr: float | None
    best: float | None
    completed_iterations: int
    wall_seconds: float
    population: int
    accepted: int
    rejected: int
    llm: LLMTotals
    closed: str | None

    @property
    def higher_is_better(self) -> bool:
        return self.metric != "exploitability"

    def reached(self, target: float) -> tuple[int, float] | None:
        """(iteration, running seconds) when the figure first reached `target`; None if never."""
        for iteration, value, seconds in zip(self.iterations, self.values, self.seconds):
            if value is None:
                continue
            if (value >= target) if self.higher_is_better else (value <= target):
                return iteration, seconds
        return None


def session_summary(state: Any) -> SessionSummary:
    from csro_tui.sessions.summary import headline_series, iteration_rows  # start-up time: loaded only when this runs

    rows = iteration_rows(state)
    name, values = headline_series(rows)
    stderrs = [row.metric_stderr if name == "AggScore" else None for row in rows]
    clock = active_clock(state.events)
    finished = {e.iteration: clock.get(e.seq, 0.0) for e in state.events if e.TYPE == "iteration_finished"}
    known = [(v, s) for v, s in zip(values, stderrs) if v is not None]
    higher = name != "exploitability"
    best = (max if higher else min)(v for v, _ in known) if known else None
    decisions = [p.decision.action for p in state.proposals.values() if p.decision is not None]
    config = {k: v for k, v in state.config.items() if k not in NOT_CONFIGURATION}
    return SessionSummary(
        session_id=state.started.session_id if state.started else "?",
        configuration=config,
        metric=name,
        iterations=[row.iteration for row in rows],
        values=values,
        stderrs=stderrs,
        seconds=[finished.get(row.iteration, 0.0) for row in rows],
        final=known[-1][0] if known else None,
        final_stderr=known[-1][1] if known else None,
        best=best,
        completed_iterations=state.completed_iterations,
        wall_seconds=clock.get(state.events[-1].seq, 0.0) if state.events else 0.0,
        population=len(state.population),
        accepted=sum(1 for d in decisions if d == "accept"),
        rejected=sum(1 for d in decisions if d == "reject"),
        llm=llm_totals(state.events),
        closed=state.closed.reason if state.closed else None,
    )


@dataclass(frozen=True)
class Estimate:
    """A mean across repeats with a confidence interval (half-width; None: no interval)."""

    mean: float | None
    half_width: float | None
    n: int

    def text(self, digits: int = 4) -> str:
        from csro_tui.numbers import number  # start-up time: loaded only when this runs

        if self.mean is None:
            return "-"
        if self.half_width is None:
            return number(self.mean, digits)
        return f"{number(self.mean, digits)} ± {number(self.half_width, digits)}"

    def to_dict(self) -> dict[str, Any]:
        return {"mean": self.mean, "ci95_half_width": self.half_width, "n": self.n}


def estimate(values: Iterable[float | None], *, own_stderr: float | None = None) -> Estimate:
    """Mean and 95% t-interval across repeats; a single value keeps its own ±stderr (if it has one)."""
    known = [float(v) for v in values if v is not None and not math.isnan(v)]
    if not known:
        return Estimate(None, None, 0)
    mean = sum(known) / len(known)
    if len(known) == 1:
        return Estimate(mean, own_stderr, 1)
    from scipy.stats import t  # start-up time: scipy loads when a sweep is compared

    variance = sum((v - mean) ** 2 for v in known) / (len(known) - 1)
    half = float(t.ppf(0.5 + CONFIDENCE / 2, len(known) - 1)) * math.sqrt(variance / len(known))
    return Estimate(mean, half, len(known))


@dataclass
class ConfigurationRow:
    label: str
    configuration: dict[str, Any]
    sessions: list[SessionSummary]
    metric: str
    final: Estimate
    best: Estimate
    iterations: Estimate
    wall_seconds: Estimate
    to_target: Estimate | None  # iterations to the target, among the sessions that reached it
    seconds_to_target: Estimate | None
    reached: int  # sessions that reached the target
    population: Estimate
    accepted: int
    rejected: int
    llm: LLMTotals
    curve: list[tuple[int, Estimate]] = field(default_factory=list)  # per iteration, across repeats

    def to_dict(self) -> dict[str, Any]:
        return {
            "configuration": self.label, "settings": self.configuration,
            "sessions": [s.session_id for s in self.sessions], "metric": self.metric,
            "final": self.final.to_dict(), "best": self.best.to_dict(), "iterations": self.iterations.to_dict(),
            "wall_seconds": self.wall_seconds.to_dict(),
            "iterations_to_target": self.to_target.to_dict() if self.to_target else None,
            "seconds_to_target": self.seconds_to_target.to_dict() if self.seconds_to_target else None,
            "reached_target": self.reached, "population": self.population.to_dict(),
            "accepted": self.accepted, "rejected": self.rejected,
            "llm_calls": self.llm.calls, "llm_tokens": self.llm.tokens, "llm_cost_usd": self.llm.cost_usd,
            "curve": [{"iteration": i, **e.to_dict()} for i, e in self.curve],
        }


def configuration_labels(configurations: list[dict[str, Any]]) -> list[str]:
    """Name each configuration by the settings that differ between them (game, oracle, solver if none do)."""
    keys = sorted({k for c in configurations for k in c})
    differing = [k for k in keys if len({repr(c.get(k)) for c in configurations}) > 1]
    shown = differing or ["game", "oracle", "solver"]
    return [" ".join(f"{k}={_short(c.get(k))}" for k in shown) for c in configurations]


def _short(value: Any) -> str:
    if isinstance(value, str):
        return value
    import json

    return json.dumps(value, sort_keys=True)


def compare_sessions(summaries: list[SessionSummary], *, target: float | None = None,
                     labels: dict[str, str] | None = None) -> list[ConfigurationRow]:
    """Group by configuration (in first-seen order) and estimate each figure across repeats."""
    from csro_tui.errors import ConfigError  # start-up time: loaded only when this runs

    groups: dict[str, list[SessionSummary]] = {}
    settings: dict[str, dict[str, Any]] = {}
    for summary in summaries:
        key = repr(sorted(summary.configuration.items()))
        groups.setdefault(key, []).append(summary)
        settings[key] = summary.configuration
    names = configuration_labels(list(settings.values()))
    rows = []
    for (key, members), name in zip(groups.items(), names):
        metrics = {m.metric for m in members}
        if len(metrics) > 1:
            raise ConfigError(f"configuration {name}: its sessions report different figures ({', '.join(sorted(metrics))})")
        if labels:
            name = labels.get(members[0].session_id, name)
        metric = metrics.pop()
        single = members[0] if len(members) == 1 else None
        reached = [r for r in (m.reached(target) for m in members) if r is not None] if target is not None else []
        llm_cost = [m.llm.cost_usd for m in members if m.llm.cost_usd is not None]
        rows.append(ConfigurationRow(
            label=name, configuration=settings[key], sessions=members, metric=metric,
            final=estimate([m.final for m in members], own_stderr=single.final_stderr if single else None),
            best=estimate([m.best for m in members]),
            iterations=estimate([m.completed_iterations for m in members]),
            wall_seconds=estimate([m.wall_seconds for m in members]),
            to_target=estimate([r[0] for r in reached]) if target is not None else None,
            seconds_to_target=estimate([r[1] for r in reached]) if target is not None else None,
            reached=len(reached),
            population=estimate([m.population for m in members]),
            accepted=sum(m.accepted for m in members), rejected=sum(m.rejected for m in members),
            llm=LLMTotals(sum(m.llm.calls for m in members), sum(m.llm.tokens for m in members),
                          sum(llm_cost) if llm_cost else None),
            curve=_curve(members),
        ))
    return rows


def _curve(members: list[SessionSummary]) -> list[tuple[int, Estimate]]:
    by_iteration: dict[int, list[float]] = {}
    own: dict[int, float | None] = {}
    for member in members:
        for iteration, value, stderr in zip(member.iterations, member.values, member.stderrs):
            if value is not None:
                by_iteration.setdefault(iteration, []).append(value)
                own[iteration] = stderr
    single = len(members) == 1
    return [(i, estimate(v, own_stderr=own.get(i) if single else None)) for i, v in sorted(by_iteration.items())]


def load_summaries(store: Any, references: Iterable[str]) -> list[SessionSummary]:
    from csro_tui.sessions.state import fold  # start-up time: loaded only when this runs

    return [session_summary(fold(store.read(ref).events)) for ref in references]


def table_rows(rows: list[Any], target: float | None) -> tuple[list[tuple[str, str]], list[list[str]]]:
    """The comparison table's columns and cells (shared by the CLI and the TUI's Compare sessions screen)."""
    from csro_tui.numbers import duration  # start-up time: loaded only when this runs

    columns = [("configuration", "left"), ("n", "right"), ("figure", "left"), ("final", "right"), ("best", "right"),
               ("iterations", "right"), ("time", "right")]
    if target is not None:
        columns += [("to target (iterations)", "right"), ("to target (time)", "right")]
    columns += [("population", "right"), ("accepted/rejected", "right"), ("LLM calls", "right"),
                ("tokens", "right"), ("cost", "right")]
    cells = []
    for row in rows:
        seconds = row.wall_seconds
        time_text = "-" if seconds.mean is None else duration(seconds.mean) + (
            f" ± {duration(seconds.half_width)}" if seconds.half_width else "")
        line = [row.label, str(len(row.sessions)), row.metric, row.final.text(), row.best.text(),
                row.iterations.text(1), time_text]
        if target is not None:
            reached = f" ({row.reached}/{len(row.sessions)})"
            line.append(row.to_target.text(1) + reached if row.to_target and row.to_target.mean is not None else f"-{reached}")
            st = row.seconds_to_target
            line.append("-" if st is None or st.mean is None else duration(st.mean))
        cost = "-" if row.llm.cost_usd is None else f"${row.llm.cost_usd:.4f}"
        line += [row.population.text(1), f"{row.accepted}/{row.rejected}", str(row.llm.calls) if row.llm.calls else "-",
                 str(row.llm.tokens) if row.llm.calls else "-", cost]
        cells.append(line)
    return columns, cells


def chart_series(rows: list[Any]) -> list[tuple[str, list[int], list[float], list[float | None]]]:
    return [(row.label, [i for i, _ in row.curve], [e.mean for _, e in row.curve], [e.half_width for _, e in row.curve])
            for row in rows]


def charts_by_metric(rows: list[Any]) -> list[tuple[str, list[tuple[int, tuple[str, list[int], list[float], list[float | None]]]]]]:
    """The rows' series grouped by figure, one chart each: (metric, [(row index, series)]).

    Sessions of different games report different figures (exploitability, lower is
    better; AggScore, higher is better, in other units): one axis for both misleads, so
    each figure gets its own chart; the row index keeps each series' letter (A, B, ...)
    the same as in the table."""
    groups: dict[str, list] = {}
    for index, (row, series) in enumerate(zip(rows, chart_series(rows))):
        groups.setdefault(row.metric, []).append((index, series))
    return list(groups.items())


def series_letter(index: int) -> str:
    """The letter of the `index`-th configuration in the table and the charts."""
    return chr(ord("A") + index % 26)

