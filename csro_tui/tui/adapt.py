"""From the core's objects to what the screens show (no textual import).

`dashboard_data` turns a `SessionState` (the fold of a session's events) into
a `DashboardData`; `event_line` gives an event its line in the event log
(sequence number, never a clock, so snapshots are stable); `review_info`
turns the engine's `ReviewRequest` into a `ReviewInfo`; `engine_decision`
turns the person's choice into the engine's `Decision`.
"""

from __future__ import annotations

import math
from typing import Any

from csro_tui.engine.gate import expected_stderr
from csro_tui.evaluation.population_metrics import agg_score_stderr, population_metrics
from csro_tui.numbers import counted, number
from csro_tui.records import Decision
from csro_tui.sessions.review import review_request
from csro_tui.sessions.state import headline_metric
from csro_tui.text import clean_text, one_line
from csro_tui.tui.model import Cell, DashboardData, Member, ReviewDecision, ReviewInfo

REGENERATE_REASON = "regenerate: the reviewer asked for a different proposal"


def _num(value: Any) -> float | None:
    try:
        value = float(value)
    except (TypeError, ValueError):
        return None
    return value if math.isfinite(value) else None


class PayoffCells:
    """The payoff matrix's cells of the states a caller shows one after another (the live
    run's, the timeline's steps): each payoff record becomes its two cells once, and the
    matrix is made again only when the state's payoffs or members changed (a 200-member
    session has 20,000 records; making the matrix again for every event took ~0.3 s).
    The matrices it returns are shared between dashboards: nothing may change them.  The
    last KEPT matrices are kept: the timeline's steps back and forth between iterations
    (PgUp, End) find theirs made (~0.15 s each for 201 Leduc members)."""

    KEPT = 8

    def __init__(self) -> None:
        self._made: dict[int, tuple[Any, Cell | None, Cell | None]] = {}  # id(record) -> (record, cell, mirror)
        self._matrices: dict[tuple[int, tuple[str, ...]], dict[tuple[str, str], Cell]] = {}  # oldest first

    def matrix(self, state: Any, populations: int) -> dict[tuple[str, str], Cell]:
        key = (getattr(state, "payoff_updates", -1), tuple(state.ids))
        if key[0] >= 0 and key in self._matrices:
            self._matrices[key] = self._matrices.pop(key)  # the newest
            return self._matrices[key]
        payoffs: dict[tuple[str, str], Cell] = {}
        for (row, col), entry in state.payoffs.items():
            made = self._made.get(id(entry))
            if made is None or made[0] is not entry:  # (an id is reused only once its record is gone)
                made = self._made[id(entry)] = (entry, *_cells(entry))
            _, cell, mirror = made
            if cell is None or mirror is None:
                continue
            payoffs[(row, col)] = cell
            payoffs.setdefault((col, row), mirror)
        if populations == 1:
            for policy_id in state.ids:  # a policy against itself is 0 by symmetry (never evaluated)
                payoffs.setdefault((policy_id, policy_id), Cell(0.0, 0.0, 0, True, self_play=True))
        if key[0] >= 0:
            self._matrices[key] = payoffs
            while len(self._matrices) > self.KEPT:
                del self._matrices[next(iter(self._matrices))]
        return payoffs


def dashboard_data(state: Any, log: list[str] | None = None, cells: PayoffCells | None = None) -> DashboardData:
    """The dashboard of a session state (live or at a step of its timeline).

    `log` is the event log's lines when the caller keeps them already; `cells` the payoff
    cells it keeps between calls (`PayoffCells`).
    """
    started = state.started
    weights = state.meta_strategy
    populations = session_populations(state)
    seats = member_seats(state) if log is None else {}
    payoffs = (cells or PayoffCells()).matrix(state, populations)
    members = []
    # whom each member plays, those with weight only: the other seat's population (two
    # populations), else everyone (a 200-member session: 35 with weight, not 200, per member)
    weighted = {seat: [(m.id, weights[m.id]) for m in state.population
                       if weights.get(m.id, 0.0) > 0 and (seat is None or getattr(m, "seat", None) == 1 - seat)]
                for seat in (None, 0, 1)}
    for policy in state.population:
        scores: dict[str, float] = {}
        stderr: dict[str, float] = {}  # sampled scores only, with the review's "±"
        seat = getattr(policy, "seat", None)
        row = [(other, payoffs.get((policy.id, other)), w)
               for other, w in weighted[seat if populations == 2 and seat in (0, 1) else None]]
        if state.meta is not None and all(c is not None for _, c, w in row):
            scores["vs meta"] = sum(c.mean * w for _, c, w in row if c is not None)
            sampled = {other: c.stderr for other, c, w in row if c is not None and not c.exact}
            if sampled:
                stderr["vs meta"] = expected_stderr(sampled, weights)
        bench = state.benchmark.get(policy.id)
        if bench is not None and bench.per_bot:
            per_bot = {bot: v for bot, v in ((b, _num(x)) for b, x in bench.per_bot.items()) if v is not None}
            if per_bot:
                scores["AggScore"] = population_metrics(per_bot).agg_score
                if bench.per_bot_stderr:
                    stderr["AggScore"] = agg_score_stderr(per_bot, bench.per_bot_stderr)
        members.append(
            Member(
                id=policy.id,
                name=policy.name,
                origin=policy.origin,
                parent=policy.parent,
                weight=weights.get(policy.id, 0.0),
                source=policy.source,
                iteration=policy.iteration,
                scores=scores,
                edited_by=state.edited_by(policy.id),
                score_stderr=stderr,
                seat=getattr(policy, "seat", None) if populations == 2 else None,
            )
        )
    history: list[tuple[int, float]] = []
    metric_name = ""
    for metrics in state.metrics:
        headline = headline_metric(metrics)
        if headline is None or _num(headline[1]) is None:
            continue
        if metric_name and headline[0] != metric_name:
            history = []  # a different metric: start the curve again
        metric_name = headline[0]
        history.append((metrics.iteration, float(headline[1])))
    usage = llm_usage(state)
    return DashboardData(
        game=started.game if started else "",
        oracle=started.oracle if started else "",
        meta_solver=started.solver if started else "",
        members=members,
        payoffs=payoffs,
        metric_name=metric_name or "exploitability",
        metric_history=history,
        log=log if log is not None else [event_line(event, seats) for event in state.events],
        iteration=max((n for n in state.iterations), default=0),
        llm_calls=usage[0],
        tokens=usage[1],
        cost=usage[2],
        games_played=len(state.games),
        closed=state.closed is not None,
        session_id=started.session_id if started else "",
        closed_reason=state.closed.reason if state.closed is not None else "",
        closed_message=state.closed.message if state.closed is not None else "",
        closed_event=state.closed.seq if state.closed is not None else 0,
        populations=populations,
        meta_value=_num(state.meta.value) if populations == 2 and state.meta is not None else None,
    )


def _cells(entry: Any) -> tuple[Cell | None, Cell | None]:
    """A payoff record's cell and its mirror: zero-sum, the column member's return is the
    negation (one population: M[col][row] = -M[row][col]; two: the seat-1 member's return
    against the seat-0 member); (None, None) for a record without a finite mean."""
    mean = _num(entry.mean)
    if mean is None:
        return None, None
    cell = Cell(mean, _num(entry.stderr) or 0.0, entry.episodes, entry.exact)
    return cell, Cell(-mean, cell.stderr, cell.episodes, cell.exact)


def session_populations(state: Any) -> int:
    """1 or 2: the session's populations (its recorded config; 1 when absent, as in older logs)."""
    try:
        return 2 if int(state.config.get("populations", 1) or 1) == 2 else 1
    except (TypeError, ValueError):
        return 1


def seat_view(state: Any, seat: int | None, *, keep_meta: bool = True) -> Any:
    """The state with only one seat's population (two populations), for the behaviour
    views, which rank and cluster members within a population; the meta-strategy then
    weighs that seat's mixture.  `keep_meta=False` drops the meta-strategy (the review's
    "under the meta-strategy" distance would take the seat's own mixture as its opponent,
    where the other seat's is meant).  One population, or no seat: the state itself."""
    if session_populations(state) != 2 or seat not in (0, 1):
        return state
    import copy

    view = copy.copy(state)
    view.population = [m for m in state.population if getattr(m, "seat", None) == seat]
    if not keep_meta:
        view.meta = None
    return view


def seat_word(seat: int | None) -> str:
    """"seat 0" / "seat 1", or "" for a member or proposal of one population."""
    return f"seat {seat}" if seat in (0, 1) else ""


def call_tokens(call: dict) -> int:
    """Tokens of one LLM call record (`LLMCall.to_dict()`; OpenAI-style usage too)."""
    usage = call.get("usage") if isinstance(call.get("usage"), dict) else call
    total = usage.get("total_tokens")
    if total is None:
        total = (usage.get("prompt_tokens") or 0) + (usage.get("completion_tokens") or 0)
    return int(total or 0)


def llm_usage(state: Any) -> tuple[int, int, float]:
    """LLM calls, tokens and cost (USD, where known) over every proposal of the session."""
    calls = tokens = 0
    cost = 0.0
    for proposal_state in state.proposals.values():
        for call in proposal_state.proposal.llm_calls or []:
            if not isinstance(call, dict):
                continue
            calls += 1
            tokens += call_tokens(call)
            cost += _num(call.get("cost_usd", call.get("cost"))) or 0.0
    return calls, tokens, cost


def member_seats(state: Any) -> dict[str, int]:
    """Policy id -> seat, for a two-population session (empty for one population)."""
    if session_populations(state) != 2:
        return {}
    return {m.id: m.seat for m in state.population if getattr(m, "seat", None) in (0, 1)}


def event_line(event: Any, seats: dict[str, int] | None = None) -> str:
    """One line for the event log: `#seq type: what happened`; `seats` (`member_seats`) groups a
    two-population meta-strategy by seat."""
    kind = event.TYPE
    body = ""
    if kind == "session_started":
        body = f"{event.game} · {event.oracle} · {event.solver}"
    elif kind == "session_closed":
        body = event.reason + (f": {event.message}" if event.message else "")
    elif kind in ("iteration_started",):
        body = f"iteration {event.iteration}"
    elif kind == "iteration_finished":
        if event.iteration == 0:
            body = "iteration 0: the seed population"
        else:
            joined = ", ".join(event.joined or []) or event.accepted  # two populations: one per seat may join
            body = f"iteration {event.iteration}: " + (f"{joined} joined" if joined else "nothing accepted")
    elif kind == "oracle_failed":
        body = (f"attempt {event.attempt}" + (f" for seat {event.seat}" if getattr(event, "seat", None) in (0, 1) else "")
                + (" cancelled by the stop (asked again on resume)" if event.cancelled else "")
                + f": {event.error.splitlines()[0] if event.error else ''}")
    elif kind == "proposal_created":
        body = f"{event.proposal_id} {event.proposal.name} by {event.proposal.oracle}"
        if getattr(event.proposal, "seat", None) in (0, 1):
            body += f" for seat {event.proposal.seat}"
        if event.edited_from:
            body += f" (edit of {event.edited_from})"
    elif kind == "proposal_validated":
        validation = event.validation
        body = f"{event.proposal_id} " + ("valid" if validation.valid else "invalid")
        if validation.failure is not None:
            body += f": {validation.failure.summary()}"
        elif validation.issues:
            first = validation.issues[0]
            body += f": line {first.get('line', '?')}: {first.get('message', '')}"
    elif kind == "proposal_previewed":
        value = _num(event.preview.expected_payoff)
        body = f"{event.proposal_id} vs meta " + (number(value, 4, signed=True) if value is not None else "n/a")
    elif kind == "proposal_decided":
        body = f"{event.proposal_id} {event.action} by {event.decided_by}"
        if event.reason:
            body += f": {event.reason}"
        if event.note:
            body += f" ({event.note})"
    elif kind == "policy_added":
        body = f"{event.policy.id} {event.policy.name} ({event.policy.origin}"
        body += f", seat {event.policy.seat})" if getattr(event.policy, "seat", None) in (0, 1) else ")"
    elif kind == "payoffs_evaluated":
        body = counted(len(event.entries), "matchup")
    elif kind == "benchmark_evaluated":
        body = f"{event.policy_id} vs {counted(len(event.per_bot), 'bot')}"
    elif kind == "meta_solved":
        weights = list(zip(event.population, event.strategy))
        if seats and all(p in seats for p in event.population):
            body = event.solver + " " + " · ".join(
                f"seat {seat}: " + " ".join(f"{p}={w:.2f}" for p, w in weights if seats[p] == seat) for seat in (0, 1))
        else:
            body = event.solver + " " + " ".join(f"{p}={w:.2f}" for p, w in weights)
    elif kind == "metrics":
        headline = headline_metric(event)
        if headline is not None and _num(headline[1]) is not None:
            body = f"iteration {event.iteration} {headline[0]} {number(headline[1], 4)}"
    elif kind == "game_played":
        mine = event.returns[event.seat] if 0 <= event.seat < len(event.returns) else None
        body = f"played by hand vs {event.opponent}, seat {event.seat}: you {number(mine, 2, signed=True)}"
    elif kind == "session_resumed":
        body = "resumed"
    return one_line(f"#{event.seq} {kind}" + (f": {body}" if body else ""))


def review_info(review: Any) -> ReviewInfo:
    """What the review screen shows for the engine's `ReviewRequest`."""
    proposal = review.proposal
    validation = review.validation
    lines: list[str] = []
    for issue in validation.issues:
        lines.append(f"line {issue.get('line', '?')}:{issue.get('col', '?')}: {issue.get('message', '')}")
    if validation.failure is not None:
        lines.append(validation.failure.summary())
        if validation.failure.traceback:
            lines.extend(validation.failure.traceback.rstrip().splitlines())
    if validation.valid and not validation.issues:
        lines.insert(0, "ok: static checks")
    if validation.smoke:
        smoke = ", ".join(f"{k} {v:+.2f}" for k, v in validation.smoke.items())
        tag = "ok" if validation.failure is None else "failed"
        how = f"{validation.smoke_episodes} episodes each" if validation.smoke_episodes else "exact"
        lines.append(f"{tag}: smoke run ({how}): {smoke}")
    if validation.timing:
        # "slow: ..." when act is far slower than the contract expects (clock.slow_act_note)
        lines.append(("warning: " if "slow: " in validation.timing else "ok: ") + f"timing: {validation.timing}")
    if validation.printed:
        lines.append(f"warning: {validation.printed}")
    loosened = getattr(review, "loosened_limits", "") or ""
    if loosened:  # the checks ran under them
        lines.append(f"warning: {loosened}")
    preview = review.preview
    # a progressive review opens while the preview plays: its figures so far
    live = getattr(review, "live_preview", None)
    estimate = live.latest()[1] if live is not None else None
    if preview is None and estimate is not None:
        preview = estimate.preview
    # two populations: the proposal must beat its seat's value of the meta-game (ReviewRequest.seat_value)
    seat_value = _num(getattr(review, "seat_value", None))
    failure = None
    if not validation.valid:
        failure = validation.summary()
    names = {member.id: member.name for member in getattr(review, "population", None) or []}
    info = ReviewInfo(
        name=proposal.name,
        oracle=proposal.oracle,
        source=proposal.source,
        parent=proposal.parent,
        parent_source=review.parent_source,
        rationale=proposal.rationale,
        llm_calls=list(proposal.llm_calls or []),
        iteration=review.iteration,
        attempt=review.attempt,
        valid=bool(validation.valid),
        validation=lines,
        failure=failure,
        oracle_failure=getattr(proposal, "failure", "") or "",
        proposal_id=getattr(review, "proposal_id", ""),
        history=[
            (v.proposal_id, v.source, v.edited_by, _num(v.expected_payoff)) for v in getattr(review, "history", [])
        ],
        edited_by=getattr(review, "edited_by", None),
        max_attempts=int(getattr(review, "max_attempts", 0) or 0),
        seat=getattr(proposal, "seat", None) if getattr(proposal, "seat", None) in (0, 1) else None,
        seat_value=seat_value,
        member_names=names,
        loosened_limits=loosened,
        live_preview=live if estimate is None or not estimate.done else None,
        measuring=("measuring: the preview has started; figures come as its first matches end"
                   if estimate is None else estimate.describe()) if live is not None else "",
    )
    return with_preview(info, preview)


def with_preview(info: ReviewInfo, preview: Any, measuring: str | None = None) -> ReviewInfo:
    """`info` showing `preview`'s figures (a progressive review's newest estimate, or the final
    preview); `measuring`: how far the preview is ("" once done; None: as it was)."""
    import dataclasses

    failure = info.failure
    if info.valid:
        failure = preview.failure.summary() if preview is not None and preview.failure is not None else None
    return dataclasses.replace(
        info,
        expected_payoff=_num(preview.expected_payoff) if preview is not None else None,
        # a sampled preview has per-member standard errors (exact: none); 0.0 shows
        # "noise not measured", as for one seat-swapped pair, which cannot measure its own
        expected_stderr=(0.0 if getattr(preview, "pairs", 0) == 1 else _num(getattr(preview, "expected_stderr", 0.0)) or 0.0)
        if preview is not None and getattr(preview, "stderr", None) else None,
        per_member={k: v for k, v in (preview.per_member.items() if preview else []) if _num(v) is not None},
        member_stderr={k: float(v) for k, v in ((getattr(preview, "stderr", None) or {}) if preview else {}).items()
                       if _num(v) is not None},
        population_metrics={
            k: float(v) for k, v in ((preview.population_metrics or {}) if preview else {}).items() if _num(v) is not None
        }
        or None,
        failure=failure,
        duplicate_of=getattr(preview, "duplicate_of", None) if preview is not None else None,
        duplicate_reason=(getattr(preview, "duplicate_reason", "") or "") if preview is not None else "",
        # a duplicate or a failure is shown on its own line already
        shortfall=_shortfall(preview, info.seat_value),
        measuring=info.measuring if measuring is None else measuring,
    )


def _shortfall(preview: Any, bar: float | None = None) -> str | None:
    """The gate's verdict, unless a duplicate or a failure already says why (on their own lines);
    `bar`: two populations, the proposal's seat's value in the meta-game (else 0)."""
    if preview is None or getattr(preview, "duplicate_of", None) or getattr(preview, "failure", None):
        return None
    shortfall = getattr(preview, "shortfall", None)
    return shortfall(bar or 0.0) if callable(shortfall) else None


def engine_decision(decision: ReviewDecision, review: Any = None) -> Any:
    """The engine's `Decision` for what the person chose."""
    if decision.kind == "accept":
        return Decision.accept()
    if decision.kind == "edit":
        return Decision.edit(decision.source or "")
    if decision.kind == "reject":
        return Decision.reject(decision.reason or "rejected")
    if decision.kind == "regenerate":
        return Decision.reject(REGENERATE_REASON)
    raise ValueError(f"no engine decision for {decision.kind!r}")


def proposal_info(state: Any, proposal_id: str) -> tuple[ReviewInfo, str]:
    """A recorded proposal as the review screen saw it, and its decision in words
    (the full rejection reason, the note when the engine overrode the reviewer)."""
    entry = state.proposals[proposal_id]
    request = review_request(state, proposal_id)
    info = review_info(request)
    if entry.validation is None:
        info.validation = ["not validated (the session stopped before its gate)"]
    decision = entry.decision
    if decision is None:
        words = "undecided (the session stopped before a decision)"
    else:
        words = f"{decision.action} by {decision.decided_by} (event #{decision.seq})"
        if decision.reason:
            words += f"\nreason: {decision.reason}"
        if decision.note:
            words += f"\nnote: {decision.note}"
        if decision.action == "edit":
            edit = next((p.id for p in state.proposals.values() if p.edited_from == proposal_id), None)
            if edit:
                words += f"\nthe edit became proposal {edit}"
    if entry.policy_id:
        words += f"\njoined the population as {entry.policy_id}"
    return info, clean_text(words)
