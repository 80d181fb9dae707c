"""Profiles, comparisons and hints as JSON and as terminal lines (`csro diff`, `csro explain`).

Every text that came from a policy (names, failure messages) goes through
`csro_tui.text` before it reaches a terminal."""

from __future__ import annotations

from typing import Any

from csro_tui.numbers import stored_number
from csro_tui.profiles.distance import Comparison
from csro_tui.profiles.model import EXACT, Profile, merged_by_name

MAX_DIFFERENCES_SHOWN = 12
MAX_SITUATIONS_SHOWN = 40


def figure(value: float, *, signed: bool = True, digits: int = 3) -> str:
    """A result as a person reads it: `digits` significant digits, but whole numbers from
    100 up (a match's +998, not +998.4 or +1e+03)."""
    sign = "+" if signed else ""
    value = stored_number(value)  # float noise (an exact 1.4e-17) reads as 0, never -0
    if abs(value) >= 100:
        return f"{value:{sign}.0f}"
    return f"{value:{sign}.{digits}g}"


def distribution_text(value: Any) -> str:
    if isinstance(value, dict) and "failure" in value:
        return "failed: " + str(value["failure"])
    if isinstance(value, dict) and "mean" in value:
        text = figure(value["mean"])
        if value.get("stderr"):
            text += f" ± {figure(value['stderr'], signed=False, digits=2)}"
        if value.get("thirds"):
            text += " (thirds " + " / ".join(figure(x) for x in value["thirds"]) + ")"
        return text
    if isinstance(value, dict):
        parts = sorted(((p, move) for move, p in value.items() if p > 0.0005), reverse=True)
        return ", ".join(f"{move} {p:.0%}" for p, move in parts) or "-"
    return str(value)


def comparison_json(a: Profile, b: Profile, comparison: Comparison, head_to_head: dict | None) -> dict:
    return {
        "game": a.game,
        "a": a.policy,
        "b": b.policy,
        "kind": a.kind,
        "seed": a.seed,
        "distance": comparison.distance,
        "distance_stderr": comparison.stderr,
        "same_within_noise": comparison.same_within_noise,
        "head_to_head": head_to_head,
        "differences": comparison.differences,
    }


def comparison_lines(a: Profile, b: Profile, comparison: Comparison, head_to_head: dict | None) -> list[str]:
    # imported when used, not at the top: keeps csro's start-up fast
    from csro_tui.text import one_line

    name_a, name_b = one_line(a.policy, 60), one_line(b.policy, 60)
    lines = [f"A = {name_a}", f"B = {name_b}"]
    if comparison.stderr is None:
        lines.append(f"behaviour distance {comparison.distance:.3f} (reach-weighted total variation, exact)")
    else:
        lines.append(f"behaviour distance {comparison.distance:.3f} ± {comparison.stderr:.3f} "
                     "(mean payoff gap over the probes, in units of the largest return)")
    if comparison.same_within_noise:
        lines.append("they behave the same" + ("" if comparison.stderr is None else " within noise")
                     + ": B behaves like A")
    if head_to_head is not None:
        if head_to_head.get("failure"):
            lines.append(f"head to head: failed: {one_line(head_to_head['failure'], 120)}")
        else:
            error = "" if not head_to_head.get("stderr") else f" ± {figure(head_to_head['stderr'], signed=False)}"
            lines.append(f"head to head: A {figure(head_to_head['mean'], digits=4)}{error} per episode against B")
    shown = comparison.differences[:MAX_DIFFERENCES_SHOWN]
    if shown:
        lines.append(f"where they differ ({len(comparison.differences)}):")
        for difference in shown:
            lines.append(f"  {one_line(difference['situation'], 100)}")
            lines.append(f"    A: {one_line(distribution_text(difference['a']), 110)}")
            lines.append(f"    B: {one_line(distribution_text(difference['b']), 110)}")
        if len(comparison.differences) > len(shown):
            lines.append(f"  ... and {len(comparison.differences) - len(shown)} more (--json lists them all)")
    elif not comparison.same_within_noise:
        lines.append("no single situation or probe differs clearly; the gap is spread thin")
    return lines


def profile_lines(profile: Profile) -> list[str]:
    # imported when used, not at the top: keeps csro's start-up fast
    from csro_tui.text import one_line

    if profile.failure:
        return [f"the policy failed while its table was built: {one_line(profile.failure, 160)}"]
    lines = []
    if profile.kind == EXACT:
        rows = [row for row in merged_by_name(profile.situations) if row.weight > 0]
        # Seat, then most reached first; equal reach by situation, holdings in the order
        # the game's table first shows them (Kuhn and Leduc: Jack, Queen, King).
        holding = {}
        for row in profile.situations:
            holding.setdefault(row.group, len(holding))
        rows.sort(key=lambda row: (row.seat, -round(row.weight, 9), row.label, holding[row.group]))
        for row in rows[:MAX_SITUATIONS_SHOWN]:
            lines.append(f"  {one_line(row.name, 70):<70} reach {row.weight:5.3f}  {distribution_text(row.distribution)}")
        if len(rows) > MAX_SITUATIONS_SHOWN:
            lines.append(f"  ... and {len(rows) - MAX_SITUATIONS_SHOWN} more situations (--json lists them all)")
        return lines
    for probe in profile.probes:
        if probe.failure:
            lines.append(f"  vs {one_line(probe.name, 30):<30} failed: {one_line(probe.failure, 100)}")
        else:
            value = {"mean": probe.mean, "stderr": probe.stderr, "thirds": probe.thirds}
            lines.append(f"  vs {one_line(probe.name, 30):<30} {distribution_text(value)}")
    for row in profile.situations[:MAX_SITUATIONS_SHOWN // 2]:
        lines.append(f"  {one_line(row.name, 60):<60} {row.weight:6.0f}x  {distribution_text(row.distribution)}")
    return lines
