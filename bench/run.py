"""Run the benchmark suite and print one table: `python -m bench [--quick] [--only N,...]`.

Every ratio compares two figures measured side by side in this run on this
machine; nothing is read from earlier runs.  --quick uses fewer episodes
(and, for section 2, every 4th RoShamBo bot) to finish in a few minutes.
Sections:
  1  RRPS code policy vs code policy: ours vs OpenSpiel-style loop vs bare limit
  2  one code policy against the RoShamBo bots: ours vs OpenSpiel-style loop
  3  Kuhn and Leduc payoff entries: exact vs PSRO-style sampling (1000 sims)
  4  meta-solvers: Nash LP vs OpenSpiel PRD on antisymmetric matrices
  5  PSRO iterations on Kuhn with an exact best-response oracle
  6  scaling in the population size, process-pool speed-up
  7  LLM oracles with a real model ($CSRO_REAL_LLM_BASE_URL; skipped without) vs offline oracles
  8  the Ray backend: overhead against the local pool, throughput against workers, bytes per job
  9  PSRO raced to exploitability 0.1 and 0.01 on Kuhn and Leduc: ours vs psro_v2 with exact entries
  10 behaviour profiles: Kuhn/Leduc from the table, RRPS at 1000 throws against the probes
 10  csro sweep: sessions per minute with 1 and 2 local workers and on Ray, overhead per session
  12 the review's preview, progressive vs one batch: RRPS 1000 throws, first figures and final figures
"""

from __future__ import annotations

import argparse
import sys
import time
import traceback

from bench.common import Table, machine_line


def sections():
    from bench import cluster, llm_oracles, poker, profiles, progressive, psro_race, rrps, scaling, solvers, sweep

    return {
        "1": rrps.code_vs_code,
        "2": rrps.code_vs_bots,
        "3": poker.exact_entries,
        "4": solvers.meta_solvers,
        "5": poker.psro_iterations,
        "6": scaling.scaling,
        "7": llm_oracles.llm_oracles,
        "8": cluster.ray_section,
        "9": psro_race.psro_race,
        "10": profiles.profiles,
        "11": sweep.sweep_section,
        "12": progressive.progressive_review,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller runs; a few minutes in all")
    parser.add_argument("--only", help="comma-separated section numbers (default: all)")
    args = parser.parse_args(argv)
    chosen = sections()
    if args.only:
        wanted = [part.strip() for part in args.only.split(",") if part.strip()]
        unknown = [w for w in wanted if w not in chosen]
        if unknown:
            parser.error(f"unknown section(s) {', '.join(unknown)}; choose from {', '.join(chosen)}")
        chosen = {key: chosen[key] for key in wanted}
    print(f"csro-tui benchmark ({'quick' if args.quick else 'full'}); {machine_line()}", flush=True)
    table = Table()
    failed = []
    started = time.perf_counter()
    for key, section in chosen.items():
        print(f"section {key}: {section.__name__} ...", flush=True)
        begun = time.perf_counter()
        try:
            section(table, args.quick)
        except Exception:  # report and go on: one broken section should not hide the rest
            failed.append(key)
            traceback.print_exc()
        print(f"section {key} took {time.perf_counter() - begun:.1f} s", flush=True)
    print()
    print(f"csro-tui benchmark ({'quick' if args.quick else 'full'}); {machine_line()}; "
          f"total {time.perf_counter() - started:.0f} s")
    print(table.render())
    if failed:
        print(f"\nsections that raised: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0
