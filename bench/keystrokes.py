"""What one keystroke costs in the start form's text fields (issue 36: ~20 ms a character,
and keys typed at 20 a second went into the next field clicked).

    .venv/bin/python -m bench.keystrokes

The start form at 80x24 with an LLM oracle (its base URL and Model fields shown), run
headless; 40 printable keys are posted to the app at once, as a terminal delivers a burst,
and the time until the field holds all of them is divided by 40.  Ours (`OrderedInput`:
the field's text width changes without a layout of the whole form) and the baseline
(Textual's own `Input._watch_value`, which lays out the form per key) are measured in turn
in the same run, each ten times; the minimum is compared (the median is printed too).  Then
keys are sent at 20 a second and each one's time until it is in the field is measured.
Target: every key in the field well before the next one comes (50 ms), on this machine under load.
"""

from __future__ import annotations

import asyncio
import statistics
import tempfile
import time
from pathlib import Path

from bench.common import machine_line

KEYS = 40
REPEATS = 5
PACE = 0.05  # seconds between keys: 20 characters a second


async def _per_key(field: str, stock: bool) -> list[float]:
    from textual import events
    from textual.widgets import Input, Select

    from csro_tui.tui.app import CsroApp
    from csro_tui.tui.backend import Backend
    from csro_tui.tui.widgets.ordered_input import OrderedInput

    ours = OrderedInput.__dict__["_watch_value"]
    if stock:
        OrderedInput._watch_value = Input._watch_value
    try:
        with tempfile.TemporaryDirectory() as sessions:
            app = CsroApp(sessions_dir=Path(sessions), backend=Backend(Path(sessions)))
            async with app.run_test(size=(80, 24)) as pilot:
                while not (app.screen.query("#oracle") and app.screen.query_one("#oracle", Select).value is not Select.BLANK):
                    await pilot.pause(0.05)
                app.screen.query_one("#oracle", Select).value = "llm"
                await pilot.pause(0.3)
                box = app.screen.query_one(f"#{field}", Input)
                burst, paced = [], []
                for _ in range(REPEATS):
                    box.value = ""
                    box.focus()
                    await pilot.pause(0.3)
                    started = time.perf_counter()
                    for number in range(KEYS):
                        character = "abcdefghijklmnopqrstuvwxyz"[number % 26]
                        app.post_message(events.Key(character, character))
                    while len(box.value) < KEYS:
                        await asyncio.sleep(0.001)
                    burst.append((time.perf_counter() - started) / KEYS)
                    # 20 characters a second: how long each key takes to reach the field
                    box.value = ""
                    await pilot.pause(0.3)
                    for number in range(KEYS):
                        sent = time.perf_counter()
                        app.post_message(events.Key("x", "x"))
                        while len(box.value) <= number:
                            await asyncio.sleep(0.0005)
                        paced.append(time.perf_counter() - sent)
                        await asyncio.sleep(max(0.0, PACE - (time.perf_counter() - sent)))
                return burst, paced
    finally:
        OrderedInput._watch_value = ours


def main() -> None:
    print(machine_line())
    print("ms per key: a burst of 40 keys (time until all are in / 40, min and median of 10), and keys at "
          "20 a second (each key's time until it is in the field: median and 95th percentile of 400)")
    print(f"{'field':<10} {'':<8} {'ours':>22} {'Textual Input':>22} {'ratio':>7}")
    for field in ("model", "base-url"):
        ours, stock = ([], []), ([], [])
        for _ in range(2):  # interleaved, so a change in the machine's load hits both
            for runs, is_stock in ((ours, False), (stock, True)):
                burst, paced = asyncio.run(_per_key(field, stock=is_stock))
                runs[0].extend(burst)
                runs[1].extend(paced)
        a, b = [x * 1000 for x in ours[0]], [x * 1000 for x in stock[0]]
        print(f"{field:<10} {'burst':<8} {min(a):>9.2f} (med {statistics.median(a):6.2f}) "
              f"{min(b):>9.2f} (med {statistics.median(b):6.2f}) {min(b) / min(a):>6.1f}x")
        a, b = sorted(x * 1000 for x in ours[1]), sorted(x * 1000 for x in stock[1])
        p95 = lambda xs: xs[int(len(xs) * 0.95)]  # noqa: E731
        print(f"{field:<10} {'20/s':<8} {statistics.median(a):>9.2f} (p95 {p95(a):6.2f}) "
              f"{statistics.median(b):>9.2f} (p95 {p95(b):6.2f}) {statistics.median(b) / statistics.median(a):>6.1f}x")


if __name__ == "__main__":
    main()
