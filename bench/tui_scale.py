"""The workbench on a large session (issue 36): the TUI headless (`App.run_test`) on a
200-member Leduc session, this tree's code beside a baseline tree's (main's checkout) in
one run, each in its own process with its own `PYTHONPATH`.

    .venv/bin/python -m bench.tui_scale                       # a generated 200-member session
    .venv/bin/python -m bench.tui_scale --sessions DIR        # a real one (e.g. the engine's, 200 iterations)
    .venv/bin/python -m bench.tui_scale --baseline /work/main --timeout 120

Figures (seconds; the minimum over the repeats, the median beside it):
  open      the timeline's first paint: its last step's dashboard shown
  step ←    one step back (the dashboard shown for it); "cpu": this process's CPU seconds for it
  PgUp      the previous iteration
  End       back to the last step
  quit      ctrl+q after 140 PgUp held down (30 a second): until the app has exited
  resume    R: until the live dashboard shows the session's members (first paint)
  diversity b: until the diversity view shows its distances (again: opened a second time)
Targets: step ≤ 0.15, resume ≤ 2, diversity ≤ 3, quit ≤ 1.  A figure a baseline could not
reach within --timeout prints as "> N".  The session is copied before R (resuming appends).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TARGETS = {"step ←": 0.15, "PgUp": 0.15, "End": 0.15, "open": None, "quit": 1.0, "resume": 2.0, "diversity": 3.0,
           "diversity again": 3.0, "step ← cpu": None, "PgUp cpu": None, "End cpu": None}
# "cpu": the process's CPU seconds per step (on a loaded machine its wall time is mostly other processes')
QUEUED_KEYS = 140


async def _until(pilot, condition, timeout: float) -> float:
    """Seconds until `condition()` holds (checked every 10 ms of app time); inf past `timeout`."""
    start = time.perf_counter()
    while not condition():
        if time.perf_counter() - start > timeout:
            return float("inf")
        await pilot.pause(0.01)
    return time.perf_counter() - start


def _shown_step(screen) -> int | None:
    """The step whose dashboard is shown (this tree: `shown_step`; older code: the bar's
    "step N/", written only once its dashboard was shown)."""
    if hasattr(screen, "shown_step"):
        return screen.shown_step
    from textual.widgets import Static

    try:
        bar = str(screen.query_one("#timeline-bar", Static).render())
    except Exception:  # noqa: BLE001 - not mounted yet
        return None
    return int(bar.split()[1].split("/")[0]) if bar.startswith("step ") else None


GROUPS = {"steps": ("open", "step ←", "PgUp", "End", "step ← cpu", "PgUp cpu", "End cpu"), "resume": ("resume",),
          "diversity": ("diversity", "diversity again"), "quit": ("quit",)}


async def _opened(app, pilot, timeout: float):
    await _until(pilot, lambda: getattr(app.screen, "events", None) and _shown_step(app.screen) == len(app.screen.events), timeout)
    return app.screen


async def _measure(sessions: Path, session_id: str, timeout: float, repeats: int, groups: list[str]) -> dict[str, list[float]]:
    """Each group in an app of its own (a diversity view still profiling must not slow the next figure)."""
    from textual import events

    from csro_tui.tui.app import CsroApp
    from csro_tui.tui.screens.dashboard import DashboardScreen

    figures: dict[str, list[float]] = {name: [] for group in groups for name in GROUPS[group]}
    for group in groups:
        app = CsroApp(session=session_id, sessions_dir=sessions)
        try:
            async with app.run_test(size=(160, 48)) as pilot:
                start = time.perf_counter()
                screen = await _opened(app, pilot, timeout)
                if group == "steps":
                    figures["open"].append(time.perf_counter() - start)
                    last = len(screen.events)
                    for _ in range(repeats):
                        for key, name in (("left", "step ←"), ("pageup", "PgUp"), ("end", "End")):
                            before = _shown_step(screen)
                            start, cpu = time.perf_counter(), time.process_time()
                            await pilot.press(key)
                            target = screen.step
                            if target == before:
                                continue
                            await _until(pilot, lambda: _shown_step(screen) == target, timeout)
                            figures[name].append(time.perf_counter() - start)
                            figures[name + " cpu"].append(time.process_time() - cpu)
                        await _until(pilot, lambda: _shown_step(screen) == last, timeout)
                elif group == "diversity":
                    for name in GROUPS["diversity"]:  # again: the profiles computed the first time are reused
                        start = time.perf_counter()
                        await pilot.press("b")
                        shown = lambda: "Behaviour distance" in _text(app.screen, "#diversity-header")  # noqa: E731
                        await _until(pilot, shown, timeout)
                        figures[name].append(time.perf_counter() - start if shown() else float("inf"))
                        await pilot.press("escape")
                        await _until(pilot, lambda: app.screen is screen, timeout)
                elif group == "resume":
                    start = time.perf_counter()
                    await pilot.press("R")
                    painted = lambda: isinstance(app.screen, DashboardScreen) and len(app.screen.data.members) > 1  # noqa: E731
                    await _until(pilot, painted, timeout)
                    figures["resume"].append(time.perf_counter() - start if painted() else float("inf"))
                elif group == "quit":  # PgUp held down: keys at auto-repeat's 30 a second, then ctrl+q
                    for _ in range(QUEUED_KEYS):
                        app.post_message(events.Key("pageup", None))
                        await asyncio.sleep(1 / 30)
                    app.post_message(events.Key("ctrl+q", None))
                    start = time.perf_counter()
                    while app.is_running and time.perf_counter() - start < timeout:
                        await asyncio.sleep(0.01)
                    figures["quit"].append(time.perf_counter() - start if not app.is_running else float("inf"))
        except Exception as error:  # noqa: BLE001 - older code crashed under the queue of keys
            print(f"{group}: the app raised {type(error).__name__}: {one_line(error)}", file=sys.stderr)
            for name in GROUPS[group]:
                figures[name] = figures[name] or [float("inf")]
    return figures


def one_line(error: Exception) -> str:
    return " ".join(str(error).split())[:200]


def _text(screen, selector: str) -> str:
    try:
        return str(screen.query_one(selector).render())
    except Exception:  # noqa: BLE001 - not there (yet, or any more)
        return ""


def child(sessions: str, session_id: str, timeout: float, repeats: int, groups: str) -> None:
    figures = asyncio.run(_measure(Path(sessions), session_id, timeout, repeats, groups.split(",")))
    print(json.dumps({k: [x if x != float("inf") else None for x in v] for k, v in figures.items()}))


def _run_tree(tree: Path, sessions: Path, session_id: str, timeout: float, repeats: int, groups: str) -> dict:
    copy = Path(tempfile.mkdtemp(prefix="tui-scale-"))
    shutil.copytree(sessions / session_id, copy / session_id)
    # the tree's csro_tui, and this file loaded by its path (main's tree has a bench/ without it):
    # nothing of this tree on the child's path
    env = dict(os.environ, PYTHONPATH=str(tree))
    code = ("import importlib.util, sys; spec = importlib.util.spec_from_file_location('tui_scale_bench', sys.argv[1]); "
            "bench = importlib.util.module_from_spec(spec); spec.loader.exec_module(bench); "
            "import csro_tui; print('csro_tui from', csro_tui.__file__, file=sys.stderr); "
            "bench.child(sys.argv[2], sys.argv[3], float(sys.argv[4]), int(sys.argv[5]), sys.argv[6])")
    try:
        result = subprocess.run([sys.executable, "-c", code, str(Path(__file__).resolve()), str(copy), session_id, str(timeout),
                                 str(repeats), groups],
                                env=env, cwd=tree, capture_output=True, text=True, timeout=timeout * 12 + 300)
    except subprocess.TimeoutExpired:
        return {}
    finally:
        shutil.rmtree(copy, ignore_errors=True)
    lines = [line for line in result.stdout.splitlines() if line.startswith("{")]
    if not lines:
        print(f"{tree}: no figures ({result.returncode}): {result.stderr.strip().splitlines()[-1:] }", file=sys.stderr)
        return {}
    for line in result.stderr.splitlines():
        if ": the app raised" in line or line.startswith("csro_tui from"):
            print(f"{tree}: {line}", file=sys.stderr)
    return json.loads(lines[-1])


def _cell(values: list, timeout: float) -> str:
    if not values:
        return "–"
    if any(v is None for v in values):
        return f"> {timeout:g}"
    return f"{min(values):.3f} ({statistics.median(values):.3f})"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", help="a sessions directory holding the session (default: a generated one)")
    parser.add_argument("--session", help="the session's id (default: the only one, or the generated one)")
    parser.add_argument("--members", type=int, default=200)
    parser.add_argument("--baseline", default="/work/main", help="the baseline tree ('' for none)")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds before a figure is given up")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--only", default="steps,resume,quit,diversity", help="figure groups, comma-separated: " + ",".join(GROUPS))
    args = parser.parse_args(argv)
    here = Path(__file__).resolve().parent.parent
    if args.sessions:
        sessions = Path(args.sessions)
        session_id = args.session or next(p.name for p in sessions.iterdir() if (p / "events.jsonl").exists())
    else:
        sys.path.insert(0, str(here))
        from tests.tui.large_session import write_large_session

        sessions = Path(tempfile.mkdtemp(prefix="tui-scale-session-"))
        session_id = write_large_session(sessions, args.members)
    print(f"cores {os.cpu_count()}, load {' '.join(f'{x:.2f}' for x in os.getloadavg())}; session {session_id}")
    trees = [("ours", here)] + ([("baseline", Path(args.baseline))] if args.baseline else [])
    results = {name: _run_tree(tree, sessions, session_id, args.timeout, args.repeats, args.only) for name, tree in trees}
    print(f"{'what':10} {'target':>7} " + " ".join(f"{name + ' s (median)':>22}" for name, _ in trees) + "   ratio")
    for what, target in TARGETS.items():
        if not any(what in GROUPS[group] for group in args.only.split(",")):
            continue
        cells = [_cell(results[name].get(what, []), args.timeout) for name, _ in trees]
        ours = [v for v in results["ours"].get(what, []) if v is not None]
        base = results.get("baseline", {}).get(what, [])
        ratio = ""
        if ours and base:
            ratio = f"> {args.timeout / min(ours):.0f}x" if None in base else f"{min(base) / min(ours):.0f}x"
        holds = "" if target is None or not ours else ("  holds" if min(ours) <= target else "  missed")
        print(f"{what:10} {'' if target is None else target:>7} " + " ".join(f"{c:>22}" for c in cells) + f"   {ratio}{holds}")
    print(f"(load after: {' '.join(f'{x:.2f}' for x in os.getloadavg())})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
