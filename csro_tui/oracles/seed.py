"""The seed oracle: adds the game's hand-written seed policies one at a time.

Each iteration it proposes the seed policy, not yet in the population, that
earns the most against the current meta-strategy - a cheap, LLM-free way to
grow a population, and a baseline for the other oracles.

A seed the reviewer rejected earlier in the session is not proposed again
(the code would be the same, so the same reason would hold); the next best
seed is. When every seed is in the population or was rejected, there is
nothing left to propose: `propose` raises `SeedsExhausted` (an `OracleExhausted`) rather than
proposing a duplicate, which would only add a copy of an existing row to
the meta-game.  The engine reports it as the oracle having finished.

With two populations (`OracleContext.seat`) it proposes for that seat: the
best seed not yet in the seat's own population, ranked against the other
seat's mixture (the engine's preview plays it in that seat), skipping seeds
rejected for that seat.  A seed may join both populations.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from csro_tui.errors import ConfigError, CsroError
from csro_tui.evaluation.participants import CodePolicy
from csro_tui.oracles.base import OracleContext
from csro_tui.oracles.registry import OracleExhausted
from csro_tui.records import PolicyRecord, Proposal

# Episodes per (candidate, member) pair when no preview is available; seeds
# are ranked only roughly, the engine's own preview measures the winner.
FALLBACK_EPISODES = 200


class SeedsExhausted(OracleExhausted):
    """Every seed policy of the game is already in the population."""


@dataclass(frozen=True)
class SeedScore:
    name: str
    expected_payoff: float | None  # None when it could not be evaluated
    note: str = ""


class SeedOracle:
    """Proposes the best seed policy that is not yet in the population."""

    name = "seed"

    def __init__(self, episodes: int = FALLBACK_EPISODES) -> None:
        self.episodes = episodes

    def propose(self, context: OracleContext) -> Proposal:
        seeds = context.spec.seed_policies()
        if not seeds:
            raise SeedsExhausted(f"{context.spec.name} has no seed policies")
        remaining = {
            name: source
            for name, source in sorted(seeds.items())
            if not _in_population(name, source, context.own_members)
        }
        population = "the population" if context.seat is None else f"the population of {context.seat_words()}"
        if not remaining:
            raise SeedsExhausted(
                f"all {len(seeds)} seed policies of {context.spec.name} are in {population}"
            )
        rejected = {proposal.source.strip() for proposal, _ in context.seat_rejections()}
        untried = {name: source for name, source in remaining.items() if source.strip() not in rejected}
        if not untried:
            raise SeedsExhausted(
                f"every seed policy of {context.spec.name} not in {population} was rejected earlier "
                f"({', '.join(remaining)})"
            )
        remaining = untried
        if not context.population:
            name = next(iter(remaining))
            return Proposal(
                source=remaining[name],
                oracle=self.name,
                name=name,
                rationale=(
                    f"The population is empty: first seed policy by name, {name} "
                    f"({len(remaining) - 1} other seeds remain)."
                ),
                seat=context.seat,
            )
        scores = []
        for name, source in remaining.items():
            if context.cancel.is_set():  # each preview plays matches; stop between them
                raise CsroError("seed oracle cancelled")
            scores.append(self._score(context, name, source))
        ranked = [s for s in scores if s.expected_payoff is not None]
        if not ranked:
            reasons = "; ".join(f"{s.name}: {s.note}" for s in scores)
            raise CsroError(f"no seed policy could be evaluated ({reasons})")
        # Highest expected payoff; among equals, the first name.
        best = max(ranked, key=lambda s: s.expected_payoff)
        return Proposal(
            source=remaining[best.name],
            oracle=self.name,
            name=best.name,
            rationale=_rationale(best, scores, context.seat_words()),
            seat=context.seat,
        )

    def _score(self, context: OracleContext, name: str, source: str) -> SeedScore:
        if context.preview is not None:
            preview = context.preview(source)
            if preview.failure is not None:
                return SeedScore(name, None, preview.failure.summary())
            return SeedScore(name, float(preview.expected_payoff))
        return SeedScore(name, self._play_against_meta_strategy(context, name, source))

    def _play_against_meta_strategy(self, context: OracleContext, name: str, source: str) -> float:
        """Sampled payoff against the meta-strategy, through the referee (seats swapped: one population)."""
        from csro_tui.evaluation.referee import play_match  # start-up time: importing it loads numpy, pyspiel

        if context.seat is not None:
            # Seat-fixed matches are the engine's (its preview plays the seat); this fallback
            # plays seats swapped, which would rank seeds for the wrong game.
            raise CsroError("the seed oracle needs the engine's preview to rank seeds for a seat")
        candidate = CodePolicy(name, source)
        expected = 0.0
        for member, weight in zip(context.population, _normalised(context.meta_strategy)):
            if weight <= 0:
                continue
            result = play_match(
                context.spec,
                candidate,
                CodePolicy(member.name, member.source),
                episodes=self.episodes,
                seed=context.seed,
            )
            if result.failure is not None:
                raise CsroError(f"seed {name} against {member.name}: {result.failure.summary()}")
            expected += weight * result.mean
        return expected


def _in_population(name: str, source: str, population: Sequence[PolicyRecord]) -> bool:
    """A seed counts as in when its exact code is, or it was added as that seed."""
    return any(
        member.source.strip() == source.strip()
        or (member.origin == SeedOracle.name and member.name == name)
        for member in population
    )


def _normalised(weights: Sequence[float]) -> list[float]:
    total = sum(w for w in weights if w > 0)
    return [max(w, 0.0) / total for w in weights] if total > 0 else [0.0] * len(weights)


def _rationale(best: SeedScore, scores: Sequence[SeedScore], seat: str = "") -> str:
    def describe(score: SeedScore) -> str:
        if score.expected_payoff is None:
            return f"{score.name} (failed: {score.note})"
        return f"{score.name} {score.expected_payoff:+.4f}"

    others = sorted(
        (s for s in scores if s is not best),
        key=lambda s: (s.expected_payoff is None, -(s.expected_payoff or 0.0), s.name),
    )
    text = (
        (f"For {seat}, against the other seat's meta-strategy. " if seat else "")
        + f"Best remaining seed against the meta-strategy: {best.name}, "
        f"expected payoff {best.expected_payoff:+.4f}."
    )
    if others:
        text += " Others: " + ", ".join(describe(s) for s in others) + "."
    return text


def make_seed_oracle(config: Mapping[str, Any] | None = None) -> SeedOracle:
    """Registry factory; `config["episodes"]` sets the fallback sample size."""
    episodes = (config or {}).get("episodes", FALLBACK_EPISODES)
    if not isinstance(episodes, int) or isinstance(episodes, bool) or episodes < 1:
        raise ConfigError(f"seed oracle: episodes must be a positive integer, not {episodes!r}")
    return SeedOracle(episodes=episodes)
