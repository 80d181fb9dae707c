"""The parent's checks of everything it reads back from a policy host.

The parent trusts nothing a host sends (docs/SECURITY.md, layer 12): every
reply's sequence number and shape, the answers against `legal_actions`
(exact ints, or finite non-negative probabilities summing to 1 on legal
actions), the reports of printed output and of the kernel layers applied,
the lists the host dropped; a host's own failure report is read as data and
its text cleaned (`text.clean_text`), and a host that died is judged by its
exit status and log.  A check that fails raises `HostFault`; `PolicyHost`
then kills the host and raises the fault as its `PolicyFailure`.

What is checked here decides what a policy's answers become, so this module
is part of what an exact table depends on (table_cache.fingerprinted_files).
"""

from __future__ import annotations

import math
import signal

from csro_tui.sandbox.failures import FailureCategory
from csro_tui.sandbox.host_kernel import syscall_name
from csro_tui.sandbox.limits import SandboxLimits
from csro_tui.sandbox.wire import FAILURE_TEXT_CHARS, PRINTED_HEAD_CHARS, TYPE_NAME_CHARS
from csro_tui.text import clean_text

# Categories the child may report itself; anything else is malformed.
_CHILD_CATEGORIES = {
    "crash": FailureCategory.CRASH,
    "memory": FailureCategory.MEMORY,
    "forbidden": FailureCategory.FORBIDDEN,
    "timeout": FailureCategory.TIMEOUT,
}
_MEMORY_HINTS = ("MemoryError", "Cannot allocate memory", "out of memory", "Out of memory", "memory allocation")
_LAST_LINE_LIMIT = 200  # longest line of the host's log quoted in a failure summary


class HostFault(Exception):
    """What a host sent breaks the protocol, or what its policy did fails it.

    args: (FailureCategory, message) or (FailureCategory, message, traceback).
    """


def check_reply(reply, seq: int, what: str, size: int = 0, ok_bytes: int | None = None) -> dict:
    """A decoded reply of `size` bytes: a dict with the expected sequence
    number and `ok`; one that answers (ok true) in at most `ok_bytes` (its
    request's wire.ReplyBound: only a failure report may be longer)."""
    if not isinstance(reply, dict) or reply.get("seq") != seq or not isinstance(reply.get("ok"), bool):
        raise HostFault(FailureCategory.MALFORMED, f"host sent a reply out of protocol while {what}")
    if ok_bytes is not None and size > ok_bytes and reply["ok"]:
        raise HostFault(FailureCategory.MALFORMED, f"{reply_too_long(f'{size} bytes', ok_bytes)} while {what}")
    return reply


def reply_too_long(size: str, limit: int) -> str:
    """The failure of a host whose reply is longer than its request allows."""
    return f"host sent a reply of {size} where its request allows at most {limit}"


def check_printed(printed, printed_bytes: int) -> list:
    """A reply's `printed: [bytes, first characters]`, checked: a count that
    never goes down (from `printed_bytes`), a head no longer than asked for."""
    if not (type(printed) is list and len(printed) == 2 and type(printed[0]) is int
            and printed_bytes <= printed[0] < 1 << 62 and type(printed[1]) is str
            and len(printed[1]) <= PRINTED_HEAD_CHARS):
        raise HostFault(FailureCategory.MALFORMED, "host sent a report of printed output out of protocol")
    return printed


def check_layers(applied, wanted: dict) -> dict:
    """The host must report the kernel layers it was asked to apply (`wanted`:
    isolation.kernel_layers())."""
    if not isinstance(applied, dict) or (
        bool(wanted["landlock"]) and not applied.get("landlock")
    ) or (wanted["seccomp"] and not applied.get("seccomp")):
        raise HostFault(FailureCategory.MALFORMED, "host did not confirm its kernel isolation layers")
    return applied


def check_resync(resync) -> list:
    """The (episode, key) entries of a reply's `resync`: lists the policy
    changed in place, which the host dropped."""
    if not isinstance(resync, list):
        raise HostFault(FailureCategory.MALFORMED, "host sent a reply out of protocol (resync)")
    for entry in resync:
        if not (
            isinstance(entry, list) and len(entry) == 2 and type(entry[0]) is int and isinstance(entry[1], str)
        ):
            raise HostFault(FailureCategory.MALFORMED, "host sent a reply out of protocol (resync)")
    return resync


def check_act_reply(reply: dict, requests: list, legal_lists: list) -> tuple[list[int | dict[int, float]], list]:
    """An act batch's reply (checked by `check_reply`): its answers, one per
    request, checked (`check_answers`), and its `resync` entries (`check_resync`)."""
    answers = reply.get("answers")
    if not isinstance(answers, list) or len(answers) != len(requests):
        sent = len(answers) if isinstance(answers, list) else "no"
        raise HostFault(FailureCategory.MALFORMED, f"host sent {sent} answers for {len(requests)} requests")
    resync = check_resync(reply.get("resync", []))
    return check_answers(answers, requests, legal_lists), resync


def check_answers(answers: list, requests: list, legal_lists: list) -> list[int | dict[int, float]]:
    """Each answer (one per request) as a legal action id
    or a normalised distribution over legal actions."""
    shared = legal_lists[0] if legal_lists else None
    if shared is not None and legal_lists[-1] is shared and legal_lists.count(shared) == len(legal_lists):
        # One legal list for the whole batch (send_act_columns): exact ints,
        # all legal, is two C-level passes instead of a check per answer.
        if set(map(type, answers)) == {int} and set(shared).issuperset(answers):
            return answers
    check = check_answer
    # Plain legal action ids (the common case) are checked inline; anything
    # else goes through check_answer, which also words the failures.
    return [
        answer if type(answer) is int and answer in legal else check(answer, legal, episode)
        for answer, legal, (episode, _obs) in zip(answers, legal_lists, requests)
    ]


def check_answer(answer, legal, episode: int) -> int | dict[int, float]:
    if type(answer) is int:
        if answer not in legal:
            raise HostFault(
                FailureCategory.ILLEGAL_ACTION,
                f"act returned action {answer}, which is not legal (legal: {_brief_list(legal)}) "
                f"in episode {episode}",
            )
        return answer
    if isinstance(answer, dict) and set(answer) == {"dist"} and isinstance(answer["dist"], list):
        return check_distribution(answer["dist"], legal, episode)
    if isinstance(answer, dict) and set(answer) == {"type"} and isinstance(answer["type"], str):
        raise HostFault(
            FailureCategory.MALFORMED,
            f"act returned a {answer['type'][:TYPE_NAME_CHARS]}; expected an action id (int) or a dict "
            f"{{action id: probability}} (episode {episode})",
        )
    raise HostFault(FailureCategory.MALFORMED, f"host sent an answer out of protocol (episode {episode})")


def check_distribution(pairs: list, legal, episode: int) -> dict[int, float]:
    where = f"(episode {episode})"
    if not pairs:
        raise HostFault(FailureCategory.MALFORMED, f"act returned an empty distribution {where}")
    legal_set = set(legal)
    result: dict[int, float] = {}
    for pair in pairs:
        if not (isinstance(pair, list) and len(pair) == 2):
            raise HostFault(FailureCategory.MALFORMED, f"host sent an answer out of protocol {where}")
        key, probability = pair
        if type(key) is not int:
            kind = key.get("type") if isinstance(key, dict) else None
            raise HostFault(
                FailureCategory.MALFORMED,
                f"distribution key of type {str(kind)[:TYPE_NAME_CHARS]} is not an action id {where}",
            )
        if type(probability) not in (int, float):
            kind = probability.get("type") if isinstance(probability, dict) else None
            raise HostFault(
                FailureCategory.MALFORMED,
                f"probability of action {key} is a {str(kind)[:TYPE_NAME_CHARS]}, not a number {where}",
            )
        if type(probability) is int:  # only a forged reply has ints too big for a float
            probability = float(probability) if probability.bit_length() <= 1023 else math.inf
        if not math.isfinite(probability):
            raise HostFault(FailureCategory.MALFORMED, f"probability of action {key} is {probability} {where}")
        if probability < 0:
            raise HostFault(FailureCategory.MALFORMED, f"probability of action {key} is negative ({probability}) {where}")
        if key not in legal_set:
            if probability == 0:
                continue  # zero weight on an illegal action changes nothing
            raise HostFault(
                FailureCategory.ILLEGAL_ACTION,
                f"act gave probability {probability:g} to action {key}, which is not legal "
                f"(legal: {_brief_list(legal)}) {where}",
            )
        result[key] = float(probability)
    total = math.fsum(result.values())
    if not abs(total - 1.0) <= 1e-6:
        raise HostFault(FailureCategory.MALFORMED, f"probabilities sum to {total:.9g}, not 1 {where}")
    return {key: probability / total for key, probability in result.items()}


def child_failure(reply: dict, limits: SandboxLimits) -> tuple[FailureCategory, str, str]:
    """The failure a host reported itself (a reply with ok false), read as data:
    a known category and text only, cleaned; else malformed."""
    name = reply.get("category")
    category = _CHILD_CATEGORIES.get(name) if isinstance(name, str) else None
    message = reply.get("message")
    traceback_text = reply.get("traceback", "")
    output = reply.get("output", "")
    if category is None or not all(isinstance(v, str) for v in (message, traceback_text, output)):
        return FailureCategory.MALFORMED, "host sent a failure report out of protocol", ""
    number = reply.get("syscall")
    if type(number) is int and 0 <= number < 1 << 16:  # a call seccomp refused: name it
        message = message.replace(f"system call #{number}", f"system call {syscall_name(number)}", 1)
    # Policy-made text: escape sequences and control characters go here,
    # before it reaches a session log, an LLM prompt or a terminal.
    message = clean_text(message[:FAILURE_TEXT_CHARS]) or "no message"
    if category is FailureCategory.MEMORY:
        message += (f" (limit {limits.memory_mb} MB for the host, which may play "
                    f"{limits.episodes_per_host()} episodes at once: {limits.episode_memory_mb} MB each)")
    traceback_text = clean_text(traceback_text[:FAILURE_TEXT_CHARS])
    if output:
        traceback_text += f"\n--- last output of the policy ---\n{clean_text(output[-limits.output_tail_chars:])}"
    return category, message, traceback_text


def death_report(code: int, mode: str | None, log: str, limits: SandboxLimits, what: str
                 ) -> tuple[FailureCategory, str, str]:
    """Classify a host that stopped talking and was not killed by the clock:
    by its exit status `code` (a returncode), its sandbox mode and the tail
    of its log (cleaned)."""
    signal_number = -code if code < 0 else (code - 128 if mode == "bubblewrap" and code > 128 else 0)
    if signal_number:
        try:
            signal_name = signal.Signals(signal_number).name
        except ValueError:
            signal_name = f"signal {signal_number}"
        if signal_number == signal.SIGPROF:
            return (
                FailureCategory.TIMEOUT,
                f"a call ran past its limit of {limits.move_timeout:g} s (plus {limits.call_grace:g} s "
                f"of grace) in CPU time while {what}",
                log,
            )
        if signal_number == signal.SIGXCPU:
            return (
                FailureCategory.TIMEOUT,
                f"used up its CPU time limit of {limits.cpu_seconds} s while {what}",
                log,
            )
        if any(hint in log for hint in _MEMORY_HINTS):
            return (
                FailureCategory.MEMORY,
                f"host was killed ({signal_name}) while {what}, out of memory (limit {limits.memory_mb} MB)",
                log,
            )
        if signal_number == signal.SIGKILL:
            # Not our doing (the memory limit makes allocations fail, the
            # CPU limit sends SIGXCPU): another process, or the system
            # out of memory as a whole.  Say so rather than guess.
            return (
                FailureCategory.CRASH,
                f"host was killed (SIGKILL) while {what}, from outside the sandbox "
                "(another process, or the system's out-of-memory killer)",
                log,
            )
        hint = " (too deep recursion?)" if signal_number == signal.SIGSEGV else ""
        return FailureCategory.CRASH, f"host crashed with {signal_name} while {what}{hint}", log
    if any(hint in log for hint in _MEMORY_HINTS):
        return (
            FailureCategory.MEMORY,
            f"host ran out of memory while {what} (limit {limits.memory_mb} MB)",
            log,
        )
    last = log.splitlines()[-1] if log else "no message"
    if len(last) > _LAST_LINE_LIMIT:  # the policy may have written it: keep the summary short
        last = last[: _LAST_LINE_LIMIT - 3] + "..."
    return FailureCategory.CRASH, f"host exited with code {code} while {what}: {last}", log


def _brief_list(values, limit: int = 12) -> str:
    values = list(values)
    shown = ", ".join(str(v) for v in values[:limit])
    return f"[{shown}{', ...' if len(values) > limit else ''}]"
