"""A small line chart as SVG (no plotting library): the run's figure per iteration.

`line_chart_svg` draws one series (points joined by lines, a gap where a
value is missing) with optional ± error bars, labelled axes and ticks.
Written for `csro export`'s report; standalone SVG 1.1, no scripts.
"""

from __future__ import annotations

import math
from xml.sax.saxutils import escape

from csro_tui.numbers import number

WIDTH, HEIGHT = 640, 300
LEFT, RIGHT, TOP, BOTTOM = 70, 20, 40, 45


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


def line_chart_svg(title: str, xs: list[int], ys: list[float | None], *, y_label: str, x_label: str = "iteration",
                   errors: list[float | None] | None = None) -> str:
    """The SVG text of a line chart of ys over xs (None: no point)."""
    points = [(x, y, (errors[i] if errors else None)) for i, (x, y) in enumerate(zip(xs, ys))
              if y is not None and not math.isnan(y)]
    lows = [y - (e or 0) for _, y, e in points]
    highs = [y + (e or 0) for _, y, e in points]
    ticks = _nice_ticks(min(lows), max(highs)) if points else [0.0, 1.0]
    y_min, y_max = ticks[0], ticks[-1]
    x_min, x_max = (min(xs), max(xs)) if xs else (0, 1)
    if x_max == x_min:
        x_max = x_min + 1
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def px(x: float) -> float:
        return LEFT + (x - x_min) / (x_max - x_min) * plot_w

    def py(y: float) -> float:
        return TOP + (y_max - y) / (y_max - y_min) * plot_h

    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
        f'viewBox="0 0 {WIDTH} {HEIGHT}" font-family="sans-serif" font-size="12">',
        f'<rect width="{WIDTH}" height="{HEIGHT}" fill="white"/>',
        f'<text x="{WIDTH / 2:.1f}" y="22" text-anchor="middle" font-size="14">{escape(title)}</text>',
    ]
    for tick in ticks:
        y = py(tick)
        out.append(f'<line x1="{LEFT}" y1="{y:.1f}" x2="{WIDTH - RIGHT}" y2="{y:.1f}" stroke="#e5e5e5"/>')
        out.append(f'<text x="{LEFT - 6}" y="{y + 4:.1f}" text-anchor="end">{escape(_tick_label(tick, ticks))}</text>')
    step = max(1, math.ceil((x_max - x_min) / 12))
    for x in range(x_min, x_max + 1, step):
        out.append(f'<text x="{px(x):.1f}" y="{HEIGHT - BOTTOM + 16}" text-anchor="middle">{x}</text>')
    out.append(f'<line x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{HEIGHT - BOTTOM}" stroke="#333"/>')
    out.append(f'<line x1="{LEFT}" y1="{HEIGHT - BOTTOM}" x2="{WIDTH - RIGHT}" y2="{HEIGHT - BOTTOM}" stroke="#333"/>')
    out.append(f'<text x="{LEFT + plot_w / 2:.1f}" y="{HEIGHT - 8}" text-anchor="middle">{escape(x_label)}</text>')
    out.append(f'<text transform="translate(16 {TOP + plot_h / 2:.1f}) rotate(-90)" text-anchor="middle">'
               f'{escape(y_label)}</text>')
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
    digits = max(0, min(4, -math.floor(math.log10(step)) + (0 if step >= 1 else 1))) if step > 0 else 2
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
