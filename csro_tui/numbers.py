"""Numbers as the CLI, exports and reports show them: one helper, no "-0.0".

`number(value)` formats a figure for text (rounded first, so -0.00001 reads
"0.0000", never "-0.0000"; None and NaN read "-"), with "± stderr" for
sampled figures; `plain_number(value)` and `plain_numbers(data)` give the
values JSON and CSV writers store (negative zero made zero, NaN made None).
"""

from __future__ import annotations

import math
from typing import Any


def number(value: float | None, digits: int = 4, *, signed: bool = False, stderr: float | None = None) -> str:
    """`value` to `digits` decimals ("-" if missing), with "± stderr" when one is given."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    rounded = round(float(value), digits) + 0.0  # + 0.0 turns -0.0 into 0.0
    text = f"{rounded:+.{digits}f}" if signed else f"{rounded:.{digits}f}"
    if stderr is not None and not math.isnan(stderr):
        text += f" ± {round(float(stderr), digits) + 0.0:.{digits}f}"
    return text


def plain_number(value: Any) -> Any:
    """A float fit for JSON/CSV: -0.0 becomes 0.0, NaN becomes None; other values unchanged."""
    if isinstance(value, float):
        if math.isnan(value):
            return None
        return value + 0.0
    return value


def plain_numbers(data: Any) -> Any:
    """`plain_number` through dicts, lists and tuples."""
    if isinstance(data, dict):
        return {key: plain_numbers(value) for key, value in data.items()}
    if isinstance(data, (list, tuple)):
        return [plain_numbers(value) for value in data]
    return plain_number(data)


SPARK_BLOCKS = "▁▂▃▄▅▆▇█"


def sparkline(values: list[float | None]) -> str:
    """One block character per value, low to high (a space where a value is missing)."""
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
