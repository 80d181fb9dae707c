"""The app's one door to the core (no textual import).

Every method here may block (it reads files, evaluates, or waits for the
engine), so the app calls them from thread workers only.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from csro_tui.tui import adapt
from csro_tui.tui.model import DashboardData, LaunchOptions, StartChoices

LLM_ORACLE_PREFIX = "llm"


class Backend:
    def __init__(self, sessions_dir: Path | str = "sessions") -> None:
        from csro_tui.sessions.store import SessionStore

        self.store = SessionStore(Path(sessions_dir))

    # ---------------------------------------------------------------- choices
    def choices(self) -> StartChoices:
        from csro_tui.oracles.registry import oracle_names

        games: list[str] = []
        try:
            from csro_tui.games.registry import list_games

            games = [g if isinstance(g, str) else g.name for g in list_games()]
        except ImportError:
            games = ["kuhn_poker", "leduc_poker", "rrps", "repeated_leduc"]
        solvers: list[str] = []
        try:
            from csro_tui.meta.solvers import SOLVERS

            solvers = list(SOLVERS)
        except ImportError:
            solvers = ["nash", "uniform"]
        oracles = oracle_names()
        return StartChoices(
            games=games,
            oracles=oracles,
            llm_oracles={o for o in oracles if o.startswith(LLM_ORACLE_PREFIX)},
            solvers=solvers,
            sessions=[(info.id, session_summary(info)) for info in self.store.list_sessions()],
        )

    # ---------------------------------------------------------------- recorded sessions
    def list_sessions(self) -> list[Any]:
        return self.store.list_sessions()

    def read_events(self, session_id: str) -> list[Any]:
        return self.store.read(session_id).events

    @staticmethod
    def dashboard_at(events: list[Any], step: int) -> DashboardData:
        """The dashboard after the first `step` events (the timeline)."""
        from csro_tui.sessions.state import fold

        return adapt.dashboard_data(fold(events[:step]))

    # ---------------------------------------------------------------- live runs
    def start_run(self, options: LaunchOptions, reviewer: Any, on_event: Callable[[Any], None]) -> "LiveRun":
        return LiveRun.start(self, options, reviewer, on_event)

    review_info = staticmethod(adapt.review_info)
    to_engine_decision = staticmethod(adapt.engine_decision)

    @staticmethod
    def describe_activity(event: Any) -> str:
        """What the engine is doing after `event`, for the status line."""
        kind = getattr(event, "TYPE", "")
        return {
            "iteration_started": "oracle working…",
            "proposal_created": "validating the proposal (sandboxed smoke run)…",
            "proposal_validated": "previewing against the population…",
            "proposal_previewed": "waiting for your review",
            "proposal_decided": "engine working…",
            "policy_added": "evaluating new payoff entries…",
            "payoffs_evaluated": "solving the meta-game…",
            "meta_solved": "computing metrics…",
            "iteration_finished": "idle",
        }.get(kind, "")


def session_summary(info: Any) -> str:
    if info.error:
        return f"unreadable: {info.error}"
    parts = [info.game, info.oracle, info.solver, f"{info.iterations} iterations", f"{info.population_size} policies"]
    if info.best_metric:
        parts.append(f"best {info.best_metric[0]} {info.best_metric[1]:.4f}")
    if info.closed:
        parts.append(info.closed)
    return " · ".join(p for p in parts if p)


class LiveRun:
    """A session the engine is running; filled in when the engine lands."""

    cancelled = False

    @classmethod
    def start(cls, backend: Backend, options: LaunchOptions, reviewer: Any, on_event: Callable[[Any], None]) -> "LiveRun":
        raise NotImplementedError("the engine is not available yet")
