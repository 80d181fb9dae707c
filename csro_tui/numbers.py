"""Numbers as the CLI, the TUI, exports and reports show them: one helper, never "-0.0000".

A value that rounds to zero at the shown precision prints as zero with no
sign (`0.0000`, or `+0.0000` when a sign is asked for): `-0.0000` reads as
"slightly negative" and is only rounding noise.

`fixed` formats a figure; `number` is `fixed` with "± stderr" for sampled
figures; `plain_number` / `plain_numbers` give the values JSON and CSV
writers store (-0.0 made 0.0, NaN made None); `sparkline` draws a series in
block characters; `duration` and `rate_text` say how long work takes and how fast it goes.
"""

from __future__ import annotations

import math
from typing import Any


def fixed(value: float | None, digits: int = 4, *, sign: bool = False, missing: str = "-") -> str:
    """`value` with `digits` decimals (`+` on positives with `sign`); `missing` for None or NaN."""
    if value is None:
        return missing
    value = float(value)
    if math.isnan(value):
        return missing
    if round(value, digits) == 0:
        value = 0.0  # also turns -0.0 into 0.0
    return f"{value:+.{digits}f}" if sign else f"{value:.{digits}f}"


# How a standard error that cannot be measured prints: a figure from fewer than
# two seat-swapped pairs (one pair cannot measure its own noise) is "+0.5000 ± ?",
# never "± 0.0000"; NOT_MEASURABLE_NOTE says why, once, below a table that has one.
NOT_MEASURABLE = "?"
NOT_MEASURABLE_NOTE = ("± ?: measured on one seat-swapped pair (2 episodes), which cannot measure its own noise; "
                       "play 4 episodes or more for a standard error")


def number(value: float | None, digits: int = 4, *, signed: bool = False, stderr: float | None = None,
           measurable: bool = True) -> str:
    """`fixed(value)` ("-" if missing), with "± stderr" when one is given (sampled figures);
    "± ?" when `measurable` is False (a sampled figure whose error could not be measured)."""
    text = fixed(value, digits, sign=signed)
    if text != "-" and not measurable:
        return f"{text} ± {NOT_MEASURABLE}"
    if text != "-" and stderr is not None and not math.isnan(stderr):
        text += f" ± {fixed(stderr, digits)}"
    return text


def plain_number(value: Any) -> Any:
    """A float fit for JSON/CSV: -0.0 becomes 0.0, NaN becomes None; other values unchanged."""
    if isinstance(value, float):
        if math.isnan(value):
            return None
        return value + 0.0
    return value


def stored_number(value: float, decimals: int = 12, significant: int = 12) -> float:
    """A float as a CSV stores it: rounded to `decimals` places (float noise such as
    -1.4e-17 becomes 0.0, never -0.0) and then to `significant` digits."""
    value = round(float(value), decimals) + 0.0
    return float(f"{value:.{significant}g}") + 0.0


def plain_numbers(data: Any) -> Any:
    """`plain_number` through dicts, lists and tuples."""
    if isinstance(data, dict):
        return {key: plain_numbers(value) for key, value in data.items()}
    if isinstance(data, (list, tuple)):
        return [plain_numbers(value) for value in data]
    return plain_number(data)


SPARK_BLOCKS = "▁▂▃▄▅▆▇█"


def sparkline(values: list[float | None], width: int | None = None) -> str:
    """One block character per value, low to high (a space where a value is missing).

    With `width`, a longer series is first resampled to `width` characters,
    each the mean of its consecutive share of the values (missing ones left
    out; a space if all of a share are missing).
    """
    if width is not None and len(values) > max(width, 1):
        values = _resampled(values, max(width, 1))
    known = [v for v in values if v is not None and not math.isnan(v)]
    if not known:
        return ""
    low, high = min(known), max(known)
    span = high - low
    out = []
    for value in values:
        if value is None or math.isnan(value):
            out.append(" ")
        elif span <= 0:
            out.append(SPARK_BLOCKS[len(SPARK_BLOCKS) // 2])
        else:
            out.append(SPARK_BLOCKS[round((value - low) / span * (len(SPARK_BLOCKS) - 1))])
    return "".join(out)


def _resampled(values: list[float | None], width: int) -> list[float | None]:
    """`width` means of consecutive, near-equal shares of `values` (len(values) > width)."""
    out: list[float | None] = []
    for cell in range(width):
        share = values[cell * len(values) // width:(cell + 1) * len(values) // width]
        known = [v for v in share if v is not None and not math.isnan(v)]
        out.append(sum(known) / len(known) if known else None)
    return out


def counted(count: int, noun: str, plural: str | None = None) -> str:
    """"1 iteration", "2 iterations" ("1 policy", "2 policies" with plural="policies")."""
    return f"{count} {noun if count == 1 else (plural or noun + 's')}"


def ordinal(count: int) -> str:
    """1st, 2nd, 3rd, 4th, 11th, 12th, 13th, 21st."""
    suffix = "th" if 10 <= count % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(count % 10, "th")
    return f"{count}{suffix}"


def duration(seconds: float) -> str:
    """1h02m, 3m05s or 12s."""
    seconds = max(0, int(round(seconds)))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes:02d}m"
    if minutes:
        return f"{minutes}m{secs:02d}s"
    return f"{secs}s"


def rate_text(per_second: float) -> str:
    """0.42/s, 3.1/s or 15/s: two significant digits below 10, whole numbers above."""
    return f"{per_second:.2g}/s" if per_second < 10 else f"{per_second:.0f}/s"
