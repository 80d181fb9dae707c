"""The typed events of a session, and their JSON form.

Every step of a run is one event.  The engine emits them to subscribers (the
TUI, the CLI's live display) and to the session log; the state shown
anywhere is a fold over them (`csro_tui.sessions.state`).  A line of
`events.jsonl` is one event: ``{"v": 1, "seq": n, "ts": "...", "type":
"...", <fields>}``; `to_record` / `from_record` convert both ways.

Fields are plain JSON values, except for a few small dataclasses that are
converted explicitly (`PolicyRecord`, `Proposal`, `Preview`, `PayoffRecord`)
so subscribers get typed objects.  API keys never appear in any event.
"""

from __future__ import annotations

import dataclasses
import math
import re
import types
import typing
from dataclasses import dataclass, field
from typing import Any, Callable, ClassVar, Union

from csro_tui.files import quoted
from csro_tui.records import PolicyRecord, Preview, Proposal, ValidationResult
from csro_tui.sandbox.failures import PolicyFailure

SCHEMA_VERSION = 1

# Keys of a log line that belong to the envelope, not to the event's fields.
ENVELOPE_KEYS = ("v", "seq", "ts", "type")


class EventFormatError(ValueError):
    """A record that is not a valid event (the store adds file and line)."""


@dataclass(frozen=True)
class PayoffRecord:
    """One evaluated matchup: `row`'s mean return against `col`, seat-averaged; with two
    populations `row` is the seat-0 member and `mean` its return with the seats fixed."""

    row: str
    col: str
    mean: float
    stderr: float = 0.0
    episodes: int = 0
    seeds: list[int] = field(default_factory=list)
    exact: bool = False
    failure: PolicyFailure | None = None


@dataclass(kw_only=True)
class Event:
    """Base of every event; `seq` and `ts` are set when the event is recorded."""

    TYPE: ClassVar[str] = ""
    seq: int = 0
    ts: str = ""


# --- session lifecycle ------------------------------------------------------


@dataclass(kw_only=True)
class SessionStarted(Event):
    """The first event: the full run configuration and the software versions."""

    TYPE: ClassVar[str] = "session_started"
    session_id: str
    game: str
    oracle: str
    solver: str
    config: dict[str, Any]
    versions: dict[str, str]
    model: str = ""
    base_url: str = ""
    # The sandbox limits the configuration raised above their defaults (issue 35):
    # name -> {"value", "default"}; None (and absent from the line) when none is.
    loosened_limits: dict[str, Any] | None = None


@dataclass(kw_only=True)
class SessionResumed(Event):
    """A stopped or crashed session continues; `overrides` are changed settings."""

    TYPE: ClassVar[str] = "session_resumed"
    overrides: dict[str, Any] = field(default_factory=dict)
    versions: dict[str, str] = field(default_factory=dict)
    discarded_torn_line: bool = False


@dataclass(kw_only=True)
class SessionClosed(Event):
    TYPE: ClassVar[str] = "session_closed"
    reason: str  # "completed", "stopped" or "error"
    message: str = ""


# --- iterations and the review gate -----------------------------------------


@dataclass(kw_only=True)
class IterationStarted(Event):
    TYPE: ClassVar[str] = "iteration_started"
    iteration: int


@dataclass(kw_only=True)
class OracleFailed(Event):
    """The oracle raised instead of proposing; counts as a failed attempt,
    unless `cancelled` (the run was stopped while the oracle worked: the
    attempt is made again on resume, and this records the calls it made)."""

    TYPE: ClassVar[str] = "oracle_failed"
    iteration: int
    attempt: int
    error: str
    traceback: str = ""
    # LLM calls the oracle made before it failed (LLMCall.to_dict()), so the
    # log holds every call and a recorded session replays in order.
    llm_calls: list[dict[str, Any]] = field(default_factory=list)
    cancelled: bool = False
    # Two populations: the seat the oracle was asked for; None (not written): one population.
    seat: int | None = None


@dataclass(kw_only=True)
class ProposalCreated(Event):
    """A candidate from the oracle, or a reviewer's edit of an earlier one."""

    TYPE: ClassVar[str] = "proposal_created"
    proposal_id: str
    iteration: int
    attempt: int
    proposal: Proposal
    edited_from: str | None = None  # proposal id this edit replaces
    edited_by: str | None = None


@dataclass(kw_only=True)
class ProposalValidated(Event):
    """Static validation, then a short sandboxed match against every member."""

    TYPE: ClassVar[str] = "proposal_validated"
    proposal_id: str
    # On the wire its fields sit beside proposal_id, as in every version-1 log; an invalid
    # proposal with the same code as a known policy carries `duplicate_of` here, valid ones
    # in their preview. `timing`, `smoke_stderr` and `printed` were added later: older logs read them as empty.
    validation: ValidationResult


@dataclass(kw_only=True)
class ProposalPreviewed(Event):
    TYPE: ClassVar[str] = "proposal_previewed"
    proposal_id: str
    preview: Preview
    exact: bool = False
    episodes: int = 0


@dataclass(kw_only=True)
class ProposalDecided(Event):
    """The reviewer's decision; `note` explains when the engine overrode it."""

    TYPE: ClassVar[str] = "proposal_decided"
    proposal_id: str
    action: str  # "accept", "edit" or "reject"
    decided_by: str
    reason: str = ""
    edited_source: str | None = None
    note: str = ""


@dataclass(kw_only=True)
class PolicyAdded(Event):
    """A policy joins the population: a seed, or an accepted proposal."""

    TYPE: ClassVar[str] = "policy_added"
    policy: PolicyRecord
    proposal_id: str | None = None


@dataclass(kw_only=True)
class PayoffsEvaluated(Event):
    """New entries of the meta-game payoff matrix (only the new ones)."""

    TYPE: ClassVar[str] = "payoffs_evaluated"
    entries: list[PayoffRecord]


@dataclass(kw_only=True)
class BenchmarkEvaluated(Event):
    """One member's mean payoff against each bot of the game's benchmark."""

    TYPE: ClassVar[str] = "benchmark_evaluated"
    policy_id: str
    per_bot: dict[str, float]
    episodes: int
    per_bot_stderr: dict[str, float] | None = None  # sampled games; absent in older logs
    seed: int
    failure: PolicyFailure | None = None


@dataclass(kw_only=True)
class MetaSolved(Event):
    TYPE: ClassVar[str] = "meta_solved"
    solver: str
    population: list[str]  # policy ids, the order of `strategy`
    strategy: list[float]
    value: float = 0.0
    nash_conv: float = 0.0


@dataclass(kw_only=True)
class MetricsComputed(Event):
    """What an iteration achieved (see `csro_tui.engine.iteration_metrics`)."""

    TYPE: ClassVar[str] = "metrics"
    iteration: int
    population_size: int
    meta_strategy: dict[str, float]
    meta_nash_conv: float
    new_policy: str | None = None
    new_policy_payoff: float | None = None  # against the previous meta-strategy
    exploitability: float | None = None  # of the meta-strategy mixture (exact games)
    benchmark: dict[str, Any] | None = None  # {"meta": {...}, "best_member": {...}}


@dataclass(kw_only=True)
class IterationFinished(Event):
    TYPE: ClassVar[str] = "iteration_finished"
    iteration: int
    accepted: str | None  # id of the policy that joined, None if all were rejected
    # Two populations: every member that joined (seat 0's, then seat 1's); `accepted` is the last.
    joined: list[str] | None = None
    attempts: int = 0
    # One line when the run has stopped improving (engine.gate.progress_note), else "".
    progress: str = ""


@dataclass(kw_only=True)
class GamePlayed(Event):
    """A game played by hand (the TUI's play screen) or a shown match."""

    TYPE: ClassVar[str] = "game_played"
    policy_id: str | None
    opponent: str
    seat: int
    transcript: list[Any]
    returns: list[float]
    seed: int | None = None


@dataclass(kw_only=True)
class BehaviourProfiled(Event):
    """A member's or a proposal's behaviour profile (csro_tui/profiles/), computed
    for the review or the diversity view: the profile as data, its description in
    words (offline, from the profile) and the static hints about its code.  For a
    proposal, `nearest` is the nearest member by behaviour: {"member", "distance",
    "stderr", "same_within_noise", "differences"} (the top few).  `model_summary`:
    a summary of the code asked of the configured LLM from the TUI, {"model",
    "text"}, model text (older logs and older csro: none).  Older sessions
    simply have none."""

    TYPE: ClassVar[str] = "behaviour_profiled"
    policy_id: str  # a member id or a proposal id
    source_hash: str
    profile: dict[str, Any]
    description: list[str] = field(default_factory=list)
    hints: list[dict[str, Any]] = field(default_factory=list)  # line, message
    nearest: dict[str, Any] | None = None
    model_summary: dict[str, Any] | None = None


EVENT_TYPES: dict[str, type[Event]] = {
    cls.TYPE: cls
    for cls in (
        SessionStarted,
        SessionResumed,
        SessionClosed,
        IterationStarted,
        OracleFailed,
        ProposalCreated,
        ProposalValidated,
        ProposalPreviewed,
        ProposalDecided,
        PolicyAdded,
        PayoffsEvaluated,
        BenchmarkEvaluated,
        MetaSolved,
        MetricsComputed,
        IterationFinished,
        GamePlayed,
        BehaviourProfiled,
    )
}


# --- conversion ---------------------------------------------------------------


def _failure_to_json(failure: PolicyFailure | None) -> dict | None:
    return failure.to_dict() if failure is not None else None


def _failure_from_json(data: Any) -> PolicyFailure | None:
    return PolicyFailure.from_dict(data) if data else None


def _finite(value: float | None) -> float | None:
    """JSON has no NaN or infinity; they are recorded as null."""
    if value is None:
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def _to_json(value: Any) -> Any:
    if isinstance(value, PolicyFailure):
        return _failure_to_json(value)
    if isinstance(value, PayoffRecord):
        data = dataclasses.asdict(value)
        data["failure"] = _failure_to_json(value.failure)
        data["mean"] = _finite(value.mean)
        data["stderr"] = _finite(value.stderr)
        return data
    if isinstance(value, Preview):
        return {
            "expected_payoff": _finite(value.expected_payoff),
            "per_member": {k: _finite(v) for k, v in value.per_member.items()},
            "population_metrics": _to_json(value.population_metrics),
            "failure": _failure_to_json(value.failure),
            "duplicate_of": value.duplicate_of,
            "duplicate_reason": value.duplicate_reason,
            "stderr": {k: _finite(v) for k, v in value.stderr.items()},
            "expected_stderr": _finite(value.expected_stderr),
            "pairs": value.pairs,
        }
    if isinstance(value, ValidationResult):
        return _validation_to_json(value)
    if isinstance(value, (PolicyRecord, Proposal)):
        data = dataclasses.asdict(value)
        if data.get("seat") is None:
            del data["seat"]  # one population: the line stays as it was before seats existed
        if not data.get("failure", True):
            del data["failure"]  # an ordinary proposal's line stays as it was before failed ones were kept
        return _to_json(data)
    if isinstance(value, dict):
        return {str(k): _to_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_to_json(v) for v in value]
    if isinstance(value, float):
        return _finite(value)
    return value


# The fields of a ValidationResult as a version-1 proposal_validated line has them (flat), in
# that order; `timing`, `smoke_stderr` and `printed` came later and are optional when read.
_VALIDATION_KEYS = (
    "valid", "issues", "smoke", "smoke_episodes", "failure", "timing", "duplicate_of", "duplicate_reason", "smoke_stderr",
    "printed",
)


def _validation_to_json(value: ValidationResult) -> dict[str, Any]:
    return {key: _to_json(getattr(value, key)) if key != "failure" else _failure_to_json(value.failure)
            for key in _VALIDATION_KEYS}


def _validation_from_json(record: dict[str, Any]) -> ValidationResult:
    return ValidationResult(
        valid=bool(record["valid"]),
        issues=list(record.get("issues") or []),
        failure=_failure_from_json(record.get("failure")),
        smoke=dict(record.get("smoke") or {}),
        smoke_episodes=int(record.get("smoke_episodes") or 0),
        smoke_stderr={k: float(v) for k, v in (record.get("smoke_stderr") or {}).items() if v is not None},
        timing=str(record.get("timing") or ""),
        printed=str(record.get("printed") or ""),
        duplicate_of=record.get("duplicate_of"),
        duplicate_reason=record.get("duplicate_reason") or "",
    )


def _nan_if_none(value: Any) -> float:
    return math.nan if value is None else float(value)


def _preview_from_json(data: dict) -> Preview:
    return Preview(
        expected_payoff=_nan_if_none(data.get("expected_payoff")),
        per_member={k: _nan_if_none(v) for k, v in data.get("per_member", {}).items()},
        population_metrics=data.get("population_metrics"),
        failure=_failure_from_json(data.get("failure")),
        duplicate_of=data.get("duplicate_of"),
        duplicate_reason=data.get("duplicate_reason") or "",
        stderr={k: float(v) for k, v in (data.get("stderr") or {}).items() if v is not None},
        expected_stderr=float(data.get("expected_stderr") or 0.0),
        pairs=int(data.get("pairs") or 0),
    )


def _payoff_from_json(data: dict) -> PayoffRecord:
    return PayoffRecord(
        row=data["row"],
        col=data["col"],
        mean=_nan_if_none(data.get("mean")),
        stderr=_nan_if_none(data.get("stderr")) if data.get("stderr") is not None else 0.0,
        episodes=int(data.get("episodes", 0)),
        seeds=list(data.get("seeds", [])),
        exact=bool(data.get("exact", False)),
        failure=_failure_from_json(data.get("failure")),
    )


# Fields whose JSON form needs converting back into an object.
_DECODERS: dict[str, Any] = {
    "policy": lambda d: PolicyRecord(**d),
    "proposal": lambda d: Proposal(**d),
    "preview": _preview_from_json,
    "entries": lambda items: [_payoff_from_json(item) for item in items],
    "failure": _failure_from_json,
}


# Fields added for two populations (issue 23) and loosened limits (issue 35), written
# only when set, so a line without them is byte for byte what it was before.
_OMITTED_WHEN_NONE = frozenset({"seat", "joined", "loosened_limits"})


def to_record(event: Event) -> dict[str, Any]:
    """The JSON object of one log line (envelope first, then the fields)."""
    record: dict[str, Any] = {"v": SCHEMA_VERSION, "seq": event.seq, "ts": event.ts, "type": event.TYPE}
    for f in dataclasses.fields(event):
        if f.name in ("seq", "ts"):
            continue
        value = getattr(event, f.name)
        if value is None and f.name in _OMITTED_WHEN_NONE:
            continue
        if isinstance(value, ValidationResult):
            record.update(_validation_to_json(value))  # flat, as version 1 wrote it
        else:
            record[f.name] = _to_json(value)
    return record


def from_record(record: Any) -> Event:
    """Rebuild an event from a log line's object; EventFormatError if it is not one."""
    if not isinstance(record, dict):
        raise EventFormatError("not a JSON object")
    missing = [key for key in ENVELOPE_KEYS if key not in record]
    if missing:
        raise EventFormatError(f"not a session event (missing {', '.join(missing)})")
    version = record["v"]
    if version != SCHEMA_VERSION:
        raise EventFormatError(f"schema version {version!r} is not supported (this csro reads {SCHEMA_VERSION})")
    cls = EVENT_TYPES.get(record["type"])
    if cls is None:
        raise EventFormatError(f"unknown event type {record['type']!r}")
    if not isinstance(record["seq"], int):
        raise EventFormatError(f"seq {record['seq']!r} is not an integer")
    kwargs: dict[str, Any] = {"seq": record["seq"], "ts": str(record["ts"])}
    try:
        for f in dataclasses.fields(cls):
            if f.name == "validation" and cls is ProposalValidated:
                kwargs["validation"] = _validation_from_json(record)
                continue
            if f.name in ("seq", "ts") or f.name not in record:
                continue
            value = record[f.name]
            decoder = _DECODERS.get(f.name)
            kwargs[f.name] = decoder(value) if decoder is not None and value is not None else value
        event = cls(**kwargs)
    except (TypeError, KeyError, ValueError, AttributeError, OverflowError) as error:
        raise EventFormatError(f"bad {record['type']} event: {error}") from None
    check_event(event)
    return event


# --- ids and names read from a log ------------------------------------------------------
#
# A log may come from anyone (docs/SECURITY.md, "Files from elsewhere"), and its ids end up
# in file names (`policies/<id>.py`, an export's `<id>_<name>.py`), so they are checked when
# read: an id is what the engine makes ("p3", "i2.1", a session's "20261203-101923-kuhn_poker-seed"),
# a name is one line of text.  A bad one makes the event corrupt, with its line number.

ID_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,199}")
ID_RULE = "letters, digits, '_', '.', '-'; 200 at most; a letter or digit first"
MAX_NAME_LENGTH = 1000
_CONTROL_CHARACTER = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def is_valid_id(value: Any) -> bool:
    return isinstance(value, str) and ID_PATTERN.fullmatch(value) is not None


def _identifiers(event: Event) -> tuple[dict[str, Any], dict[str, Any]]:
    """({field: id or None}, {field: name}) of an event: what `check_identifiers` checks."""
    ids: dict[str, Any] = {}
    names: dict[str, Any] = {}
    if isinstance(event, SessionStarted):
        ids["session_id"] = event.session_id
        names.update(game=event.game, oracle=event.oracle, solver=event.solver)
    elif isinstance(event, ProposalCreated):
        ids.update(proposal_id=event.proposal_id, edited_from=event.edited_from, parent=event.proposal.parent)
        names["name"] = event.proposal.name
    elif isinstance(event, (ProposalValidated, ProposalPreviewed, ProposalDecided)):
        ids["proposal_id"] = event.proposal_id
    elif isinstance(event, PolicyAdded):
        ids.update(id=event.policy.id, parent=event.policy.parent, proposal_id=event.proposal_id)
        names["name"] = event.policy.name
    elif isinstance(event, PayoffsEvaluated):
        for number, entry in enumerate(event.entries, start=1):
            ids[f"entry {number} row"], ids[f"entry {number} col"] = entry.row, entry.col
    elif isinstance(event, (BenchmarkEvaluated, BehaviourProfiled, GamePlayed)):
        ids["policy_id"] = event.policy_id
        if isinstance(event, GamePlayed):
            names["opponent"] = event.opponent
    elif isinstance(event, MetaSolved):
        ids.update({f"population[{i}]": member for i, member in enumerate(event.population)})
    elif isinstance(event, MetricsComputed):
        ids["new_policy"] = event.new_policy
        ids.update({f"meta_strategy key {i + 1}": member for i, member in enumerate(event.meta_strategy)})
    elif isinstance(event, IterationFinished):
        ids["accepted"] = event.accepted
        ids.update({f"joined[{i}]": member for i, member in enumerate(event.joined or [])})
    return ids, names


def check_event(event: Event) -> None:
    """EventFormatError when a field of `event` is not of its declared type, an id is not an
    id or a name is not one line of text."""
    problem = _type_problem(event)
    if problem:
        raise EventFormatError(f"bad {event.TYPE} event: {problem}")
    ids, names = _identifiers(event)
    for field_name, value in ids.items():
        if value is not None and not is_valid_id(value):
            raise EventFormatError(f"bad {event.TYPE} event: {field_name} {quoted(value)} is not an id ({ID_RULE})")
    for field_name, value in names.items():
        if not isinstance(value, str) or len(value) > MAX_NAME_LENGTH or _CONTROL_CHARACTER.search(value):
            raise EventFormatError(f"bad {event.TYPE} event: {field_name} {quoted(value)} is not a name "
                                   f"(one line of text, {MAX_NAME_LENGTH} characters at most, no control characters)")




# --- field types ------------------------------------------------------------------------
#
# JSON gives any type anywhere; a field of the wrong type (an iteration "zero", a config that
# is a list) would fail far from the log, in whatever reads the state.  Checked against the
# dataclasses' own annotations, so a new field is checked without a word here.

# Per dataclass: (field, its annotation, a test made from the annotation once), fields typed Any left out.
_CHECKS: dict[type, list[tuple[str, Any, Callable[[Any], bool]]]] = {}


def _checks(cls: type) -> list[tuple[str, Any, Callable[[Any], bool]]]:
    checks = _CHECKS.get(cls)
    if checks is None:  # (records.py names PolicyFailure for type checking only)
        hints = typing.get_type_hints(cls, localns={"PolicyFailure": PolicyFailure})
        checks = _CHECKS[cls] = [(f.name, hints[f.name], _test(hints[f.name])) for f in dataclasses.fields(cls)
                                 if f.name in hints and hints[f.name] is not Any]
    return checks


def _type_problem(record: Any) -> str:
    """"" when every field of the dataclass `record` fits its annotation, else which does not."""
    for name, hint, fits in _checks(type(record)):
        value = getattr(record, name)
        if not fits(value):
            return f"{name} {quoted(value)} is not {_type_words(hint)}"
        if dataclasses.is_dataclass(value) and not isinstance(value, PolicyFailure):
            inner = _type_problem(value)
            if inner:
                return f"{name}: {inner}"
    return ""


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number_or_null(value: Any) -> bool:  # JSON writes NaN as null and 1.0 may come as 1
    return value is None or (isinstance(value, (int, float)) and not isinstance(value, bool))


def _test(hint: Any) -> Callable[[Any], bool]:
    """A function telling whether a value read from JSON fits the annotation `hint`."""
    if hint is Any:
        return lambda value: True
    origin = typing.get_origin(hint)
    if origin is Union or origin is types.UnionType:
        alternatives = [_test(arg) for arg in typing.get_args(hint)]
        return lambda value: any(fits(value) for fits in alternatives)
    if hint is type(None):
        return lambda value: value is None
    if hint is float:
        return _is_number_or_null
    if hint is int:
        return _is_int
    if origin is dict:
        key, item = (_test(arg) for arg in typing.get_args(hint))
        return lambda value: isinstance(value, dict) and all(key(k) and item(v) for k, v in value.items())
    if origin is list:
        (item_hint,) = typing.get_args(hint)
        if item_hint is Any:
            return lambda value: isinstance(value, list)
        item = _test(item_hint)
        return lambda value: isinstance(value, list) and all(item(v) for v in value)
    if isinstance(hint, type):
        return lambda value: isinstance(value, hint)
    return lambda value: True


def _type_words(hint: Any) -> str:
    """`int`, `dict[str, float]`, `str | None`: the annotation as written."""
    return str(hint).replace("typing.", "") if typing.get_args(hint) else getattr(hint, "__name__", str(hint))
