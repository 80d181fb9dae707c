"""Shared pieces of the benchmark: timing, the result table, trusted in-process policies.

Every figure in the table is measured in the same run as the figure it is
compared with.  Timings on a shared machine are noisy, so each measurement
is repeated where it is cheap enough and the minimum is reported (the
median is printed next to it).
"""

from __future__ import annotations

import os
import statistics
import time
from dataclasses import dataclass, field
from typing import Any, Callable


def load_policy_class(source: str):
    """`Policy` from a policy module, executed in this process.

    Only for the benchmark's baselines, and only on our own hand-written
    seed policies (trusted code, not LLM output): the baselines measure what
    playing costs without our sandbox.
    """
    namespace: dict[str, Any] = {"__name__": "bench_policy"}
    exec(compile(source, "<seed policy>", "exec"), namespace)  # noqa: S102 - trusted seed code
    return namespace["Policy"]


@dataclass
class Timing:
    """Wall-clock seconds of repeated runs of one measurement."""

    runs: list[float]
    value: Any = None  # what the last run returned

    @property
    def best(self) -> float:
        return min(self.runs)

    @property
    def median(self) -> float:
        return statistics.median(self.runs)

    def describe(self) -> str:
        if len(self.runs) == 1:
            return f"{self.best:.3g} s (1 run)"
        return f"min {self.best:.3g} s, median {self.median:.3g} s of {len(self.runs)}"


def timed(function: Callable[[], Any], repeats: int = 1) -> Timing:
    runs, value = [], None
    for _ in range(max(1, repeats)):
        start = time.perf_counter()
        value = function()
        runs.append(time.perf_counter() - start)
    return Timing(runs, value)


def interleaved(functions: dict[str, Callable[[], Any]], repeats: int) -> dict[str, Timing]:
    """Time several measurements in turns (a, b, a, b, ...), so that each
    sees the same stretch of a shared machine's load; the ratio of the
    minima is then far steadier than timing one after the other."""
    runs: dict[str, list[float]] = {name: [] for name in functions}
    values: dict[str, Any] = {}
    for _ in range(max(1, repeats)):
        for name, function in functions.items():
            start = time.perf_counter()
            values[name] = function()
            runs[name].append(time.perf_counter() - start)
    return {name: Timing(runs[name], values[name]) for name in functions}


@dataclass
class Row:
    section: str
    measure: str
    ours: str
    baseline: str
    ratio: str = ""
    target: str = ""
    holds: bool | None = None  # None: no target on this row
    note: str = ""


@dataclass
class Table:
    rows: list[Row] = field(default_factory=list)

    def add(self, *args, **kwargs) -> Row:
        row = Row(*args, **kwargs)
        self.rows.append(row)
        print(f"  [{row.section}] {row.measure}: ours {row.ours} | baseline {row.baseline}"
              + (f" | {row.ratio}" if row.ratio else "") + (f" | {row.note}" if row.note else ""), flush=True)
        return row

    def render(self) -> str:
        headers = ["#", "measure", "ours", "baseline", "ratio", "target", "holds"]
        lines = []
        for row in self.rows:
            holds = "" if row.holds is None else ("YES" if row.holds else "NO")
            lines.append([row.section, row.measure, row.ours, row.baseline, row.ratio, row.target, holds])
        widths = [max(len(h), *(len(line[i]) for line in lines)) if lines else len(h) for i, h in enumerate(headers)]
        out = [" | ".join(h.ljust(w) for h, w in zip(headers, widths))]
        out.append("-+-".join("-" * w for w in widths))
        for line in lines:
            out.append(" | ".join(cell.ljust(w) for cell, w in zip(line, widths)))
        notes = [f"  [{row.section}] {row.measure}: {row.note}" for row in self.rows if row.note]
        if notes:
            out.append("")
            out.append("notes:")
            out.extend(notes)
        return "\n".join(out)


def machine_line() -> str:
    try:
        load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        load = "n/a"
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:
        usable = os.cpu_count()
    return f"cores: {os.cpu_count()} (usable by this process: {usable}); load average at start: {load}"


def fmt_seconds(seconds: float) -> str:
    if seconds < 1e-3:
        return f"{seconds * 1e6:.0f} us"
    if seconds < 1:
        return f"{seconds * 1e3:.1f} ms"
    return f"{seconds:.2f} s"


def ratio(numerator: float, denominator: float) -> float:
    return numerator / denominator if denominator > 0 else float("inf")
