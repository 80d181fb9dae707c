"""A structurally real large session, written quickly: the events a best-response run
records (iteration, proposal, validation, preview, decision, policy, payoffs, meta-strategy,
metrics), each built from the project's own records and appended through the session
store's `SessionWriter`, as the engine appends them.  Only the figures are made up (a
seeded generator instead of exact evaluation), so 200 Leduc members take about a second
where the engine takes minutes.  The code of each member is one of the game's seed
policies, marked with its id (every member's code differs, as the engine's would)."""

from __future__ import annotations

import random
from pathlib import Path

from csro_tui.games.registry import get_game
from csro_tui.records import PolicyRecord, Preview, Proposal, ValidationResult
from csro_tui.sessions.events import (
    IterationFinished,
    IterationStarted,
    MetaSolved,
    MetricsComputed,
    PayoffRecord,
    PayoffsEvaluated,
    PolicyAdded,
    ProposalCreated,
    ProposalDecided,
    ProposalPreviewed,
    ProposalValidated,
    SessionClosed,
    SessionStarted,
)
from csro_tui.sessions.store import SessionStore

WEIGHTED = 35  # members with weight in the meta-strategy at the end, as in the measured session


def _payoff(rng: random.Random) -> float:
    return round(rng.uniform(-3.0, 3.0), 6)


def _strategy(ids: list[str], rng: random.Random) -> list[float]:
    """A mixture over up to WEIGHTED members, mostly the newer ones (as a best-response run's)."""
    chosen = set(rng.sample(ids[len(ids) // 3:], min(WEIGHTED, len(ids) - len(ids) // 3))) if len(ids) > 1 else set(ids)
    raw = [rng.uniform(0.2, 1.0) if policy_id in chosen else 0.0 for policy_id in ids]
    total = sum(raw)
    return [value / total for value in raw]


def write_large_session(root: Path, members: int = 200, *, game: str = "leduc_poker", seed: int = 7,
                        session_id: str = "large-leduc") -> str:
    """Write a session of `members` members besides the first seed (`members` iterations,
    each accepting a best-response proposal) under `root`; its id."""
    rng = random.Random(seed)
    spec = get_game(game)
    seeds = spec.seed_policies()
    seed_name, seed_source = next(iter(seeds.items()))
    sources = list(seeds.values())
    store = SessionStore(root, fsync=False)
    writer = store.create(session_id)
    config = {"game": game, "oracle": "best-response", "iterations": members, "solver": "nash", "seed": seed,
              "review": "auto", "populations": 1}
    writer.append(SessionStarted(session_id=session_id, game=game, oracle="best-response", solver="nash",
                                 config=config, versions={}))
    ids: list[str] = []
    payoffs: dict[tuple[str, str], float] = {}

    def add(policy: PolicyRecord, proposal_id: str | None) -> None:
        writer.write_policy(policy)
        writer.append(PolicyAdded(policy=policy, proposal_id=proposal_id))
        entries = []
        for other in ids:
            value = _payoff(rng)
            payoffs[(policy.id, other)] = value
            entries.append(PayoffRecord(row=policy.id, col=other, mean=value, exact=True))
        ids.append(policy.id)
        if entries:
            writer.append(PayoffsEvaluated(entries=entries))

    def solve_and_close(iteration: int, accepted: str | None) -> None:
        strategy = _strategy(ids, rng)
        writer.append(MetaSolved(solver="nash", population=list(ids), strategy=strategy))
        writer.append(MetricsComputed(iteration=iteration, population_size=len(ids),
                                      meta_strategy=dict(zip(ids, strategy)), meta_nash_conv=0.0,
                                      new_policy=accepted, exploitability=round(1.5 / (1 + iteration / 10), 6)))
        writer.append(IterationFinished(iteration=iteration, accepted=accepted, attempts=1 if accepted else 0))

    writer.append(IterationStarted(iteration=0))
    add(PolicyRecord(id="p0", name=seed_name, source=seed_source, origin="seed"), None)
    solve_and_close(0, None)
    for iteration in range(1, members + 1):
        writer.append(IterationStarted(iteration=iteration))
        proposal_id, policy_id = f"i{iteration}.1", f"p{iteration}"
        source = f"# best response {policy_id} (a test session's code)\n" + sources[iteration % len(sources)]
        proposal = Proposal(source=source, oracle="best-response", name=f"br-{iteration}",
                            rationale="an exact best response to the meta-strategy")
        writer.append(ProposalCreated(proposal_id=proposal_id, iteration=iteration, attempt=1, proposal=proposal))
        per_member = {other: _payoff(rng) for other in ids}
        writer.append(ProposalValidated(proposal_id=proposal_id, validation=ValidationResult(valid=True, smoke=per_member)))
        expected = round(sum(per_member.values()) / len(per_member), 6)
        writer.append(ProposalPreviewed(proposal_id=proposal_id, exact=True,
                                        preview=Preview(expected_payoff=expected, per_member=per_member)))
        writer.append(ProposalDecided(proposal_id=proposal_id, action="accept", decided_by="auto",
                                      reason="expected payoff beats the meta-strategy"))
        add(PolicyRecord(id=policy_id, name=f"br-{iteration}", source=source, origin="best-response",
                         parent=None, iteration=iteration), proposal_id)
        solve_and_close(iteration, policy_id)
    writer.append(SessionClosed(reason="completed", message=f"{members} of {members} iterations"))
    writer.close()
    return session_id
