"""A small line chart as SVG (no plotting library): the run's figure per iteration.

`line_chart_svg` draws one series (points joined by lines, a gap where a
value is missing) with optional ± error bars, labelled axes and ticks.
Written for `csro export`'s report; standalone SVG 1.1, no scripts.
`bands_chart_svg` (csro compare) draws on the same axes (`_Axes`).
"""

from __future__ import annotations

import math
from xml.sax.saxutils import escape

from csro_tui.numbers import number

WIDTH, HEIGHT = 640, 300
LEFT, RIGHT, TOP, BOTTOM = 70, 20, 40, 45
PLOT_WIDTH, PLOT_HEIGHT = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM


def _nice_ticks(low: float, high: float, count: int = 5) -> list[float]:
    """Round tick values covering [low, high]."""
    if high <= low:
        low, high = low - 1, high + 1
    raw = (high - low) / max(count - 1, 1)
    magnitude = 10 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in (1, 2, 2.5, 5, 10) if m * magnitude >= raw)
    start = math.floor(low / step) * step
    ticks = []
    value = start
    while value <= high + step * 1e-9:
        ticks.append(round(value, 10) + 0.0)
        value += step
    if ticks[-1] < high:
        ticks.append(ticks[-1] + step)
    return ticks


class _Axes:
    """The axes of a chart over iterations (line_chart_svg, bands_chart_svg): y
    ticks covering every low and high, the x range, values to pixels, and the
    SVG up to the data (background, title, grid, ticks, axes, their labels)."""

    def __init__(self, lows: list[float], highs: list[float], xs: list[int]) -> None:
        self.ticks = _nice_ticks(min(lows), max(highs)) if lows else [0.0, 1.0]
        self.y_min, self.y_max = self.ticks[0], self.ticks[-1]
        self.x_min, self.x_max = (min(xs), max(xs)) if xs else (0, 1)
        if self.x_max == self.x_min:
            self.x_max = self.x_min + 1

    def px(self, x: float) -> float:
        return LEFT + (x - self.x_min) / (self.x_max - self.x_min) * PLOT_WIDTH

    def py(self, y: float) -> float:
        return TOP + (self.y_max - y) / (self.y_max - self.y_min) * PLOT_HEIGHT

    def start_svg(self, title: str, *, x_label: str, y_label: str, height: int = HEIGHT) -> list[str]:
        """The chart's SVG before its data; `height` beyond HEIGHT is room for a legend below."""
        out = [
            f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" '
            f'viewBox="0 0 {WIDTH} {height}" font-family="sans-serif" font-size="12">',
            f'<rect width="{WIDTH}" height="{height}" fill="white"/>',
            f'<text x="{WIDTH / 2:.1f}" y="22" text-anchor="middle" font-size="14">{escape(title)}</text>',
        ]
        for tick in self.ticks:
            y = self.py(tick)
            out.append(f'<line x1="{LEFT}" y1="{y:.1f}" x2="{WIDTH - RIGHT}" y2="{y:.1f}" stroke="#e5e5e5"/>')
            out.append(f'<text x="{LEFT - 6}" y="{y + 4:.1f}" text-anchor="end">{escape(_tick_label(tick, self.ticks))}</text>')
        step = max(1, math.ceil((self.x_max - self.x_min) / 12))
        for x in range(int(self.x_min), int(self.x_max) + 1, step):
            out.append(f'<text x="{self.px(x):.1f}" y="{HEIGHT - BOTTOM + 16}" text-anchor="middle">{x}</text>')
        out.append(f'<line x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{HEIGHT - BOTTOM}" stroke="#333"/>')
        out.append(f'<line x1="{LEFT}" y1="{HEIGHT - BOTTOM}" x2="{WIDTH - RIGHT}" y2="{HEIGHT - BOTTOM}" stroke="#333"/>')
        out.append(f'<text x="{LEFT + PLOT_WIDTH / 2:.1f}" y="{HEIGHT - 8}" text-anchor="middle">{escape(x_label)}</text>')
        out.append(f'<text transform="translate(16 {TOP + PLOT_HEIGHT / 2:.1f}) rotate(-90)" text-anchor="middle">'
                   f'{escape(y_label)}</text>')
        return out


def line_chart_svg(title: str, xs: list[int], ys: list[float | None], *, y_label: str, x_label: str = "iteration",
                   errors: list[float | None] | None = None) -> str:
    """The SVG text of a line chart of ys over xs (None: no point)."""
    points = [(x, y, (errors[i] if errors else None)) for i, (x, y) in enumerate(zip(xs, ys))
              if y is not None and not math.isnan(y)]
    axes = _Axes([y - (e or 0) for _, y, e in points], [y + (e or 0) for _, y, e in points], xs)
    px, py = axes.px, axes.py
    out = axes.start_svg(title, x_label=x_label, y_label=y_label)
    for x, y, e in points:
        if e:
            out.append(f'<line x1="{px(x):.1f}" y1="{py(y - e):.1f}" x2="{px(x):.1f}" y2="{py(y + e):.1f}" '
                       f'stroke="#7aa6d6" stroke-width="2"/>')
    segment: list[str] = []
    segments = []
    known = {x: y for x, y, _ in points}
    for x in xs:
        if x in known:
            segment.append(f"{px(x):.1f},{py(known[x]):.1f}")
        elif segment:
            segments.append(segment)
            segment = []
    if segment:
        segments.append(segment)
    for seg in segments:
        if len(seg) > 1:
            out.append(f'<polyline points="{" ".join(seg)}" fill="none" stroke="#1f5fa8" stroke-width="2"/>')
    for x, y, e in points:
        tip = f"iteration {x}: {number(y, stderr=e)}"
        out.append(f'<circle cx="{px(x):.1f}" cy="{py(y):.1f}" r="3.5" fill="#1f5fa8"><title>{escape(tip)}</title></circle>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def _tick_label(value: float, ticks: list[float]) -> str:
    step = abs(ticks[1] - ticks[0]) if len(ticks) > 1 else 1.0
    # (a step of 2.5 needs its decimal: ticks -5, -2.5, 0, 2.5, not -5, -2, 0, 2)
    digits = max(0, min(4, -math.floor(math.log10(step)) + (0 if step >= 1 and step == int(step) else 1))) if step > 0 else 2
    return number(value, digits)


# ---------------------------------------------------------------- behaviour distance heat map (issue 22)

HEAT_CELL, HEAT_LEFT, HEAT_TOP, HEAT_MAX_SIDE = 28, 110, 60, 900


def _heat_colour(value: float) -> str:
    """0 (the same behaviour) dark blue, 1 (nothing alike) near white."""
    shade = max(0.0, min(1.0, value))
    red, green, blue = (int(31 + (247 - 31) * shade), int(95 + (247 - 95) * shade), int(168 + (250 - 168) * shade))
    return f"#{red:02x}{green:02x}{blue:02x}"


def heat_map_svg(title: str, labels: list[str], values: list[list[float]], *,
                 errors: list[list[float]] | None = None, note: str = "") -> str:
    """A square heat map of pairwise values in [0, 1] (behaviour distances), rows and
    columns labelled in the given order (ordered by the caller so clusters show as
    blocks); each cell's tooltip holds its value (± its error when given)."""
    n = len(labels)
    cell = max(8, min(HEAT_CELL, (HEAT_MAX_SIDE - HEAT_LEFT) // max(n, 1)))
    width = HEAT_LEFT + n * cell + 30
    height = HEAT_TOP + n * cell + 70
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="11">',
        f'<rect width="{width}" height="{height}" fill="white"/>',
        f'<text x="{width / 2:.1f}" y="22" text-anchor="middle" font-size="14">{escape(title)}</text>',
    ]
    for i, label in enumerate(labels):
        y = HEAT_TOP + i * cell + cell / 2 + 4
        out.append(f'<text x="{HEAT_LEFT - 6}" y="{y:.1f}" text-anchor="end">{escape(label[:16])}</text>')
        x = HEAT_LEFT + i * cell + cell / 2
        out.append(f'<text transform="translate({x:.1f} {HEAT_TOP - 6}) rotate(-45)">{escape(label[:16])}</text>')
        for j in range(n):
            value = values[i][j]
            tip = f"{labels[i]} vs {labels[j]}: {value:.3f}"
            if errors is not None and errors[i][j]:
                tip += f" ± {errors[i][j]:.3f}"
            out.append(f'<rect x="{HEAT_LEFT + j * cell}" y="{HEAT_TOP + i * cell}" width="{cell}" height="{cell}" '
                       f'fill="{_heat_colour(value)}" stroke="white"><title>{escape(tip)}</title></rect>')
    legend_y = HEAT_TOP + n * cell + 24
    for k in range(11):
        out.append(f'<rect x="{HEAT_LEFT + k * 16}" y="{legend_y}" width="16" height="10" fill="{_heat_colour(k / 10)}"/>')
    out.append(f'<text x="{HEAT_LEFT - 6}" y="{legend_y + 9}" text-anchor="end">same</text>')
    out.append(f'<text x="{HEAT_LEFT + 11 * 16 + 6}" y="{legend_y + 9}">different</text>')
    if note:
        out.append(f'<text x="{HEAT_LEFT}" y="{legend_y + 28}">{escape(note)}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


# Colours of the series in a chart of several (colour-blind safe, Okabe–Ito).
SERIES_COLOURS = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#F0E442", "#000000")


def bands_chart_svg(title: str, series: list[tuple[str, list[int], list[float], list[float | None]]], *,
                    y_label: str, x_label: str = "iteration", floor: float | None = None) -> str:
    """The SVG text of several lines over one x axis, each with a shaded band.

    `series` holds (label, xs, means, half-widths): one line per configuration
    through its means, and a band of ± half-width (a confidence interval
    across repeats; None: no band at that point), with a legend.  `floor`:
    the lowest value the figure can take (0 for exploitability), where
    bands are cut.  For
    `csro compare`: drawn here, as `line_chart_svg` is, so the project keeps one
    picture-making path and no plotting library to install.
    """
    def low(m: float, h: float | None) -> float:
        return m - (h or 0) if floor is None else max(floor, m - (h or 0))

    axes = _Axes([low(m, h) for _, _, means, halves in series for m, h in zip(means, halves)],
                 [m + (h or 0) for _, _, means, halves in series for m, h in zip(means, halves)],
                 [x for _, xs, _, _ in series for x in xs])
    px, py = axes.px, axes.py
    out = axes.start_svg(title, x_label=x_label, y_label=y_label, height=HEIGHT + 18 * len(series))  # + the legend
    for index, (label, xs, means, halves) in enumerate(series):
        colour = SERIES_COLOURS[index % len(SERIES_COLOURS)]
        banded = [(x, m, h) for x, m, h in zip(xs, means, halves) if h]
        if len(banded) > 1:
            upper = [f"{px(x):.1f},{py(m + h):.1f}" for x, m, h in banded]
            lower = [f"{px(x):.1f},{py(low(m, h)):.1f}" for x, m, h in reversed(banded)]
            out.append(f'<polygon points="{" ".join(upper + lower)}" fill="{colour}" fill-opacity="0.18" stroke="none"/>')
        if len(xs) > 1:
            line = " ".join(f"{px(x):.1f},{py(m):.1f}" for x, m in zip(xs, means))
            out.append(f'<polyline points="{line}" fill="none" stroke="{colour}" stroke-width="2"/>')
        for x, m, h in zip(xs, means, halves):
            tip = f"{label} · iteration {x}: {number(m)}" + (f" ± {number(h)}" if h else "")
            out.append(f'<circle cx="{px(x):.1f}" cy="{py(m):.1f}" r="3" fill="{colour}"><title>{escape(tip)}</title></circle>')
        y = HEIGHT + 4 + 18 * index
        out.append(f'<rect x="{LEFT}" y="{y}" width="14" height="10" fill="{colour}"/>')
        out.append(f'<text x="{LEFT + 20}" y="{y + 9}">{escape(label)}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def text_chart(series: list[tuple[str, list[int], list[float]]], *, width: int = 60, height: int = 12,
               marks: list[str] | None = None) -> list[str]:
    """Several series as lines of text for a terminal: one mark per series (A, B, ...; or
    `marks`, one letter each) at each point, '*' where marks meet, the y range on the left
    and the x range below."""
    points = [(x, y) for _, xs, ys in series for x, y in zip(xs, ys)]
    if not points:
        return []
    x_min, x_max = min(p[0] for p in points), max(p[0] for p in points)
    y_min, y_max = min(p[1] for p in points), max(p[1] for p in points)
    if y_max == y_min:
        y_min, y_max = y_min - 0.5, y_max + 0.5
    columns = max(2, min(width, (x_max - x_min) * 4 + 1 if x_max > x_min else 2))
    grid = [[" "] * columns for _ in range(height)]
    for index, (_, xs, ys) in enumerate(series):
        mark = marks[index] if marks is not None else chr(ord("A") + index % 26)
        for x, y in zip(xs, ys):
            col = round((x - x_min) / max(1, x_max - x_min) * (columns - 1))
            row = round((y_max - y) / (y_max - y_min) * (height - 1))
            grid[row][col] = mark if grid[row][col] in (" ", mark) else "*"
    top, bottom = number(y_max), number(y_min)
    pad = max(len(top), len(bottom))
    lines = []
    for row_index, row in enumerate(grid):
        label = top if row_index == 0 else bottom if row_index == height - 1 else ""
        lines.append(f"{label:>{pad}} │{''.join(row)}")
    lines.append(f"{'':>{pad}} └{'─' * columns}")
    lines.append(f"{'':>{pad}}  {x_min}{'':<{max(1, columns - len(str(x_min)) - len(str(x_max)))}}{x_max}")
    return lines
