"""The app over the toy engine parts (tests/fakes.py), for the TUI's tests."""

from __future__ import annotations

from csro_tui.tui.app import CsroApp
from csro_tui.tui.backend import Backend
from tests.fakes import ToyEvaluator, best_member_solve, climbing_oracle, toy_policy


class ToySpec:
    name = "toy"

    def seed_policies(self) -> dict[str, str]:
        return {"weak": toy_policy(0.1)}


def toy_app(tmp_path, session: str | None = None):
    """The app over the toy engine parts; `session` opens that recorded session."""
    oracle = climbing_oracle(0.1)
    backend = Backend(
        tmp_path,
        engine_parts={"spec": ToySpec(), "oracle": oracle, "evaluator": ToyEvaluator(), "meta_solve": best_member_solve},
    )
    return CsroApp(session=session, sessions_dir=tmp_path, backend=backend), oracle
