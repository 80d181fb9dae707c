"""Section 12: the progressive review's preview (issue 36) against the one-batch preview.

RRPS at 1000 throws, the engine's gate and evaluator (sandboxed candidate,
the session's warm referee pool), a population of seed policies and a seed
candidate, as the seed and evolve oracles propose them.  Measured in turns
(today's path, then the progressive one, with fresh seeds each run so that no
result comes from the evaluator's cache):

- today: `Gate.preview` without an observer: the members' batch, then one
  batch of every bot; the person sees nothing until it returns;
- progressive: `Gate.preview` with an observer, as the TUI's review runs it:
  the time to its first estimate (the validation's smoke figures, shown at
  once, noise not measured), to its first estimate with a standard error
  (the members' first round) and to its final figures.

Both play the same jobs with the same seeds (tests/engine/test_progressive_review.py
checks the figures are equal); only the batching differs.  Usable alone:
`python -m bench.progressive [--quick]`.
"""

from __future__ import annotations

import time

from bench.common import Table, fmt_seconds, ratio

GAME = "rrps"  # OpenSpiel's default: 1000 throws an episode
MEMBERS = ("beat_last", "frequency_counter")
CANDIDATE = "cycle"
# The review's target: first figures within this many seconds of validation passing.
FIRST_FIGURES_TARGET = 2.0
# The final figures may not come later than today's beyond this share (the noise of a shared machine).
FINAL_SLACK = 0.05


def progressive_review(table: Table, quick: bool) -> None:
    from csro_tui.engine.evaluator import GameEvaluator
    from csro_tui.engine.gate import Gate, GateSettings
    from csro_tui.games.registry import get_game
    from csro_tui.records import PolicyRecord

    spec = get_game(GAME)
    seeds = spec.seed_policies()
    members = [PolicyRecord(id=f"p{i}", name=name, source=seeds[name], origin="seed") for i, name in enumerate(MEMBERS)]
    weights = {member.id: 1.0 / len(members) for member in members}
    bench_episodes = 6 if quick else 20
    repeats = 2 if quick else 3
    evaluator = GameEvaluator(spec)
    gate = Gate(evaluator, GateSettings(seed=12, benchmark=True, benchmark_episodes=bench_episodes))
    source = seeds[CANDIDATE]
    try:
        validation = gate.validate("bench-validate", source, members)
        assert validation.valid, validation.summary()
        gate.preview("bench-warm", source, members, weights, validation, benchmark=False)  # starts the pool
        today, first, measured, final = [], [], [], []
        for run in range(repeats):
            start = time.perf_counter()
            gate.preview(f"bench-today-{run}", source, members, weights, validation)
            today.append(time.perf_counter() - start)

            estimates: list[tuple[float, bool]] = []
            start = time.perf_counter()
            gate.preview(f"bench-progressive-{run}", source, members, weights, validation,
                         on_estimate=lambda estimate: estimates.append((time.perf_counter() - start, estimate.smoke)))
            final.append(time.perf_counter() - start)
            first.append(estimates[0][0])  # the smoke run's figures (noise not measured)
            measured.append(next(t for t, smoke in estimates if not smoke))  # the first with a standard error
    finally:
        evaluator.close()
    what = f"RRPS 1000 throws, {len(members)} members x 10 episodes + {len(evaluator.bots())} bots x {bench_episodes}"
    table.add(
        "12", f"review's first figures after validation, from the smoke run ({what})",
        fmt_seconds(min(first)), f"today: none until {fmt_seconds(min(today))}",
        f"{ratio(min(first), min(today)):.2f}x", f"<= {FIRST_FIGURES_TARGET:g} s",
        min(first) <= FIRST_FIGURES_TARGET,
        note=f"smoke figures {', '.join(fmt_seconds(s) for s in first)}; today {', '.join(fmt_seconds(s) for s in today)}",
    )
    table.add(
        "12", "review's first figures with a standard error (the members' first round)",
        fmt_seconds(min(measured)), f"today: none until {fmt_seconds(min(today))}",
        f"{ratio(min(measured), min(today)):.2f}x", f"<= {FIRST_FIGURES_TARGET:g} s",
        min(measured) <= FIRST_FIGURES_TARGET,
        note=f"first with noise {', '.join(fmt_seconds(s) for s in measured)}",
    )
    table.add(
        "12", "review's final figures: progressive vs today (same jobs and seeds)",
        fmt_seconds(min(final)), fmt_seconds(min(today)),
        f"{ratio(min(final), min(today)):.2f}x", f"<= 1.0x (+{FINAL_SLACK:.0%} noise)",
        ratio(min(final), min(today)) <= 1 + FINAL_SLACK,
        note=f"progressive {', '.join(fmt_seconds(s) for s in final)}; runs in turns, min of {repeats}",
    )


if __name__ == "__main__":
    import sys

    from bench.common import machine_line

    print(machine_line(), flush=True)
    results = Table()
    progressive_review(results, "--quick" in sys.argv)
    print(results.render())
