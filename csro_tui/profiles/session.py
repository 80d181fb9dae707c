"""Profiles of a session's members and proposals: the review's "what is new" and the
population's diversity.

Profiles recorded in the session (`behaviour_profiled` events) are reused when
their code hash matches; what is computed here comes back as new events for the
caller to record (a live run through `Engine.record_profile`), so a replay shows
them without the sandbox.  Sampled profiles use a seed derived from the
session's master seed, so every member is profiled against the same probe
matches and a recorded profile can be reproduced.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable

import numpy as np

from csro_tui.evaluation.participants import CodePolicy
from csro_tui.files import path_inside
from csro_tui.profiles.compute import profile_policy
from csro_tui.profiles.describe import describe
from csro_tui.profiles.distance import (
    Comparison,
    cluster_order,
    clusters,
    compare,
    distance_matrix,
    effective_strategies,
)
from csro_tui.profiles.hints import Hint, profile_hints
from csro_tui.profiles.model import EXACT, Profile
from csro_tui.profiles.references import profile_seed
from csro_tui.same_code import normalized_code

if TYPE_CHECKING:
    from pathlib import Path

    from csro_tui.games.base import GameSpec
    from csro_tui.sessions.events import BehaviourProfiled
    from csro_tui.sessions.state import SessionState

NEAREST_DIFFERENCES = 3  # differing situations kept with a proposal's nearest member


def session_profile_seed(state: "SessionState") -> int:
    seed = state.config.get("seed")
    return profile_seed(seed if isinstance(seed, int) else None, None)


def _recorded(state: "SessionState", policy_id: str, source_hash: str, seat: int | None = None) -> Profile | None:
    """A recorded profile of this code: the policy's own, or the one its proposal had in review.
    A played profile must have played `seat` (None: both seats; exact profiles hold both)."""
    event = state.profiles.get(policy_id)
    if event is None or event.source_hash != source_hash:
        event = state.profiles.get(state.policy_proposal.get(policy_id, ""))
    if event is None or event.source_hash != source_hash:
        return None
    try:
        profile = Profile.from_dict(event.profile)
    except (TypeError, ValueError):  # a profile of another shape: compute it again
        return None
    if profile.kind != EXACT and profile.seat != seat:  # e.g. recorded before seats were profiled apart
        return None
    return profile


def _played_seat(state: "SessionState", seat: int | None) -> int | None:
    """The seat a policy's played profile plays: its own with two populations (it never
    plays the other), None (both) with one."""
    return seat if state.metagame.populations == 2 and seat in (0, 1) else None


def _event(policy_id: str, profile: Profile, source: str, nearest: dict | None = None,
           model_summary: dict | None = None) -> "BehaviourProfiled":
    # imported when used, not at the top: keeps csro's start-up fast
    from csro_tui.sessions.events import BehaviourProfiled

    return BehaviourProfiled(
        policy_id=policy_id,
        source_hash=profile.source_hash,
        profile=profile.to_record(),
        description=describe(profile),
        hints=[hint.to_dict() for hint in profile_hints(source, profile)],
        nearest=nearest,
        model_summary=model_summary,
    )


def recorded_summary(state: "SessionState", policy_id: str, source: str) -> dict | None:
    """The model summary the session recorded for this code ({"model", "text"}), if any:
    the policy's own, or the one its proposal had."""
    source_hash = CodePolicy(policy_id, source).source_hash
    for key in (policy_id, state.policy_proposal.get(policy_id, "")):
        event = state.profiles.get(key)
        if event is not None and event.source_hash == source_hash and event.model_summary:
            return event.model_summary
    return None


def summary_event(state: "SessionState", policy_id: str, source: str, profile: Profile,
                  summary: dict) -> "BehaviourProfiled":
    """The event that records a model summary beside the policy's profile (the latest
    behaviour_profiled of a policy is the one kept, so its nearest member stays)."""
    known = state.profiles.get(policy_id)
    nearest = known.nearest if known is not None and known.source_hash == profile.source_hash else None
    return _event(policy_id, profile, source, nearest, {"model": str(summary["model"]), "text": str(summary["text"])})


def member_profiles(
    spec: "GameSpec | None", state: "SessionState", *, profile: Callable[..., Profile] | None = profile_policy,
    cancelled: Callable[[], bool] = lambda: False, record: bool = True,
) -> tuple[dict[str, Profile], list["BehaviourProfiled"]]:
    """Every member's profile (recorded ones reused), and the events for those computed now
    (none with `record=False`: an event's record and code hints cost ~35 ms a Leduc member,
    7 s of a 201-member diversity view that records nothing); with `profile=None` only the
    recorded ones (nothing runs)."""
    seed = session_profile_seed(state)
    profiles, new = {}, []
    for member in state.population:
        if cancelled():
            break
        participant = CodePolicy(member.id, member.source)
        seat = _played_seat(state, member.seat)
        known = _recorded(state, member.id, participant.source_hash, seat)
        if known is None:
            if profile is None:
                continue
            known = profile(spec, participant, seed=seed, **({} if seat is None else {"seat": seat}))
            if record:
                new.append(_event(member.id, known, member.source))
        profiles[member.id] = known
    return profiles, new


@dataclass
class ReviewBehaviour:
    """What the review shows about a proposal's behaviour."""

    profile: Profile
    description: list[str]
    hints: list[Hint]
    ranked: list[tuple[str, Comparison]]  # (member id, comparison), nearest first
    events: list["BehaviourProfiled"] = field(default_factory=list)  # to record
    # Exact games: the nearest member's distance with the meta-strategy as the opponent.
    distance_under_meta: float | None = None
    # Members whose code is the proposal's (normalized: comments, docstrings, spacing aside).
    same_code_as: list[str] = field(default_factory=list)

    @property
    def behaves_like(self) -> str | None:
        """The member it behaves like (distance 0 exactly, or within noise), if any."""
        if self.ranked and self.ranked[0][1].same_within_noise:
            return self.ranked[0][0]
        return None

    def hint(self) -> str | None:
        member = self.behaves_like
        if member is None:
            return None
        comparison = self.ranked[0][1]
        how = "acts the same everywhere it matters" if comparison.stderr is None else "the same within noise"
        # the gate's duplicate line says "same code" for a copy: the hint must not say otherwise
        code = "its code is the same" if member in self.same_code_as else "though its code is its own"
        return f"behaves like member {member}: distance {comparison.distance:.3f} ({how}), {code}"


def review_behaviour(
    spec: "GameSpec", state: "SessionState", proposal_id: str, source: str, *,
    profile: Callable[..., Profile] = profile_policy, seat: int | None = None,
) -> ReviewBehaviour:
    """`seat` (two populations): the proposal's seat, whose states alone are compared
    (`state` then holds that seat's members: `tui.adapt.seat_view`)."""
    members, events = member_profiles(spec, state, profile=profile)
    participant = CodePolicy(proposal_id, source)
    played_seat = _played_seat(state, seat)
    mine = _recorded(state, proposal_id, participant.source_hash, played_seat)
    fresh = mine is None
    if mine is None:
        mine = profile(spec, participant, seed=session_profile_seed(state), branches=True,
                       **({} if played_seat is None else {"seat": played_seat}))
    ranked = sorted(((member_id, compare(mine, other, seat=seat)) for member_id, other in members.items()),
                    key=lambda item: item[1].distance)
    under_meta = None
    if ranked and mine.kind == EXACT and not mine.failure and not members[ranked[0][0]].failure:
        under_meta = _distance_under_meta_strategy(spec, state, mine, members[ranked[0][0]], seat)
    if fresh:
        nearest = None
        if ranked:
            member_id, comparison = ranked[0]
            nearest = {
                "member": member_id,
                "distance": comparison.distance,
                "stderr": comparison.stderr,
                "same_within_noise": comparison.same_within_noise,
                "differences": comparison.differences[:NEAREST_DIFFERENCES],
                "distance_under_meta_strategy": under_meta,
            }
        events.append(_event(proposal_id, mine, source, nearest))
    mine_code = normalized_code(source)
    same_code = [m.id for m in state.population if mine_code is not None and normalized_code(m.source) == mine_code]
    return ReviewBehaviour(mine, describe(mine), profile_hints(source, mine), ranked, events, under_meta, same_code)


def _distance_under_meta_strategy(spec, state, mine: Profile, nearest: Profile,
                                  seat: int | None = None) -> float | None:
    """Exact games: the distance to the nearest member with the states weighted by the
    current meta-strategy as the opponent (in both seats) instead of the uniform one."""
    # imported when used, not at the top: keeps csro's start-up fast
    from csro_tui.evaluation.exact import mixture_policy
    from csro_tui.sandbox.failures import PolicyFailure
    from csro_tui.profiles.compute import opponent_reach

    weights = state.meta_strategy if state.meta is not None else {}
    members = [m for m in state.population if weights.get(m.id, 0.0) > 0]
    if not members:
        return None
    try:
        mixture = mixture_policy(spec, [CodePolicy(m.id, m.source) for m in members], [weights[m.id] for m in members])
    except (PolicyFailure, ValueError):
        return None
    return compare(mine, nearest, opponent_reach=opponent_reach(spec, mixture), seat=seat).distance


@dataclass
class Diversity:
    """The population's diversity: distances (ordered so clusters show), clusters, effective number."""

    ids: list[str]  # in the heat map's order
    distances: np.ndarray
    errors: np.ndarray
    groups: list[list[str]]  # members that are the same strategy (more than one each)
    effective: float | None  # effective number of distinct strategies under the meta-strategy
    weights: dict[str, float]
    events: list["BehaviourProfiled"] = field(default_factory=list)

    def lines(self) -> list[str]:
        """Words for the diversity, for `csro replay` and the report."""
        out = []
        if self.effective is not None:
            out.append(f"effective number of distinct strategies in the meta-strategy: {self.effective:.2f} "
                       f"(of {sum(1 for w in self.weights.values() if w > 0)} members with weight)")
        for group in self.groups:
            out.append("same strategy: " + ", ".join(group))
        if not self.groups and len(self.ids) > 1:
            out.append("no two members behave the same")
        return out


def population_diversity(
    spec: "GameSpec | None", state: "SessionState", *, profile: Callable[..., Profile] | None = profile_policy,
    cancelled: Callable[[], bool] = lambda: False, seat: int | None = None, record: bool = True,
) -> Diversity:
    """`seat` (two populations): `state` holds that seat's members, compared in it alone;
    `record` as in `member_profiles`."""
    profiles, events = member_profiles(spec, state, profile=profile, cancelled=cancelled, record=record)
    ids = [member.id for member in state.population if member.id in profiles]
    distances, errors = distance_matrix([profiles[i] for i in ids], seat=seat)
    order = cluster_order(distances)
    ids = [ids[i] for i in order]
    distances, errors = distances[np.ix_(order, order)], errors[np.ix_(order, order)]
    groups = [[ids[i] for i in group] for group in clusters(distances, errors) if len(group) > 1]
    weights = {policy_id: float(w) for policy_id, w in state.meta_strategy.items()} if state.meta else {}
    effective = None
    if weights:
        effective = effective_strategies([weights.get(i, 0.0) for i in ids], distances)
    return Diversity(ids, distances, errors, groups, effective, weights, events)


def recorded_diversity(state: "SessionState", seat: int | None = None) -> Diversity | None:
    """The diversity of the members whose profiles the session recorded (nothing runs);
    None when fewer than two have one.  `seat` as in `population_diversity`."""
    diversity = population_diversity(None, state, profile=None, seat=seat)
    return diversity if len(diversity.ids) >= 2 else None


def diversity_svg(diversity: Diversity, title: str) -> str:
    # imported when used, not at the top: keeps csro's start-up fast
    from csro_tui.sessions.plot import heat_map_svg

    note = "; ".join(diversity.lines()[:2])
    return heat_map_svg(title, diversity.ids, diversity.distances.tolist(), errors=diversity.errors.tolist(),
                        note=note)


def diversity_markdown(diversity: Diversity, picture: str, missing: int,
                       title: str = "Behaviour diversity") -> list[str]:
    out = ["", f"## {title}", "",
           "Behaviour distance between members (0: the same behaviour), ordered so clusters show.", "",
           f"![behaviour distances]({picture})", ""]
    out += [f"- {line}" for line in diversity.lines()]
    if missing:
        out.append(f"- {missing} member(s) have no recorded profile and are left out")
    return out


DIVERSITY_FILE = "diversity.svg"


def export_with_diversity(state: "SessionState", out) -> list["Path"]:
    """The session exported (`sessions.export.export_session`: policies, payoffs.csv,
    report.md) with its behaviour diversity (`write_diversity`): `csro export` and the
    TUI's export both write this.  Returns the files written."""
    from pathlib import Path

    # imported when used, not at the top: keeps csro's start-up fast (it loads numpy)
    from csro_tui.sessions.export import export_session

    written = export_session(state, Path(out))
    if state.metagame.populations == 2:  # each seat's population apart, compared in its own states
        import copy

        for seat in (0, 1):
            view = copy.copy(state)
            view.population = state.seat_members(seat)
            picture = write_diversity(view, Path(out), seat=seat)
            written += [picture] if picture else []
        return written
    picture = write_diversity(state, Path(out))
    return written + ([picture] if picture else [])


def write_diversity(state: "SessionState", out, seat: int | None = None) -> "Path | None":
    """After `sessions.export.export_session`: the behaviour-distance heat map of the members
    with recorded profiles (diversity.svg; with `seat`, of that seat's population in `state`:
    diversity-seat0.svg) and its section appended to report.md; None when fewer than two are
    profiled."""
    diversity = recorded_diversity(state, seat=seat)
    if diversity is None:
        return None
    whose = "" if seat is None else f"seat {seat}'s population"
    path = path_inside(out, DIVERSITY_FILE if seat is None else DIVERSITY_FILE.replace(".svg", f"-seat{seat}.svg"))
    game = state.started.game if state.started else ""
    path.write_text(diversity_svg(diversity, f"Behaviour distance · {game}" + (f" · {whose}" if whose else "")),
                    encoding="utf-8")
    missing = len(state.population) - len(diversity.ids)
    title = "Behaviour diversity" + (f", {whose}" if whose else "")
    with path_inside(out, "report.md").open("a", encoding="utf-8") as handle:
        handle.write("\n".join(diversity_markdown(diversity, path.name, missing, title)) + "\n")
    return path
