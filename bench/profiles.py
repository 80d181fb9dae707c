"""Section 10: behaviour profiles (issue 22).

- Kuhn and Leduc: a profile from the policy's exact table (the table cached,
  as it is once the policy was previewed) against tabularising the policy
  through its sandbox (what the table itself costs the first time);
- RRPS at 1000 throws: a profile against the eight probes (four episodes
  each, one sandbox per probe, sandboxed policy) against the same amount of
  play through the referee's lockstep (the policy against eight RoShamBo bots,
  four episodes each), interleaved.  Target: about 2 s of wall time.
"""

from __future__ import annotations

from bench.common import Table, fmt_seconds, interleaved, ratio

PROFILED = {"kuhn_poker": "card_rules", "leduc_poker": "card_rules"}
RRPS_POLICY = "frequency_counter"


def profiles(table: Table, quick: bool) -> None:
    from csro_tui.evaluation.exact import tabularize
    from csro_tui.evaluation.participants import CodePolicy
    from csro_tui.evaluation.referee import MatchJob, play_matches
    from csro_tui.evaluation.participants import BotPolicy
    from csro_tui.games.registry import get_game
    from csro_tui.profiles import compute

    import os
    import time

    repeats = 3 if quick else 5
    # Fresh source hashes in every run: the disk table cache must not serve the baseline.
    counter = (f"{os.getpid()}-{time.time_ns()}-{n}" for n in range(10**6))
    for game_name, seed_name in PROFILED.items():
        spec = get_game(game_name)
        seeds = spec.seed_policies()
        name = seed_name if seed_name in seeds else sorted(seeds)[0]
        policy = CodePolicy(name, seeds[name])
        tabularize(spec, policy)  # cached from here on, as after the policy's preview
        compute.opponent_reach(spec)  # built once per game

        def from_table():
            compute._cache.clear()
            return compute.profile_policy(spec, policy)

        def fresh_table():
            return tabularize(spec, CodePolicy(name, seeds[name] + f"\n# bench {next(counter)}\n"))

        timings = interleaved({"profile": from_table, "table": fresh_table}, repeats)
        profile, table_time = timings["profile"], timings["table"]
        table.add("10", f"{game_name} profile of {name} from its table", fmt_seconds(profile.best),
                  fmt_seconds(table_time.best), f"{ratio(table_time.best, profile.best):.1f}x faster than the table",
                  "milliseconds (< 100 ms)", profile.best < 0.1,
                  note=f"{len(profile.value.situations)} situations; baseline: tabularising the policy through its "
                       f"sandbox (a fresh source hash); {profile.describe()}")

    spec = get_game("rrps")
    source = spec.seed_policies()[RRPS_POLICY]
    bots = [bot.name for bot in spec.benchmark()][:8]
    episodes = spec.profile_episodes

    def rrps_profile():
        compute._cache.clear()
        return compute.profile_policy(spec, CodePolicy(RRPS_POLICY, source + f"\n# bench {next(counter)}\n"), seed=1)

    def referee():
        policy = CodePolicy(RRPS_POLICY, source + f"\n# bench {next(counter)}\n")
        return play_matches(spec, [MatchJob(policy, BotPolicy(bot), episodes, 7) for bot in bots])

    timings = interleaved({"profile": rrps_profile, "referee": referee}, 2 if quick else 3)
    profile, baseline = timings["profile"], timings["referee"]
    failures = [probe.name for probe in profile.value.probes if probe.failure]
    assert not failures, failures
    table.add("10", f"rrps profile at 1000 throws: {len(profile.value.probes)} probes x {episodes} episodes, sandboxed",
              fmt_seconds(profile.best), fmt_seconds(baseline.best), f"{ratio(profile.best, baseline.best):.2f}x",
              "about 2 s", profile.best <= 2.5,
              note=f"baseline: the same play through the referee's lockstep ({len(bots)} RoShamBo bots x {episodes} "
                   f"episodes, one sandbox); {profile.describe()}")
    diversity_of_thirty(table, quick)


def diversity_of_thirty(table: Table, quick: bool) -> None:
    """The diversity view's work for a 30-member Leduc population once each member is
    profiled (the TUI does it in a worker): every pairwise distance, the cluster order,
    the clusters and the effective number.  Baseline: profiling the 30 members from
    their cached tables (what precedes it)."""
    import os
    import time

    import numpy as np

    from csro_tui.evaluation.exact import tabularize
    from csro_tui.evaluation.participants import CodePolicy
    from csro_tui.games.registry import get_game
    from csro_tui.profiles import compute
    from csro_tui.profiles.distance import cluster_order, clusters, distance_matrix, effective_strategies

    spec = get_game("leduc_poker")
    seeds = sorted(spec.seed_policies().items())
    tag = f"{os.getpid()}-{time.time_ns()}"
    members = [CodePolicy(f"m{i}", seeds[i % len(seeds)][1] + f"\n# bench {tag} {i}\n") for i in range(30)]
    for member in members:
        tabularize(spec, member)

    def profiles():
        compute._cache.clear()
        return [compute.profile_policy(spec, member) for member in members]

    def diversity(found):
        distances, errors = distance_matrix(found)
        order = cluster_order(distances)
        ordered = distances[np.ix_(order, order)]
        return clusters(ordered, errors[np.ix_(order, order)]), effective_strategies([1 / 30] * 30, ordered)

    found = profiles()
    timings = interleaved({"diversity": lambda: diversity(found), "profiles": profiles}, 2 if quick else 3)
    groups, effective = timings["diversity"].value
    table.add("10", "leduc diversity of 30 members (distances, order, clusters, effective number)",
              fmt_seconds(timings["diversity"].best), fmt_seconds(timings["profiles"].best),
              f"{ratio(timings['diversity'].best, timings['profiles'].best):.2f}x", "in a worker", None,
              note=f"{len(seeds)} distinct seed behaviours among the 30: {len(groups)} clusters, effective number "
                   f"{effective:.2f}; baseline: the 30 profiles from cached tables; {timings['diversity'].describe()}")
