"""Waiting for the engine thread in pilot tests (bounded; never a timing assertion)."""

from __future__ import annotations

from typing import Callable

MAX_WAIT_STEPS = 1200  # x 0.05 s of app time: a generous bound for slow machines


async def wait_until(pilot, condition: Callable[[], bool], what: str, steps: int = MAX_WAIT_STEPS) -> None:
    for _ in range(steps):
        if condition():
            return
        await pilot.pause(0.05)
    raise AssertionError(f"gave up waiting for {what}")


def notifications(app) -> list[str]:
    return [n.message for n in app._notifications]  # noqa: SLF001 - no public accessor


async def start_screen(pilot, app) -> None:
    """Wait for the start screen with its form filled in (a person sees it first)."""
    from textual.widgets import Select

    from csro_tui.tui.screens.start import StartScreen

    def ready() -> bool:
        screen = app.screen
        if not isinstance(screen, StartScreen):
            return False
        selects = [select for name in ("oracle", "solver") for select in screen.query(f"#{name}").results(Select)]
        return (
            len(selects) == 2
            and all(s.is_mounted and s.value is not Select.BLANK for s in selects)
            and screen.checked_game is not None
        )

    await wait_until(pilot, ready, "the start screen")
    await pilot.pause()


async def type_reason(pilot, app, reason: str) -> None:
    """Fill in the rejection reason and press enter (typing is tested in test_review_screen)."""
    from textual.widgets import Input

    from csro_tui.tui.screens.reject import RejectReasonScreen

    await wait_until(pilot, lambda: isinstance(app.screen, RejectReasonScreen), "the reason box")
    app.screen.query_one(Input).value = reason
    await pilot.press("enter")


async def engine_idle(pilot, app) -> None:
    """Wait until the engine worker is done and the dashboard is showing."""
    from csro_tui.tui.screens.dashboard import DashboardScreen

    await wait_until(pilot, lambda: not app._busy() and isinstance(app.screen, DashboardScreen), "the engine")


async def llm_session(pilot, app, base_url: str, oracle: str = "llm") -> None:
    """From the start form: an LLM session on Kuhn against `base_url` (a scripted server in
    tests), its seeds evaluated."""
    from textual.widgets import Input, Select

    await start_screen(pilot, app)
    app.screen.query_one("#oracle", Select).value = oracle
    await pilot.pause()
    app.screen.query_one("#model", Input).value = "scripted-model"
    app.screen.query_one("#base-url", Input).value = base_url
    await pilot.press("ctrl+n")
    await wait_until(pilot, lambda: app.live is not None and not app._busy(), "the seeds")
