""""Did you mean ...?" for every name the user types (oracles, solvers, seeds, games, bots, sessions)."""

from __future__ import annotations

import difflib
from typing import Iterable


def close_names(name: str, known: Iterable[str], limit: int = 3) -> list[str]:
    """Known names that look like `name`: similar spellings, then names containing it."""
    known = list(dict.fromkeys(known))
    lowered = {k.lower(): k for k in known}
    typed = name.lower()
    similar = [lowered[k] for k in difflib.get_close_matches(typed, list(lowered), n=limit, cutoff=0.6)]
    containing = [k for k in known if typed and (typed in k.lower() or k.lower() in typed)] if len(typed) >= 3 else []
    return list(dict.fromkeys(similar + containing))[:limit]


def did_you_mean(name: str, known: Iterable[str]) -> str:
    """" (did you mean X?)" or "" when nothing is close."""
    close = close_names(name, known)
    return f" (did you mean {' or '.join(close)}?)" if close else ""
