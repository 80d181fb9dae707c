"""Per-iteration metrics, computed from the folded state (plus exploitability).

- meta-game NashConv: from the meta-solver.
- the new policy's expected payoff against the meta-strategy it answered
  (the one solved before it joined).
- exploitability of the meta-strategy mixture, for exact games.
- benchmark scores, for games measured against bots: the mixture's payoff
  against each bot is the weighted sum of its members' payoffs; PopReturn,
  PopExpl and AggScore of that, and of the best member (highest AggScore).
"""

from __future__ import annotations

from typing import Any

from csro_tui.evaluation.population_metrics import agg_score_stderr, population_metrics
from csro_tui.sessions.events import MetaSolved
from csro_tui.sessions.state import SessionState


def payoff_against(state: SessionState, policy_id: str, meta: MetaSolved | None) -> float | None:
    """Expected payoff of `policy_id` against `meta`'s mixture (None without one)."""
    if meta is None:
        return None
    total, weight_sum = 0.0, 0.0
    for member, weight in zip(meta.population, meta.strategy):
        value = state.payoff(policy_id, member)
        if value is None or weight <= 0:
            continue
        total += weight * value
        weight_sum += weight
    return total / weight_sum if weight_sum > 0 else None


def benchmark_scores(state: SessionState, weights: dict[str, float]) -> dict[str, Any] | None:
    """{"meta": scores of the mixture, "best_member": scores of the best member}."""
    measured = {pid: ev.per_bot for pid, ev in state.benchmark.items() if ev.per_bot and pid in weights}
    if not measured:
        return None
    bots = sorted(set.intersection(*(set(per_bot) for per_bot in measured.values())))
    if not bots:
        return None
    total = sum(weights[pid] for pid in measured)
    if total > 0:
        mixture = {bot: sum(weights[pid] * measured[pid][bot] for pid in measured) / total for bot in bots}
    else:
        mixture = {bot: sum(measured[pid][bot] for pid in measured) / len(measured) for bot in bots}

    # Per-bot stderr where recorded (older logs have none): a mixture's is
    # sqrt(sum (w_i se_i)^2), its members' benchmark matches being seeded apart.
    errors = {pid: state.benchmark[pid].per_bot_stderr for pid in measured}
    # One seat-swapped pair (2 episodes) gives no spread of pair means to
    # measure: no error is stated rather than a made-up one.
    have_errors = all(errors[pid] and all(bot in errors[pid] for bot in bots) and state.benchmark[pid].episodes >= 4
                      for pid in measured)
    mixture_errors = None
    if have_errors:
        shares = {pid: (weights[pid] / total if total > 0 else 1 / len(measured)) for pid in measured}
        mixture_errors = {bot: sum((shares[pid] * errors[pid][bot]) ** 2 for pid in measured) ** 0.5 for bot in bots}

    def scores(per_bot: dict[str, float], stderrs: dict[str, float] | None) -> dict[str, Any]:
        result = population_metrics({bot: per_bot[bot] for bot in bots})
        out = {
            "pop_return": result.pop_return,
            "pop_expl": result.pop_expl,
            "agg_score": result.agg_score,
            "per_bot": dict(result.per_opponent),
        }
        if stderrs is not None:
            out["agg_score_stderr"] = agg_score_stderr(dict(result.per_opponent), stderrs)
        return out

    member_scores = {pid: scores(per_bot, errors[pid] if have_errors else None) for pid, per_bot in measured.items()}
    best_id = max(member_scores, key=lambda pid: (member_scores[pid]["agg_score"], -state.ids.index(pid)))
    return {"meta": scores(mixture, mixture_errors), "best_member": {"id": best_id, **member_scores[best_id]}}
