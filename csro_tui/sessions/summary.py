"""Plain rows describing a session, shared by `csro run`, `replay` and `export`.

Presentation-free: each command renders these rows its own way (a live
rich table, a printed table, Markdown).
"""

from __future__ import annotations

from dataclasses import dataclass

from csro_tui.evaluation.population_metrics import population_metrics
from csro_tui.numbers import counted, number
from csro_tui.sessions.state import SessionState, headline_metric


@dataclass(frozen=True)
class IterationRow:
    iteration: int
    proposal: str  # name of the accepted (or last) proposal
    decision: str  # e.g. "accept", "reject → edit → accept", "rejected ×3"
    population_size: int
    meta_nash_conv: float | None
    metric_name: str
    metric_value: float | None
    accepted: str | None  # policy id
    # The new policy's expected payoff against the meta-strategy it answered
    # (its gain: > 0 means it beats the previous mixture); None without one.
    gain: float | None = None
    metric_stderr: float | None = None  # for sampled headline figures (benchmark AggScore)
    reason: str = ""  # first line of the last rejection's reason, when the iteration had one
    reason_event: int | None = None  # the event (seq) holding the full text

    @property
    def headline_text(self) -> str:
        """"exploitability 0.2500", "AggScore -3.1 ± 2.0", or "" (meta-NashConv has its own column)."""
        if not self.metric_name or self.metric_name == "meta-NashConv":
            return ""
        return f"{self.metric_name} {number(self.metric_value, stderr=self.metric_stderr)}"


@dataclass(frozen=True)
class Rejection:
    """A rejected proposal: the first line of why, and the event with the full text."""

    proposal_id: str
    iteration: int
    name: str
    decided_by: str
    reason: str  # first informative line
    event: int  # seq of the proposal_decided event in events.jsonl
    failure: str = ""  # first line of why validation or the smoke run failed ("" when it passed)

    @property
    def why(self) -> str:
        """The validation failure (when there was one), then the reviewer's words."""
        if self.failure and self.reason:
            return f"{self.failure} — {self.reason}"
        return self.failure or self.reason


@dataclass(frozen=True)
class MemberRow:
    id: str
    name: str
    origin: str
    parent: str | None
    iteration: int
    weight: float  # in the latest meta-strategy
    payoff_vs_meta: float | None  # expected payoff against the latest meta-strategy
    agg_score: float | None  # against the benchmark, where measured
    edited_by: str | None = None  # who edited the accepted code by hand, if anyone
    seat: int | None = None  # two populations: the seat whose population it belongs to

    @property
    def origin_text(self) -> str:
        """The origin, marked as the TUI marks it when a reviewer changed the oracle's code: "best-response ✎ tui"."""
        return f"{self.origin} ✎ {self.edited_by}" if self.edited_by else self.origin


def decision_text(state: SessionState, iteration: int) -> str:
    """The gate's story for one iteration."""
    it = state.iterations.get(iteration)
    if it is None:
        return ""
    steps: list[str] = []
    for proposal_id in it.proposals:
        proposal = state.proposals[proposal_id]
        decision = proposal.decision
        if decision is None:
            step = "pending"
        elif decision.note:
            step = "refused"
        else:
            step = decision.action
        # two populations: which seat each proposal was for
        steps.append(step if proposal.proposal.seat is None else f"s{proposal.proposal.seat} {step}")
    if it.oracle_failures:
        steps.insert(0, f"oracle failed ×{it.oracle_failures}")
    if not steps:
        return "seeds" if iteration == 0 else ("oracle finished" if it.finished else "")
    if it.finished and it.accepted is None and steps and all(s.split()[-1] in ("reject", "refused") for s in steps):
        return f"rejected ×{len(steps)}"
    return " → ".join(steps)


def first_line(text: str, limit: int = 100) -> str:
    """The informative line of a reason: the first, or a traceback's last (the exception)."""
    from csro_tui.text import one_line  # start-up time: importing it loads rich

    lines = [line.strip() for line in str(text).splitlines() if line.strip()]
    if not lines:
        return ""
    line = lines[-1] if lines[0].startswith("Traceback") else lines[0]
    more = len(lines) > 1
    text = one_line(line, limit)
    return text + (" …" if more and not text.endswith("…") else "")


def rejections(state: SessionState) -> list[Rejection]:
    """Every rejected proposal, in order (the reviewer's reason, or why the gate refused)."""
    found = []
    for proposal in state.proposals.values():
        decision = proposal.decision
        if decision is None or decision.action != "reject":
            continue
        found.append(Rejection(proposal_id=proposal.id, iteration=proposal.iteration, name=proposal.proposal.name,
                               decided_by=decision.decided_by, reason=first_line(decision.reason or decision.note),
                               event=decision.seq, failure=validation_failure(proposal)))
    return found


def validation_failure(proposal) -> str:
    """The first line of why a proposal failed validation or its smoke run; "" if it passed or was not checked."""
    validated = proposal.validation
    if validated is None or validated.valid:
        return ""
    if validated.issues:
        first = validated.issues[0]
        more = f" (+{len(validated.issues) - 1} more)" if len(validated.issues) > 1 else ""
        why = first_line(f"invalid: line {first.get('line', '?')}: {first.get('message', '')}") + more
    elif validated.failure is not None:
        why = first_line(validated.failure.summary())
    else:
        why = "invalid"
    repeat = getattr(validated, "duplicate_of", None)
    if repeat:
        why += f"; a repeat: same code as {repeat}"
    return why


def iteration_rows(state: SessionState) -> list[IterationRow]:
    rejections_by_iteration: dict[int, list[Rejection]] = {}
    for rejection in rejections(state):
        rejections_by_iteration.setdefault(rejection.iteration, []).append(rejection)
    rows = []
    for number in sorted(state.iterations):
        it = state.iterations[number]
        if not it.finished:
            continue
        metrics = state.metrics_for(number) if it.accepted is not None or number == 0 else None
        proposal = ""
        joined = [m.name for m in state.population if number > 0 and m.iteration == number]  # seeds: iteration 0
        if it.accepted is not None and len(joined) > 1:  # two populations: one per seat
            proposal = ", ".join(joined)
        elif it.accepted is not None:
            member = state.member(it.accepted)
            proposal = member.name if member else it.accepted
        elif it.proposals:
            proposal = state.proposals[it.proposals[-1]].proposal.name
        elif number == 0:
            proposal = ", ".join(dict.fromkeys(m.name for m in state.population if m.iteration == 0))
        headline = headline_metric(metrics) if metrics else None
        rejected = rejections_by_iteration.get(number, [])
        headline_stderr = None
        if headline and headline[0] == "AggScore":
            headline_stderr = ((metrics.benchmark or {}).get("meta") or {}).get("agg_score_stderr")
        rows.append(
            IterationRow(
                iteration=number,
                proposal=proposal,
                decision=decision_text(state, number),
                population_size=sum(1 for m in state.population if m.iteration <= number),
                meta_nash_conv=metrics.meta_nash_conv if metrics else None,
                metric_name=headline[0] if headline else "",
                metric_value=headline[1] if headline else None,
                accepted=it.accepted,
                gain=metrics.new_policy_payoff if metrics else None,
                metric_stderr=headline_stderr,
                reason=rejected[-1].why if rejected else "",
                reason_event=rejected[-1].event if rejected else None,
            )
        )
    return rows


def member_rows(state: SessionState) -> list[MemberRow]:
    weights = state.meta_strategy
    rows = []
    for member in state.population:
        value = None
        # two populations: against the other seat's mixture (its own seat's members are never its opponents)
        opponents = weights if member.seat is None else state.seat_strategy(1 - member.seat)
        total = sum(opponents.values())
        if total > 0:
            known = [(state.payoff(member.id, other), w) for other, w in opponents.items() if w > 0]
            if all(v is not None for v, _ in known):
                value = sum(v * w for v, w in known) / total
        bench = state.benchmark.get(member.id)
        agg = None
        if bench is not None and bench.per_bot:
            agg = population_metrics(bench.per_bot).agg_score
        rows.append(
            MemberRow(
                id=member.id,
                name=member.name,
                origin=member.origin,
                parent=member.parent,
                iteration=member.iteration,
                weight=weights.get(member.id, 0.0),
                payoff_vs_meta=value,
                agg_score=agg,
                edited_by=state.edited_by(member.id),
                seat=member.seat,
            )
        )
    return rows


@dataclass(frozen=True)
class GameRecord:
    """The person's record against one opponent over the games played by hand."""

    opponent: str
    games: int
    wins: int
    losses: int
    ties: int
    total: float  # the person's chips / points over those games

    def describe(self) -> str:
        total = 0.0 if abs(self.total) < 0.005 else self.total
        return f"{counted(self.games, 'game')}, won {self.wins}, lost {self.losses}, tied {self.ties}, total {total:+.2f}"


def seat_mixtures_text(state: SessionState, label, digits: int = 4, floor: float = 1e-9) -> str:
    """Two populations: the latest meta-strategy of each seat, "seat 0: label w, ...; seat 1: ...",
    heaviest first (`label(member)` names each, weights above `floor`)."""
    weights = state.meta_strategy

    def mixture(members) -> str:
        ranked = sorted(members, key=lambda m: -weights.get(m.id, 0.0))
        return ", ".join(f"{label(m)} {weights[m.id]:.{digits}f}" for m in ranked if weights.get(m.id, 0.0) > floor) or "-"

    return "; ".join(f"seat {seat}: {mixture(state.seat_members(seat))}" for seat in (0, 1))


def game_records(state: SessionState) -> list[GameRecord]:
    """Per opponent, from the session's `game_played` events (the person's side is `returns[seat]`)."""
    by_opponent: dict[str, list[float]] = {}
    for game in state.games:
        try:
            mine = float(game.returns[game.seat])
        except (IndexError, TypeError, ValueError):
            continue
        by_opponent.setdefault(str(game.opponent), []).append(mine)
    records = []
    for opponent, results in sorted(by_opponent.items()):
        wins = sum(1 for r in results if r > 0)
        losses = sum(1 for r in results if r < 0)
        records.append(GameRecord(opponent, len(results), wins, losses, len(results) - wins - losses, sum(results)))
    return records


def headline_series(rows: list[IterationRow]) -> tuple[str, list[float | None]]:
    """The figure to draw per iteration: the headline metric (exploitability or
    benchmark AggScore), or, where there is none (the meta-game's NashConv,
    0 under the Nash solver), each new policy's gain against the previous
    meta-strategy."""
    names = {row.metric_name for row in rows if row.metric_name}
    if len(names) == 1 and names & {"exploitability", "AggScore"}:
        name = names.pop()
        return name, [row.metric_value if row.metric_name == name else None for row in rows]
    return "gain vs previous meta-strategy", [row.gain for row in rows]


def informative_nash_conv(rows: list[IterationRow]) -> bool:
    """Whether the meta-game NashConv says anything (it is ~0 whenever the solver is exact)."""
    return any(row.meta_nash_conv is not None and abs(row.meta_nash_conv) >= 5e-5 for row in rows)
