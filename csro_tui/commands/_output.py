"""Output shared by the commands: tables that never cut an id, and progress for pipes.

`print_table` draws a rich table in a terminal and plain aligned columns
when stdout is piped or logged, so session ids and names are never
wrapped, folded or cut (they are meant to be copied).

`ProgressReporter` says how long work will take: in a terminal it feeds a
rich progress bar (with time left); when stderr is not a terminal it
prints one line to stderr every few seconds (done/total, rate, time left),
so `csro crosstable ... > out.txt` is not silent for minutes.
"""

from __future__ import annotations

import math
import sys
import time
from typing import Any, Callable, Sequence, TextIO

from rich.console import Console
from rich.table import Table
from rich.text import Text

from csro_tui.numbers import duration, rate_text
from csro_tui.text import clean_text, plain

# Seconds between progress lines when stderr is not a terminal.
PROGRESS_INTERVAL = 5.0


# A column whose cells are longer than this folds (a long error, say)
# rather than taking the terminal's whole width.
FOLD_WIDTH = 30


def print_table(console: Any, title: str, columns: Sequence[tuple[str, str]], rows: Sequence[Sequence[Any]],
                *, whole: Sequence[str] = ("id",), file: TextIO | None = None,
                drop_order: Sequence[str] = ()) -> None:
    """`columns` are (name, "left"/"right"); cells are text (shown literally) or rich Text.

    Columns named in `whole` are never wrapped or cut in a terminal, and no
    header is ever wrapped: when the terminal is too narrow for every
    column, those named in `drop_order` are left out, first ones first, and
    a line says which and how to see them.  Piped output is plain text, one
    row per line, columns aligned by spaces, every column.
    """
    if not console.is_terminal:
        out = file or sys.stdout
        cells = [[clean_text(c.plain if isinstance(c, Text) else c, keep_newlines=False) for c in row] for row in rows]
        names = [name for name, _ in columns]
        widths = [max([len(name), *(len(row[i]) for row in cells)]) for i, name in enumerate(names)]

        def line(values: Sequence[str]) -> str:
            parts = [v.rjust(w) if justify == "right" else v.ljust(w)
                     for v, w, (_, justify) in zip(values, widths, columns)]
            return "  ".join(parts).rstrip()

        print(clean_text(title, keep_newlines=False), file=out)
        print(line(names), file=out)
        for row in cells:
            print(line(row), file=out)
        out.flush()
        return
    def text_length(cell: Any) -> int:
        return len(cell.plain if isinstance(cell, Text) else str(cell))

    natural = [max([len(name), *(text_length(row[i]) for row in rows)]) for i, (name, _) in enumerate(columns)]
    # What each column needs without cutting a cell (a long one folds at FOLD_WIDTH).
    needed = [width if name in whole else min(width, max(FOLD_WIDTH, len(name)))
              for width, (name, _) in zip(natural, columns)]
    shown = list(range(len(columns)))
    dropped: list[str] = []
    for name in drop_order:
        if sum(needed[i] for i in shown) + 3 * len(shown) + 1 <= console.width:
            break
        index = next((i for i in shown if columns[i][0] == name), None)
        if index is not None:
            shown.remove(index)
            dropped.append(name)
    table = Table(title=plain(title), title_justify="left")  # a title names a path or a sweep: never markup
    for index in shown:
        name, justify = columns[index]
        if name in whole:
            table.add_column(name, justify=justify, no_wrap=True, overflow="ignore", min_width=natural[index])
        elif natural[index] <= FOLD_WIDTH:  # whole; folded (never cut) only if the terminal is narrower still
            table.add_column(name, justify=justify, no_wrap=True, overflow="fold", min_width=natural[index])
        else:
            table.add_column(name, justify=justify, overflow="fold", min_width=len(name))
    for row in rows:
        table.add_row(*(row[i] if isinstance(row[i], Text) else plain(row[i]) for i in shown))
    console.print(table)
    if dropped:
        console.print(plain(f"({', '.join(dropped)} left out at this width: widen the terminal, "
                            f"or pipe the output (| cat) for every column)", "dim"))


class ProgressLines:
    """Progress as lines on a stream: at most one per `interval` seconds, and a last one
    when it has spoken before (work shorter than the interval stays silent)."""

    def __init__(self, description: str, total: int, *, unit: str = "matches", stream: TextIO | None = None,
                 interval: float | None = None, clock: Callable[[], float] = time.monotonic) -> None:
        self.description = description
        self.total = total
        self.unit = unit
        self.stream = stream if stream is not None else sys.stderr
        self.interval = PROGRESS_INTERVAL if interval is None else interval
        self.clock = clock
        self.started = clock()
        self.last_line = self.started
        self.done = 0.0
        self.note = ""
        self.finished = False
        self.lines_printed = 0

    def update(self, done: float, total: int | None = None, note: str = "") -> None:
        self.done = done
        if total:
            self.total = total
        self.note = note
        now = self.clock()
        finished = bool(self.total) and done >= self.total
        due = now - self.last_line >= self.interval
        if (due and not finished) or (finished and not self.finished and (due or self.lines_printed)):
            self.last_line = now
            self.finished = finished
            self.print_line(now)

    def line(self, now: float | None = None) -> str:
        now = self.clock() if now is None else now
        elapsed = now - self.started
        rate = self.done / elapsed if elapsed > 0 else 0.0
        # Whole units finished: a fraction (11.96 of a batch) would print as "12.0/43".
        done = math.floor(self.done + 1e-9)
        parts = [f"{self.description}: {done}/{self.total}" + (f" {self.unit}" if self.unit else "")]
        if rate > 0:
            parts.append(rate_text(rate))
            remaining = max(self.total - self.done, 0) / rate
            parts.append(f"{duration(remaining)} left" if remaining > 0 else f"done in {duration(elapsed)}")
        else:
            parts.append(f"{duration(elapsed)} elapsed")
        if self.note:
            parts.append(clean_text(self.note, keep_newlines=False))
        return " · ".join(parts)

    def print_line(self, now: float | None = None) -> None:
        self.lines_printed += 1
        try:
            print(self.line(now), file=self.stream, flush=True)
        except (OSError, ValueError):  # stderr closed: progress is optional
            pass


class RunClock:
    """Elapsed time and time left for iterations (the left part once one iteration has finished here)."""

    def __init__(self, done_at_start: int, target: int, clock: Callable[[], float] = time.monotonic) -> None:
        self.done_at_start = done_at_start
        self.target = target
        self.clock = clock
        self.started = clock()

    def describe(self, done: int) -> str:
        elapsed = self.clock() - self.started
        text = f"{duration(elapsed)} elapsed"
        finished_here = done - self.done_at_start
        if finished_here > 0 and done < self.target:
            text += f" · ~{duration(elapsed / finished_here * (self.target - done))} left"
        return text


class Ticker:
    """Calls `tick()` every `interval` seconds on a daemon thread until stopped."""

    def __init__(self, tick: Callable[[], None], interval: float | None = None) -> None:
        import threading

        self.tick = tick
        self.interval = PROGRESS_INTERVAL if interval is None else interval
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._loop, name="csro-progress", daemon=True)

    def start(self) -> "Ticker":
        self.thread.start()
        return self

    def _loop(self) -> None:
        while not self.stopped.wait(self.interval):
            try:
                self.tick()
            except Exception:  # progress is optional; never take the run down
                return

    def stop(self) -> None:
        self.stopped.set()


# Width of rich output when stdout is piped or logged: wide enough that
# tables are not folded to 80 columns (a table is only as wide as it needs).
PIPED_WIDTH = 200


def pipe_aware_console(**options: Any) -> Any:
    """A rich Console whose broken pipe (`csro ... | head`) ends like print()'s.

    rich's own handler exits with 1; raising BrokenPipeError instead lets
    `csro_tui.cli.main` end every command the same way: quietly, with 141.
    Piped or logged, tables are laid out PIPED_WIDTH wide and messages (text,
    not tables) are printed whole, one line each, never wrapped at a width
    no terminal has.
    """
    class PipeAwareConsole(Console):
        def on_broken_pipe(self) -> None:
            self.quiet = True
            raise BrokenPipeError

        def print(self, *objects: Any, **kwargs: Any) -> None:  # type: ignore[override]
            if not self.is_terminal and "soft_wrap" not in kwargs and all(isinstance(o, (str, Text)) for o in objects):
                kwargs["soft_wrap"] = True
            super().print(*objects, **kwargs)

    piped = not options.get("stderr") and not sys.stdout.isatty()
    if piped and "width" not in options and "file" not in options:
        options["width"] = PIPED_WIDTH
    return PipeAwareConsole(**options)


def stdout_console() -> Any:
    """A rich Console for stdout: the terminal's width, or PIPED_WIDTH when piped."""
    return pipe_aware_console(width=None if sys.stdout.isatty() else PIPED_WIDTH)
