"""The wire between the parent and a policy host: how messages become bytes.

One JSON object a line (the host reads every message with json.loads,
host_channel.py).  What this module decides is what the policy receives, so
it is part of what an exact table depends on (table_cache.fingerprinted_files):

- `encode_message`: a message as one protocol line;
- `encode_observation`: an observation with its lists sent as appended
  suffixes (per episode and key the caller keeps what the host holds);
- `column_legal_lists`, `column_message`: a batch of observations that share
  their keys, checked and sent by column;
- `decode_reply`: a reply line as Python data (checked by checks.py);
- `ReplyBound`, `act_reply_bound`: the most bytes a reply to a request can
  take (read with that bound, channel.py, before anything is parsed).

Lists in observations (except `legal_actions`) are sent as appended
suffixes: a list that is the same object as last time is assumed to have
only grown (its length and last known element are checked); a different
list object is compared with the host's copy and sent in full unless it
extends it.  The host hands the policy its reconstructed list itself (no
per-move copy) and checks a length-and-sample fingerprint after `act`; when
the policy changed the list, the host drops it and asks for it whole next
time ("resync", checks.check_resync).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

# How much of a policy's printed output its host keeps from the start, for
# the review to show (the count of bytes printed is kept whatever the size).
PRINTED_HEAD_CHARS = 600
# The longest message, and traceback, a failure reply carries (the host cuts
# them: host_channel._Channel.send), and the longest type name reported for
# an answer of the wrong type (host_main._AnswerTypes).
FAILURE_TEXT_CHARS = 20_000
TYPE_NAME_CHARS = 60

# Messages to the host are encoded with orjson when it can produce exactly
# what the json module would mean (measured: ~10x faster on act batches,
# the biggest single cost of a lockstep step in the referee).  Anything it
# refuses or would change goes through json as before: values it does not
# serialise the way json does (subclasses, dataclasses, datetimes, big
# ints, non-str keys) raise and fall back, and a b"null" in its output
# (None, but also NaN/inf, which orjson turns into null while json writes
# NaN/Infinity) re-encodes with json.  The host reads every message with
# json.loads, so what the policy receives is unchanged.

try:
    import orjson as _orjson
except ImportError:  # optional: everything works (slower) without it
    _orjson = None

_ORJSON_STRICT = (
    _orjson.OPT_PASSTHROUGH_SUBCLASS | _orjson.OPT_PASSTHROUGH_DATACLASS | _orjson.OPT_PASSTHROUGH_DATETIME
    if _orjson is not None
    else 0
)


def encode_message(message: dict, what: str) -> bytes:
    """One protocol line; ValueError for a message JSON cannot carry."""
    if _orjson is not None:
        try:
            data = _orjson.dumps(message, option=_ORJSON_STRICT)
        except TypeError:  # orjson.JSONEncodeError: let json decide, as before
            data = None
        if data is not None and b"null" not in data:
            return data + b"\n"
    try:
        return json.dumps(message, separators=(",", ":")).encode("utf-8") + b"\n"
    except (TypeError, ValueError) as error:
        raise ValueError(f"cannot send {what} to the policy host: {error}") from None


# -- how long a reply may be ----------------------------------------------------
#
# Each reply is read with the bound its request allows and parsed only when
# it fits, so what a host sends never costs the parent more than its request
# could need.  The host writes json.dumps' ASCII form (host_channel._Channel),
# in which a character takes at most 12 bytes (a surrogate pair's two \uXXXX
# escapes); the figures below are upper bounds of what an honest host sends.

_CHAR_BYTES = 12
_INT_BYTES = 20  # an int of at most 63 bits with its sign: action ids (host_main), episode ids (PolicyHost)
_FLOAT_BYTES = 24  # the longest repr of a float, -2.2250738585072014e-308
_TYPE_REPORT_BYTES = 11 + _CHAR_BYTES * TYPE_NAME_CHARS  # {"type":"name"}
# {"seq":N,"ok":true,"answers":[],"resync":[]}, or a load's "layers", with room to spare.
_REPLY_BYTES = 256
_PRINTED_BYTES = 32 + _CHAR_BYTES * PRINTED_HEAD_CHARS  # ,"printed":[N,"first characters"]
# An answer: an action id, a type report, or {"dist":[...]} holding at most
# one [id,probability] entry per legal action and, last, the one entry the
# parent refuses (host_main._AnswerTypes.distribution sends none after it).
_ANSWER_BYTES = 12 + 4 + 2 * _TYPE_REPORT_BYTES
_LEGAL_ENTRY_BYTES = 4 + _INT_BYTES + _FLOAT_BYTES


@dataclass(frozen=True)
class ReplyBound:
    """The most bytes a reply may take: `ok_bytes` for an answer, `any_bytes`
    for any reply, a failure report included (its texts are cut by the host)."""

    ok_bytes: int
    any_bytes: int


def reply_bound(output_tail_chars: int, ok_bytes: int = _REPLY_BYTES + _PRINTED_BYTES) -> ReplyBound:
    """The bound of a reply whose answer takes at most `ok_bytes` (the
    default: a reply that answers nothing, to prepare, load, new or end)."""
    failure_bytes = _REPLY_BYTES + _PRINTED_BYTES + _CHAR_BYTES * (2 * FAILURE_TEXT_CHARS + output_tail_chars)
    return ReplyBound(ok_bytes, max(ok_bytes, failure_bytes))


def act_reply_bound(output_tail_chars: int, answers: int, legal_actions: int, keys: int = 0,
                    characters: int = 0) -> ReplyBound:
    """The bound of the reply to an act batch of `answers` requests holding
    `legal_actions` legal actions in all, whose observations send lists under
    `keys` keys of `characters` characters in all, counted per observation
    (each may come back as a `resync` entry [episode, key])."""
    ok_bytes = (_REPLY_BYTES + _PRINTED_BYTES + answers * _ANSWER_BYTES + legal_actions * _LEGAL_ENTRY_BYTES
                + keys * (6 + _INT_BYTES) + characters * _CHAR_BYTES)
    return reply_bound(output_tail_chars, ok_bytes)


def decode_reply(line: bytes):
    """The reply as Python data; ValueError if it is not JSON.

    json, not orjson: replies are small (an action id per request), and
    orjson reads integers beyond 64 bits as floats where json keeps them.
    Only a line within its request's bound gets here (channel.py), so what
    parsing builds is bounded too; nesting past the recursion limit raises
    RecursionError, an integer past 4,300 digits ValueError.
    """
    return json.loads(line)


def encode_observation(episode: int, obs: dict, sent: dict[str, tuple[list, list]]) -> list:
    """[episode, plain values, {key: [start, appended items]}] for the child.

    Runs once per request (every move of every episode), so it is kept
    lean: the common case, the same list object grown by a few items, is
    one comparison, one slice and one extend; `sent` is updated in place.
    """
    plain = {}
    deltas = {}
    for key, value in obs.items():
        if value.__class__ is not list or key == "legal_actions":
            plain[key] = value
            continue
        previous = sent.get(key)
        if previous is not None:
            last_object, mirror = previous
            known = len(mirror)
            if known and len(value) >= known and (
                value[known - 1] == mirror[-1] if value is last_object else value[:known] == mirror
            ):
                suffix = value[known:]
                mirror += suffix
                if value is not last_object:
                    sent[key] = (value, mirror)
                deltas[key] = [known, suffix]
                continue
        sent[key] = (value, list(value))
        deltas[key] = [0, value]
    if len(sent) != len(deltas):  # lists the observation no longer has
        for key in [key for key in sent if key not in deltas]:
            del sent[key]
    return [episode, plain, deltas or 0]


def column_legal_lists(
    count: int, keys: list[str], same: dict, each: dict[str, list], grown: dict[str, tuple]
) -> list:
    """The legal-action list of each of the `count` observations of a batch
    sent by column (PolicyHost.send_act_columns says what each argument
    holds).  ValueError for columns that do not fit together."""
    for key in keys:
        if (key in same) + (key in each) + (key in grown) != 1:
            raise ValueError(f"observation key {key!r} needs exactly one of same, each or grown")
    for key, value in same.items():
        if isinstance(value, (list, tuple)) and not all(type(item) in (int, float, str, bool) for item in value):
            raise ValueError(f"shared value {key!r} must be a scalar or a list of scalars")
    for key, column in each.items():
        if len(column) != count:
            raise ValueError(f"column {key!r} has {len(column)} values for {count} episodes")
    for key, (_length, items) in grown.items():
        if len(items) != count:
            raise ValueError(f"grown list {key!r} has {len(items)} items for {count} episodes")
    if "legal_actions" in same:
        legal = same["legal_actions"]
        legal_lists = [legal] * count
    else:
        legal_lists = each.get("legal_actions")
    if legal_lists is None or not all(isinstance(legal, (list, tuple)) for legal in legal_lists[:1]):
        raise ValueError("the observations need a legal_actions list (in same or each)")
    return legal_lists


def column_message(
    episodes: list[int],
    keys: list[str],
    same: dict,
    each: dict[str, list],
    grown: dict[str, tuple],
    whole: list[tuple[int, str, list]],
) -> dict:
    """The `cols` message of a batch sent by column (checked first with
    `column_legal_lists`)."""
    message = {
        "op": "cols",
        "ids": episodes,
        "keys": keys,
        "same": same,
        "each": each,
        "grown": {key: [length, items] for key, (length, items) in grown.items()},
    }
    if whole:
        message["whole"] = [[index, key, items] for index, key, items in whole]
    return message
