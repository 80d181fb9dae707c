"""A proposal's `ReviewRequest`, built from the folded state.

The live engine asks its reviewer with it (right after the proposal's
validation and preview were folded in) and the TUI rebuilds what the review
screen showed for a recorded proposal with it, so both see the same request.
"""

from __future__ import annotations

import threading

from csro_tui.records import PolicyRecord, ProposalVersion, ReviewRequest, ValidationResult
from csro_tui.sandbox.limits import loosened_limits, loosened_text
from csro_tui.sessions.state import SessionState


def review_request(
    state: SessionState,
    proposal_id: str,
    *,
    population: list[PolicyRecord] | None = None,
    meta_strategy: dict[str, float] | None = None,
    cancel: threading.Event | None = None,
    max_attempts: int | None = None,
) -> ReviewRequest:
    """The request for `proposal_id` as the state records it.

    `population` and `meta_strategy` are what the proposal is judged against (the live
    engine's current ones; empty for a recorded proposal, whose state may be later).
    `max_attempts` defaults to the run configuration's. A proposal the session stopped
    before validating gets an invalid, empty validation.  A proposal for a seat (two
    populations) carries the seat's value in the meta-game its preview was measured
    against (`seat_value`; the state's latest one before it is previewed).
    """
    entry = state.proposals[proposal_id]
    parent = state.member(entry.proposal.parent) if entry.proposal.parent else None
    history = [
        ProposalVersion(
            proposal_id=version.id,
            source=version.proposal.source,
            edited_by=version.edited_by,
            expected_payoff=version.preview.preview.expected_payoff if version.preview is not None else None,
        )
        for version in state.edit_chain(proposal_id)[:-1]
    ]
    if max_attempts is None:
        max_attempts = int(state.config.get("max_attempts") or 0)
    seat = entry.proposal.seat
    # The value it was measured against (its preview's time): a recorded proposal's
    # state may be later, after the meta-game moved on.
    measured_at = entry.preview.seq if entry.preview is not None else None
    seat_value = state.seat_value(seat, before=measured_at) if seat is not None else None
    return ReviewRequest(
        proposal_id=proposal_id,
        proposal=entry.proposal,
        iteration=entry.iteration,
        attempt=entry.attempt,
        validation=entry.validation if entry.validation is not None else ValidationResult(valid=False),
        preview=entry.preview.preview if entry.preview is not None else None,
        parent_source=parent.source if parent is not None else None,
        population=list(population or []),
        meta_strategy=dict(meta_strategy or {}),
        cancel=cancel if cancel is not None else threading.Event(),
        history=history,
        edited_by=entry.edited_by,
        max_attempts=max_attempts,
        seat_value=seat_value,
        # From the recorded configuration, the limits the run used, whatever else the log says.
        loosened_limits=loosened_text(loosened_limits(state.config)),
    )
