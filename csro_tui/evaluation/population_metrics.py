"""Population metrics of the RRPS benchmark.

Against a population of M opponents with mean payoffs r_1..r_M (OpenSpiel's
`roshambo_population_example.py`, Lanctot et al. 2023):
PopReturn = mean(r), PopExpl = max(-r), AggScore = PopReturn - PopExpl.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from csro_tui.errors import CsroError


@dataclass
class PopulationMetrics:
    pop_return: float
    pop_expl: float
    agg_score: float
    per_opponent: dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict:
        return {
            "pop_return": self.pop_return,
            "pop_expl": self.pop_expl,
            "agg_score": self.agg_score,
            "per_opponent": dict(self.per_opponent),
        }


def agg_score_stderr(payoffs: dict[str, float], stderrs: dict[str, float]) -> float:
    """A conservative standard error of AggScore = mean(r) + min(r).

    Bounded as if every matchup's error were perfectly correlated (they may
    be: matchups played from the same seed share a policy's random moves),
    so mean(stderr) for PopReturn plus the stderr of the worst matchup.  It
    does not cover the downward bias of taking a minimum of noisy means,
    which shrinks as episodes grow.
    """
    if not payoffs:
        raise CsroError("population metrics need at least one opponent")
    worst = min(payoffs, key=lambda name: payoffs[name])
    errors = [float(stderrs.get(name, 0.0)) for name in payoffs]
    return sum(errors) / len(errors) + float(stderrs.get(worst, 0.0))


def population_metrics(payoffs: dict[str, float]) -> PopulationMetrics:
    """Metrics of one policy from its mean payoff against each opponent."""
    if not payoffs:
        raise CsroError("population metrics need at least one opponent")
    values = [float(value) for value in payoffs.values()]
    pop_return = sum(values) / len(values)
    pop_expl = max(-value for value in values)
    return PopulationMetrics(
        pop_return=pop_return,
        pop_expl=pop_expl,
        agg_score=pop_return - pop_expl,
        per_opponent={name: float(value) for name, value in payoffs.items()},
    )
