"""Fitness: expected payoff against the meta-strategy.

Screening uses the engine's preview (`context.preview`: sandboxed matches
against every member, the same seeds for every candidate of a proposal, so
candidates are compared on common random numbers).  In sampled games a few
preview episodes are noisy, so before a program is promoted to a proposal
the finalists are re-evaluated with more episodes and fresh seeds, through
the referee (`csro_tui.evaluation`, still in the sandbox), against the
members with positive weight; with the engine, as one batch through its
evaluator (`context.play_candidate`), so on its backend, local or Ray.
Exact games (Kuhn, Leduc) preview exactly and
are not re-evaluated.  With two populations the preview and `play_candidate`
are the engine's for the proposal's seat (the candidate in that seat, the
other seat's members against it); without `play_candidate` a seat's
finalists are not re-evaluated.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, field

from csro_tui.evaluation.participants import CodePolicy
from csro_tui.oracles.base import OracleContext
from csro_tui.oracles.candidates import SerialPreview, failure_text, preview_score, ranked_members


@dataclass
class Screening:
    score: float | None  # None: it failed
    per_member: dict[str, float] = field(default_factory=dict)
    failure: str | None = None


def mix_seed(*parts: object) -> int:
    """A stable 31-bit seed from the parts."""
    digest = hashlib.sha256("\x1f".join(map(str, parts)).encode("utf-8")).digest()
    return int.from_bytes(digest[:4], "big") & 0x7FFF_FFFF


class Fitness:
    """Screening by preview; re-evaluation of finalists in sampled games."""

    def __init__(self, context: OracleContext, *, reevaluation_episodes: int) -> None:
        self.context = context
        self.preview = SerialPreview(context)
        self.reevaluation_episodes = reevaluation_episodes

    def screen(self, source: str) -> Screening:
        preview = self.preview(source)
        score = preview_score(preview)
        if score is None:
            return Screening(None, failure=failure_text(preview))
        return Screening(score, dict(preview.per_member))

    @property
    def reevaluates(self) -> bool:
        """Whether `reevaluate` measures anything (sampled games with a game to play)."""
        spec = self.context.spec
        if self.context.seat is not None and self.context.play_candidate is None:
            # Seat-fixed matches come from the engine (`play_candidate` plays the seat); the
            # referee fallback below plays seats swapped, another game than the seat's.
            return False
        return self.reevaluation_episodes > 0 and not getattr(spec, "exact", True) and hasattr(spec, "load")

    def reevaluate(self, source: str) -> float | None:
        """Expected payoff over `reevaluation_episodes` fresh episodes per weighted member; None if it failed.

        Every finalist plays the same seeds, so their results compare fairly.
        """
        if not self.reevaluates:
            return None
        from csro_tui.evaluation.referee import play_match  # start-up time: importing it loads numpy, pyspiel

        members = [(m, w) for m, w in ranked_members(self.context) if w > 0] or [
            (m, 1.0) for m in self.context.population
        ]
        total = sum(w for _, w in members)
        seeds = [mix_seed(self.context.seed, "reevaluate", member.id) for member, _ in members]
        if self.context.play_candidate is not None:
            # One batch through the engine's evaluator (its backend: local or Ray);
            # the same matches as below, so the same results.
            if self.context.cancel.is_set():
                return None
            results = self.context.play_candidate(
                source, [(member, seed) for (member, _), seed in zip(members, seeds)], self.reevaluation_episodes
            )
        else:
            results = []
            for (member, _), seed in zip(members, seeds):
                if self.context.cancel.is_set():
                    return None
                results.append(play_match(
                    self.context.spec,
                    CodePolicy("candidate", source),
                    CodePolicy(member.id, member.source),
                    episodes=self.reevaluation_episodes,
                    seed=seed,
                ))
        value = 0.0
        for (_, weight), result in zip(members, results):
            if result.failure is not None or not math.isfinite(result.mean):
                return None
            value += weight * result.mean
        return value / total if total > 0 else None
