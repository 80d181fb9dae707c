"""Words for a behaviour profile, no model needed.

Exact games: per situation (betting so far), what the policy does with each
holding, merged where all holdings do the same ("first to act (seat 0): bets
the King; checks the Jack and the Queen").  Sampled games: against each probe
what it achieves and whether it changes over the match, then which probes it
beats and which it loses to.
"""

from __future__ import annotations

import math
from collections import OrderedDict

from csro_tui.profiles.model import EXACT, Profile
from csro_tui.profiles.report import figure

# A move is "the" move when it has at least this probability; else the mix is said.
PURE = 0.999
# Exact: situations below this reach (against the uniform opponent) are left out.
MIN_REACH = 1e-6
MAX_EXACT_SENTENCES = 12


def describe(profile: Profile) -> list[str]:
    """Sentences, most telling first."""
    if profile.failure:
        return [f"its table could not be built: {profile.failure}"]
    if profile.kind == EXACT:
        return _describe_exact(profile)
    return _describe_sampled(profile)


def _mix(distribution: dict[str, float]) -> str:
    moves = sorted(((p, move) for move, p in distribution.items() if p > 0.005), reverse=True)
    if not moves:
        return "does nothing"
    if moves[0][0] >= PURE:
        return _verb(moves[0][1])
    return ", ".join(f"{_verb(move)} {p:.0%}" for p, move in moves)


def _verb(move: str) -> str:
    first, _, rest = move.partition(" ")
    if first.endswith(("s", "sh", "ch")):
        verb = first + "es"
    elif first.endswith("y") and len(first) > 1 and first[-2] not in "aeiou":
        verb = first[:-1] + "ies"
    else:
        verb = first + "s"
    return f"{verb} {rest}".strip()


def _join(words: list[str]) -> str:
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]


def _describe_exact(profile: Profile) -> list[str]:
    by_label: "OrderedDict[tuple, list]" = OrderedDict()
    for row in profile.situations:
        if row.weight < MIN_REACH:
            continue
        by_label.setdefault((row.seat, row.label), []).append(row)
    entries = []  # [seat, label tokens, what it does, reach]
    for (seat, label), rows in by_label.items():
        actions: "OrderedDict[str, list[str]]" = OrderedDict()
        for row in rows:
            actions.setdefault(_mix(row.distribution), []).append(row.group)
        if len(actions) == 1:
            (action,) = actions
            pure = max(rows[0].distribution.values(), default=0.0) >= PURE
            if not rows[0].group:
                body = action
            else:  # "always" of a mix would read as a pure move
                body = f"always {action}" if pure else f"{action}, whatever it holds"
        else:
            body = "; ".join(f"{action} with {_join(sorted(set(groups), key=groups.index))}"
                             for action, groups in actions.items())
        entries.append([seat, label.split(" "), body, sum(row.weight for row in rows)])
    holdings = list(dict.fromkeys(row.group for row in profile.situations))
    entries = _merge_one_word_apart(entries, holdings)
    # The most reached situations only (Leduc has hundreds), in seat order.
    ranked = sorted(entries, key=lambda entry: -entry[3])
    kept = sorted(ranked[:MAX_EXACT_SENTENCES], key=lambda entry: (entry[0] if entry[0] is not None else -1, -entry[3]))
    sentences = []
    for seat, tokens, body, _ in kept:
        label = " ".join(tokens)
        where = f"{label} (seat {seat})" if seat is not None else label
        sentences.append(f"{where}: {body}")
    if len(ranked) > len(kept):
        sentences.append(f"... and {len(ranked) - len(kept)} less often reached situations (the profile lists them)")
    return sentences


def _merge_one_word_apart(entries: list[list], holdings: list[str] = ()) -> list[list]:
    """Situations whose names differ in one word and where the policy does the same are
    said once, the word listed ("board J/Q/K: first to act"): position by position; a word
    that names a holding (or is its initial) in the holdings' order, others as met."""
    longest = max((len(entry[1]) for entry in entries), default=0)
    for position in range(longest):
        merged: "OrderedDict[tuple, list]" = OrderedDict()
        for entry in entries:
            seat, tokens, body, weight = entry
            if position >= len(tokens):
                merged[(id(entry),)] = entry
                continue
            key = (seat, body, len(tokens), tuple(tokens[:position]), tuple(tokens[position + 1:]))
            if key in merged:
                known = merged[key]
                word, tail = _split_punctuation(tokens[position])
                words = known[1][position][: -len(tail)] if tail else known[1][position]
                if word not in words.split("/"):
                    listed = sorted([*words.split("/"), word], key=lambda w: _holding_rank(w, holdings))
                    known[1] = [*known[1][:position], "/".join(listed) + tail, *known[1][position + 1:]]
                known[3] += weight
            else:
                merged[key] = [seat, list(tokens), body, weight]
        entries = list(merged.values())
    return entries


def _holding_rank(word: str, holdings: list[str]) -> int:
    """Where `word` comes among the holdings (Jack, Queen, King: "Q" second); others last,
    in the order met (sorted() is stable)."""
    for index, holding in enumerate(holdings):
        if word and holding.startswith(word):
            return index
    return len(holdings)


def _split_punctuation(token: str) -> tuple[str, str]:
    stripped = token.rstrip(":;,.")
    return stripped, token[len(stripped):]


def _noise_multiplier(episodes: int) -> float:
    """How many standard errors a result must be from 0 to be said (beats, loses, improves):
    the gate's rule (z = 2, as Student's t where the error comes from few seat-swapped
    pairs: a profile plays few; with two pairs z = 2 would say 'beats' of noise)."""
    # imported when used, not at the top: keeps csro's start-up fast
    from csro_tui.records import Preview

    return Preview(0.0, {}, pairs=episodes // 2).standard_errors()


# A frequency is "uniform" when it is within this many standard errors of 1/3 (or, for a
# policy that answers exact probabilities, within UNIFORM_SLACK of it).
UNIFORM_Z = 3.0
UNIFORM_SLACK = 0.01
# Conditional frequencies shown besides the overall one: those furthest from it.
MAX_CONDITIONS_SHOWN = 3


def _frequency_text(row) -> str:
    return ", ".join(f"{word} {100 * p:.1f}%" + (f" ± {100 * row.stderr.get(word, 0.0):.1f}" if row.stderr.get(word) else "")
                     for word, p in row.distribution.items())


def _uniform(row) -> bool:
    share = 1.0 / max(1, len(row.distribution))
    return all(abs(p - share) <= max(UNIFORM_SLACK, UNIFORM_Z * row.stderr.get(word, 0.0))
               for word, p in row.distribution.items())


def describe_frequencies(profile: Profile) -> list[str]:
    """What a repeated game's policy throws (RRPS): "plays uniformly" when every frequency,
    overall and after each last throw, is a third within its noise; otherwise the overall
    frequencies and the conditions that move them most, each with its standard error."""
    rows = [row for row in profile.frequencies if row.throws > 0]
    if not rows:
        return []
    overall, conditions = rows[0], rows[1:]
    if all(_uniform(row) for row in rows):
        after = " and after each of its own and the opponent's last throws" if conditions else ""
        return [f"plays uniformly: {_frequency_text(overall)} of {overall.throws:,} throws{after} "
                "(a third each, within the noise)"]

    def shift(row) -> float:
        return max(abs(p - overall.distribution.get(word, 0.0)) for word, p in row.distribution.items())

    def differs(row) -> bool:  # from the overall frequencies, beyond both noises
        return any(abs(p - overall.distribution.get(word, 0.0))
                   > max(UNIFORM_SLACK, UNIFORM_Z * math.hypot(row.stderr.get(word, 0.0), overall.stderr.get(word, 0.0)))
                   for word, p in row.distribution.items())

    lines = [f"throws {_frequency_text(overall)} of {overall.throws:,} throws"
             + ("" if not _uniform(overall) else " (a third each overall, but not after every last throw)")
             + ("" if any(map(differs, conditions)) else ", whatever the last throws")]
    for row in sorted(filter(differs, conditions), key=shift, reverse=True)[:MAX_CONDITIONS_SHOWN]:
        lines.append(f"{row.condition}: {_frequency_text(row)} ({row.throws:,} throws)")
    return lines


def _describe_sampled(profile: Profile) -> list[str]:
    sentences, beats, loses, failed = [], [], [], []
    scale = profile.payoff_scale or 1.0
    for probe in profile.probes:
        if probe.failure:
            failed.append(f"fails against {probe.name}: {probe.failure}")
            continue
        multiplier = _noise_multiplier(probe.episodes)
        noise = multiplier * (probe.stderr or 0.0)
        if probe.mean is not None and probe.mean > noise + 1e-9:
            beats.append(probe.name)
        elif probe.mean is not None and probe.mean < -noise - 1e-9:
            loses.append(probe.name)
        line = f"against {probe.name}: {figure(probe.mean)} per match"
        if probe.stops_falling_after is not None and probe.moves:
            if probe.stops_falling_after == 0:
                line += ", never losing ground"
            elif probe.stops_falling_after <= probe.moves // 3:
                line += f", losing nothing after move {probe.stops_falling_after}"
        if len(probe.thirds) == 3:
            first, middle, last = probe.thirds
            line += f" (thirds {figure(first)} / {figure(middle)} / {figure(last)})"
            # A change must be large (5% of the largest return) and beyond its noise.
            beyond = max(0.05 * scale / 3, multiplier * (probe.trend_stderr or 0.0))
            if last - first > beyond:
                line += ", improving as the match goes on"
            elif first - last > beyond:
                line += ", worse as the match goes on"
        sentences.append(line)
    summary = []
    if beats:
        summary.append("beats " + _join(beats))
    if loses:
        summary.append("loses to " + _join(loses))
    head = ["; ".join(summary)] if summary else []
    common = sorted(profile.situations, key=lambda row: -row.weight)[:5]
    habits = [f"{row.name}: {_mix(row.distribution)} ({row.weight:.0f} times)" for row in common]
    # what it throws comes first: against few probes a uniform player's results are noise
    return failed + describe_frequencies(profile) + head + sentences + habits
