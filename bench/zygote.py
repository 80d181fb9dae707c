"""A new sandbox host ready for a policy: spawned against forked by the zygote.

    .venv/bin/python -m bench.zygote [--pairs 7] [--mode rlimits|bubblewrap|both] [--games]

"Ready" is what a pooled host is when it is handed a policy: started, and
its reply to `prepare` read (every kernel layer in place: rlimits, no-new-
privs, Landlock, seccomp).  Each pair starts one host each way, in turns
(spawned, zygote, spawned, ...), so both see the same stretch of a shared
machine's load.  Wall: start_host_process until the reply.  CPU: this
process's (process_time) plus the host's own and, for a spawned host
under bubblewrap, bwrap's, from /proc/<pid>/schedstat of the process tree
just before it is killed; for the zygote, the zygote's CPU over the same
stretch (its fork) is added.  The zygote's own start (once per process) is
timed separately.  Prints the median of the pairs with the range.

--games adds, in the default isolation mode, alternating zygote off / on
(CSRO_ZYGOTE) in each turn: an RRPS 1000-throw code-vs-code match
(`play_match`, 60 episodes, hosts started cold as the referee does) with
the bare limit (two `act` calls per throw in one process) timed in the
same turn, and a Kuhn PSRO race to exploitability 0.01 (the engine,
best-response oracle, a fresh table cache each run) with psro_v2 (exact
entries, `bench.psro_race.race_psro_v2`) in the same turn.

--proposal adds, in turns of zygote off (CSRO_ZYGOTE=0, hosts spawned: what
the issue calls "before") and on, the time from `n` to a reviewable RRPS
proposal at 1000 throws as the engine spends it: the gate's validation
(static checks, a smoke match against each member) and preview (10
episodes against each member, and the benchmark against the 43 bots, 20
episodes each), on an evaluator of the engine's defaults already warm (its
referee pool and their zygotes started by a first small batch, as they
are by the time a session's reviewer presses `n`).
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

from bench.common import machine_line


def _schedstat_seconds(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/schedstat") as stream:
            return int(stream.read().split()[0]) / 1e9
    except (OSError, ValueError, IndexError):
        return 0.0


def _tree_cpu(pid: int) -> float:
    from csro_tui.sandbox.zygote import _descendants

    return sum(_schedstat_seconds(p) for p in [pid, *_descendants(pid, 4)])


def _one(mode: str, use_zygote: bool) -> tuple[float, float]:
    from csro_tui.sandbox import sandbox, zygote

    os.environ[zygote.ZYGOTE_ENV_VAR] = "1" if use_zygote else "0"
    the_zygote = zygote._current(mode) if use_zygote else None
    zygote_cpu = _schedstat_seconds(the_zygote.pid) if the_zygote else 0.0
    cpu, wall = time.process_time(), time.perf_counter()
    started = sandbox.start_host_process(mode)
    try:
        line = started.process.stdout.readline()  # the reply to prepare: the host is ready
        wall = time.perf_counter() - wall
        cpu = time.process_time() - cpu
        if b'"ok":true' not in line.replace(b" ", b""):
            raise RuntimeError(f"host not ready: {line[:200]!r}")
        cpu += _tree_cpu(started.process.pid)
        if the_zygote is not None:
            cpu += _schedstat_seconds(the_zygote.pid) - zygote_cpu
        if use_zygote != (type(started.process).__name__ == "ZygoteHost"):
            raise RuntimeError("the host did not come from where it was asked for")
    finally:
        started.discard()
    return wall, cpu


NUMPY_POLICY = """
import numpy as np

class Policy:
    def __init__(self, player, game):
        self.weights = np.ones(3)

    def act(self, obs):
        return int(obs["legal_actions"][int(np.argmax(self.weights)) % len(obs["legal_actions"])])
"""


def _numpy_first_answer(use_zygote: bool) -> float:
    """Wall seconds from a new PolicyHost to the first answer of a policy that imports numpy."""
    from csro_tui.sandbox import zygote
    from csro_tui.sandbox.sandbox import PolicyHost

    os.environ[zygote.ZYGOTE_ENV_VAR] = "1" if use_zygote else "0"
    began = time.perf_counter()
    with PolicyHost(NUMPY_POLICY, {"name": "bench"}) as host:
        host.new_episodes([(1, 0, 0)])
        host.act([(1, {"legal_actions": [0, 1, 2]})])
        if use_zygote != (type(host._process).__name__ == "ZygoteHost"):
            raise RuntimeError("the host did not come from where it was asked for")
        return time.perf_counter() - began


def _summary(values: list[float]) -> str:
    return (f"median {statistics.median(values) * 1e3:.1f} ms "
            f"(range {min(values) * 1e3:.1f}-{max(values) * 1e3:.1f})")


def run(mode: str, pairs: int) -> None:
    from csro_tui.sandbox import zygote

    os.environ["CSRO_SANDBOX"] = mode
    zygote.shutdown()
    os.environ[zygote.ZYGOTE_ENV_VAR] = "1"
    began = time.perf_counter()
    if zygote._current(mode) is None:
        raise SystemExit(f"the zygote did not start in {mode} mode")
    zygote_start = time.perf_counter() - began
    _one(mode, False), _one(mode, True)  # warm-up: bytecode, probes
    spawned_wall, spawned_cpu, forked_wall, forked_cpu, wall_ratios, cpu_ratios = [], [], [], [], [], []
    for _ in range(pairs):
        sw, sc = _one(mode, False)
        fw, fc = _one(mode, True)
        spawned_wall.append(sw), spawned_cpu.append(sc), forked_wall.append(fw), forked_cpu.append(fc)
        wall_ratios.append(sw / fw), cpu_ratios.append(sc / fc)
    print(f"{mode}: new host ready for a policy, {pairs} alternating pairs")
    print(f"  spawned  wall {_summary(spawned_wall)}, CPU {_summary(spawned_cpu)}")
    print(f"  zygote   wall {_summary(forked_wall)}, CPU {_summary(forked_cpu)}")
    print(f"  ratio (spawned / zygote, per pair): wall median {statistics.median(wall_ratios):.1f}x "
          f"(range {min(wall_ratios):.1f}-{max(wall_ratios):.1f}), CPU median {statistics.median(cpu_ratios):.1f}x "
          f"(range {min(cpu_ratios):.1f}-{max(cpu_ratios):.1f}); target >= 5x")
    print(f"  the zygote's own start (once per process): {zygote_start * 1e3:.0f} ms wall")
    _numpy_first_answer(True), _numpy_first_answer(False)  # warm-up: the numpy zygote's start
    spawned_np, forked_np = [], []
    for _ in range(pairs):
        spawned_np.append(_numpy_first_answer(False))
        forked_np.append(_numpy_first_answer(True))
    print(f"  a numpy policy, new PolicyHost to its first answer: spawned wall {_summary(spawned_np)}, "
          f"zygote {_summary(forked_np)}")


def _with_zygote(flag: str, function):
    from csro_tui.sandbox import zygote

    os.environ[zygote.ZYGOTE_ENV_VAR] = flag
    try:
        return function()
    finally:
        os.environ[zygote.ZYGOTE_ENV_VAR] = "1"


def games(pairs: int) -> None:
    import tempfile

    from bench.common import load_policy_class
    from bench.psro_race import TARGETS, _clear_memory_caches, race_ours, race_psro_v2
    from bench.rrps import CODE_A, CODE_B, bare_loop
    from csro_tui.evaluation import table_cache
    from csro_tui.evaluation.participants import CodePolicy
    from csro_tui.evaluation.referee import play_match
    from csro_tui.games.registry import get_game
    from csro_tui.sandbox.isolation import isolation_mode

    spec = get_game("rrps")
    seeds = spec.seed_policies()
    a, b = CodePolicy(CODE_A, seeds[CODE_A]), CodePolicy(CODE_B, seeds[CODE_B])
    class_a, class_b = load_policy_class(seeds[CODE_A]), load_policy_class(seeds[CODE_B])
    episodes = 60

    def match() -> float:
        began = time.perf_counter()
        result = play_match(spec, a, b, episodes=episodes, seed=7)
        assert result.failure is None, result.failure
        return time.perf_counter() - began

    def kuhn() -> tuple[float, int, float]:
        with tempfile.TemporaryDirectory(prefix="csro-bench-tables-") as cache_dir:
            os.environ[table_cache.CACHE_DIR_ENV_VAR] = cache_dir
            _clear_memory_caches()
            race = race_ours("kuhn_poker", 60, 120.0)
        reached = race.reached(TARGETS[-1])
        return (reached[1] if reached else float("nan"), len(race.points), race.per_iteration(len(race.points)))

    match(), _with_zygote("0", match)  # warm-up
    spawned, forked, bare, k_spawned, k_forked, k_theirs = [], [], [], [], [], []
    missing = ""
    for _ in range(pairs):
        spawned.append(_with_zygote("0", match))
        forked.append(_with_zygote("1", match))
        began = time.perf_counter()
        bare_loop(spec, class_a, class_b, episodes, spec.num_repetitions)
        bare.append(time.perf_counter() - began)
        k_spawned.append(_with_zygote("0", kuhn))
        k_forked.append(_with_zygote("1", kuhn))
        try:
            theirs = race_psro_v2("kuhn_poker", 60, 120.0)
        except ImportError as error:  # psro_v2 needs the bench extra (matplotlib, cvxpy, ...)
            missing = str(error)
            continue
        reached = theirs.reached(TARGETS[-1])
        k_theirs.append((reached[1] if reached else float("nan"), len(theirs.points),
                         theirs.per_iteration(len(theirs.points))))
    print(f"games ({isolation_mode()} mode), {pairs} turns of zygote off / on / baseline")
    print(f"  RRPS {CODE_A} vs {CODE_B}, {spec.num_repetitions} throws, {episodes} episodes, cold hosts:")
    print(f"    spawned {_summary(spawned)}; zygote {_summary(forked)}; bare limit {_summary(bare)}")
    print(f"    x the bare limit (per turn): spawned median {statistics.median(s / b for s, b in zip(spawned, bare)):.2f}x, "
          f"zygote median {statistics.median(f / b for f, b in zip(forked, bare)):.2f}x "
          f"(range {min(f / b for f, b in zip(forked, bare)):.2f}-{max(f / b for f, b in zip(forked, bare)):.2f}); "
          f"target <= 3x")
    if missing:
        print(f"  psro_v2 not run: {missing} (pip install -e '.[bench]')")
    for name, runs in (("spawned", k_spawned), ("zygote", k_forked), ("psro_v2", k_theirs)):
        if not runs:
            continue
        print(f"  Kuhn to exploitability {TARGETS[-1]} ({name}): {_summary([r[0] for r in runs])}; "
              f"iterations {sorted(r[1] for r in runs)}; per iteration median "
              f"{statistics.median(r[2] for r in runs) * 1e3:.1f} ms")


# The candidate and the population of the proposal measure: a session some
# iterations in (the default seed, beat_last, and two members since).
PROPOSAL_CANDIDATE = "markov_predictor"
PROPOSAL_MEMBERS = ("beat_last", "frequency_counter", "cycle")


def _zygotes_below(pid: int) -> int:
    """How many zygote processes run below `pid` (this process's own and the
    referee pool's workers'; under bubblewrap a zygote's bwrap counts too)."""
    from csro_tui.sandbox.zygote import _descendants

    count = 0
    for child in _descendants(pid, 3):
        try:
            with open(f"/proc/{child}/cmdline", "rb") as stream:
                count += b"zygote_main" in stream.read()
        except OSError:
            pass
    return count


def _proposal_once(use_zygote: bool) -> tuple[float, int, int]:
    """(seconds from the oracle's proposal to the review request, episodes
    played, zygotes seen below this process) on a warm evaluator."""
    from csro_tui.config import RunConfig
    from csro_tui.engine.evaluator import GameEvaluator
    from csro_tui.engine.gate import Gate, GateSettings
    from csro_tui.games.registry import get_game
    from csro_tui.records import MatchJob, PolicyRecord
    from csro_tui.sandbox import zygote

    os.environ["CSRO_ZYGOTE"] = "1" if use_zygote else "0"
    spec = get_game("rrps")
    seeds = spec.seed_policies()
    defaults = RunConfig(game="rrps")
    members = [PolicyRecord(id=f"m{i}", name=name, source=seeds[name], origin="seed")
               for i, name in enumerate(PROPOSAL_MEMBERS)]
    weights = {member.id: 1.0 / len(members) for member in members}
    evaluator = GameEvaluator(spec, workers=defaults.workers)
    try:
        # Warm: the referee pool and its workers' zygotes, as after the session's first evaluations.
        uniform = PolicyRecord(id="warm", name="uniform_random", source=seeds["uniform_random"], origin="seed")
        warm = [MatchJob(member, uniform, 900 + i, 2) for i, member in enumerate(members * 4)]
        evaluator.run(warm)
        gate = Gate(evaluator, GateSettings(
            seed=1, smoke_episodes=defaults.smoke_episodes or 2,
            preview_episodes=defaults.preview_episodes or getattr(spec, "preview_episodes", None),
            benchmark=True, benchmark_episodes=defaults.benchmark_episodes,
        ))
        source = seeds[PROPOSAL_CANDIDATE]
        began = time.perf_counter()
        validation = gate.validate("i3.1", source, members)
        if not validation.valid:
            raise RuntimeError(f"the candidate did not validate: {validation.summary()}")
        preview, _exact, per_member = gate.preview("i3.1", source, members, weights, validation, member_id="m3")
        seconds = time.perf_counter() - began
        if preview.failure is not None or preview.population_metrics is None:
            raise RuntimeError(f"the preview failed: {preview.failure}")
        zygotes = _zygotes_below(os.getpid())
        episodes = len(members) * (validation.smoke_episodes + per_member) \
            + len(evaluator.bots()) * defaults.benchmark_episodes
        return seconds, episodes, zygotes
    finally:
        evaluator.close()
        zygote.shutdown()  # this process's own (the gate's small batches run here)
        os.environ["CSRO_ZYGOTE"] = "1"


def proposal(pairs: int) -> None:
    before, after, ratios = [], [], []
    episodes = 0
    for _ in range(pairs):
        off, episodes, zygotes_off = _proposal_once(False)
        on, _, zygotes_on = _proposal_once(True)
        if zygotes_off or not zygotes_on:
            raise RuntimeError(f"zygotes below us: {zygotes_off} with CSRO_ZYGOTE=0, {zygotes_on} with it on")
        before.append(off), after.append(on), ratios.append(off / on)
    print(f"RRPS proposal at 1000 throws, n to review ({PROPOSAL_CANDIDATE} against {', '.join(PROPOSAL_MEMBERS)}; "
          f"{episodes} episodes: smoke and preview against the members, 20 against each of the 43 bots), "
          f"{pairs} turns of zygote off / on, warm evaluator of the engine's defaults:")
    print(f"  zygote off (before) median {statistics.median(before):.2f} s "
          f"(range {min(before):.2f}-{max(before):.2f}); zygote on median {statistics.median(after):.2f} s "
          f"(range {min(after):.2f}-{max(after):.2f})")
    print(f"  before / after per turn: median {statistics.median(ratios):.2f}x "
          f"(range {min(ratios):.2f}-{max(ratios):.2f}); target >= 1.5x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=7)
    parser.add_argument("--mode", choices=("rlimits", "bubblewrap", "both"), default="both")
    parser.add_argument("--games", action="store_true", help="also RRPS 1000 throws and Kuhn PSRO")
    parser.add_argument("--proposal", action="store_true", help="also an RRPS proposal at 1000 throws, n to review")
    parser.add_argument("--only", choices=("hosts", "games", "proposal"), help="just one part")
    args = parser.parse_args()
    print(machine_line())
    previous = os.environ.get("CSRO_SANDBOX")
    if args.only in (None, "hosts"):
        for mode in (("rlimits", "bubblewrap") if args.mode == "both" else (args.mode,)):
            run(mode, max(5, args.pairs))
    if previous is None:
        os.environ.pop("CSRO_SANDBOX", None)
    else:
        os.environ["CSRO_SANDBOX"] = previous
    if args.games or args.only == "games":
        games(max(5, args.pairs))
    if args.proposal or args.only == "proposal":
        proposal(max(5, args.pairs))
    try:
        print(f"load average at end: {', '.join(f'{x:.2f}' for x in os.getloadavg())}")
    except OSError:
        pass


if __name__ == "__main__":
    main()
