"""Section 8: the Ray backend against the local process pool, and what a job ships.

8a  overhead: the same RRPS matches on a warm `RefereePool` of N processes
    and on a warm `RayRefereePool` of N actors (N = this machine's cores),
    timed in turns; target: Ray within 1.2x of the local pool on one node.
8b  throughput against workers: the same batch on 1..N Ray actors.
8c  the bytes one job ships to a worker and back (pickled, as Ray sends
    them), for the paper argument on N nodes (bench/README.md).

The cluster is $CSRO_BENCH_RAY_ADDRESS (or $RAY_ADDRESS); without one, Ray
is started in this process's machine with a small object store.  Skipped
(one row saying so) when Ray is not installed.
"""

from __future__ import annotations

import os
import pickle

from bench.common import Table, fmt_seconds, interleaved, ratio
from bench.scaling import population


def _jobs(spec, count: int, episodes: int):
    from csro_tui.evaluation.participants import CodePolicy
    from csro_tui.evaluation.runner import MatchJob

    members = population(spec, count + 1)
    rival = CodePolicy(members[0].id, members[0].source)
    return [MatchJob(CodePolicy(m.id, m.source), rival, episodes, 11 + i) for i, m in enumerate(members[1:])]


def ray_section(table: Table, quick: bool) -> None:
    from csro_tui.evaluation.ray_backend import RayRefereePool, connect, ray_available
    from csro_tui.evaluation.runner import RefereePool, evaluate_matchups, plan_chunks
    from csro_tui.games.registry import get_game

    if not ray_available():
        table.add("8", "Ray backend", "skipped", "", note="ray is not installed: pip install -e '.[ray]'")
        return
    address = os.environ.get("CSRO_BENCH_RAY_ADDRESS") or os.environ.get("RAY_ADDRESS", "")
    connect(address)
    import ray

    cpus = int(ray.cluster_resources().get("CPU", 1))
    cores = min(os.cpu_count() or 1, cpus)
    spec = get_game("rrps")
    episodes = 4 if quick else 10
    jobs = _jobs(spec, 10 if quick else 19, episodes)
    repeats = 2 if quick else 3
    where = f"Ray at {address}" if address else "a Ray started by the bench on this machine"

    local = RefereePool(spec, cores)
    on_ray = RayRefereePool(spec, cores, address=address)
    try:
        warm = [jobs[0], jobs[1]]
        local.run(warm, plan_chunks(warm, cores), None, None)  # start both before timing
        on_ray.run(warm, plan_chunks(warm, cores), None, None)
        timings = interleaved({
            "local": lambda: evaluate_matchups(spec, jobs, pool=local),
            "ray": lambda: evaluate_matchups(spec, jobs, pool=on_ray),
        }, repeats)
    finally:
        local.close()
        on_ray.close()
    same = [r.to_dict() for r in timings["local"].value] == [r.to_dict() for r in timings["ray"].value]
    slowdown = ratio(timings["ray"].best, timings["local"].best)
    table.add("8a", f"{len(jobs)} RRPS code-vs-code matches x {episodes} episodes, {cores} workers: Ray vs local pool",
              fmt_seconds(timings["ray"].best), fmt_seconds(timings["local"].best), f"{slowdown:.2f}x",
              "Ray within 1.2x of the local pool (one node)", slowdown <= 1.2,
              note=f"{where}; warm pools, in turns: Ray {timings['ray'].describe()}, local "
                   f"{timings['local'].describe()}; results identical: {'yes' if same else 'NO'}")

    # 8b: the same batch on 1..cores actors (warm), one after the other.
    per_workers = {}
    for workers in range(1, cores + 1):
        pool = RayRefereePool(spec, workers, address=address)
        try:
            pool.run(jobs[:1], [[0]], None, None)
            timing = interleaved({"ray": lambda: evaluate_matchups(spec, jobs, pool=pool)}, repeats)["ray"]
        finally:
            pool.close()
        per_workers[workers] = timing.best
    episodes_total = sum(2 * ((job.episodes + 1) // 2) for job in jobs)
    rates = {w: episodes_total / t for w, t in per_workers.items()}
    table.add("8b", f"throughput against Ray workers on this machine (1..{cores})",
              ", ".join(f"{w}: {rates[w]:.1f} episodes/s" for w in rates), "",
              f"{ratio(rates[cores], rates[1]):.2f}x from 1 to {cores}", "", None,
              note=f"{episodes_total} RRPS episodes of 1000 throws per batch; each actor also runs the sandboxes "
                   f"of its chunk's policies, so on {os.cpu_count()} cores the actors compete with them")

    # 8c: what crosses the network per job: the job (code, names, seed) in,
    # the result (per-episode returns and seeds) out.
    job_bytes = [len(pickle.dumps(job, protocol=5)) for job in jobs]
    results = timings["ray"].value
    result_bytes = [len(pickle.dumps(result.to_dict(), protocol=5)) for result in results]
    per_job_seconds = timings["ray"].best * cores / len(jobs)
    table.add("8c", "bytes one job ships (pickled): job in / result out",
              f"{max(job_bytes)} B / {max(result_bytes)} B", "", "", "", None,
              note=f"largest of {len(jobs)} jobs ({episodes} episodes each, two seed policies' code); a job costs "
                   f"~{per_job_seconds:.2f} worker-seconds here, so "
                   f"~{(max(job_bytes) + max(result_bytes)) / per_job_seconds / 1e3:.1f} kB/s per worker crosses the "
                   f"network")
