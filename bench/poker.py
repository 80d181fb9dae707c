"""Sections 3 and 5: exact payoff entries and a PSRO iteration on poker.

Section 3 compares one payoff entry computed by our exact evaluator (both
code policies tabularised through their sandboxes, then a sequence-form
product) with OpenSpiel PSRO-style sampling: psro_v2's `sample_episode`
run `sims_per_entry` = 1000 times with the same policies in-process.

Section 5 times PSRO iterations on Kuhn poker with an exact best-response
oracle: our engine (best-response oracle, auto reviewer, exact entries,
Nash LP) against OpenSpiel's `PSROSolver` with `BestResponseOracle`
(1000 simulations per entry, Nash meta-solver), for the same number of
iterations, and the exploitability each reaches.
"""

from __future__ import annotations

import math
import random

import numpy as np

from bench.common import Table, fmt_seconds, interleaved, load_policy_class, ratio, timed

SIMS_PER_ENTRY = 1000
ENTRIES = {"kuhn_poker": ("card_rules", "uniform"), "leduc_poker": ("card_rules", "uniform")}


class InProcessPolicy:
    """A code policy as the callable psro_v2's `sample_episode` expects
    (`policy(state)` -> {action: probability}); one instance per episode."""

    def __init__(self, spec, policy_class, player: int, seed: int) -> None:
        self.view = spec.new_view(player)
        self.policy = policy_class(player, dict(spec.game_info(), player=player, seed=seed))

    def __call__(self, state, player_id=None):
        answer = self.policy.act(self.view.observe(state))
        if isinstance(answer, dict):
            return {int(k): float(v) for k, v in answer.items()}
        return {int(answer): 1.0}


def sampled_entry(spec, class_a, class_b, sims: int, seed: int) -> tuple[float, float]:
    """a's mean return over `sims` sampled episodes, seats alternating, and its stderr."""
    from open_spiel.python.algorithms.psro_v2.abstract_meta_trainer import sample_episode

    np.random.seed(seed)  # psro_v2's random_choice draws from numpy's global generator
    random.seed(seed)
    game = spec.load()
    returns = []
    for episode in range(sims):
        a_seat = episode % 2
        players = [None, None]
        players[a_seat] = InProcessPolicy(spec, class_a, a_seat, episode)
        players[1 - a_seat] = InProcessPolicy(spec, class_b, 1 - a_seat, episode)
        returns.append(float(sample_episode(game.new_initial_state(), players)[a_seat]))
    values = np.array(returns)
    return float(values.mean()), float(values.std(ddof=1) / math.sqrt(len(values)))


def exact_entries(table: Table, quick: bool) -> None:
    """Three exact figures per game, each against the same sampled baseline:
    cold (both policies tabularised through their sandboxes), new (one side
    already tabularised: what each entry of a policy joining the population
    costs at most, since the members' tables are cached) and warm (both
    cached: every further entry of that policy)."""
    from csro_tui.evaluation.exact import exact_payoff
    from csro_tui.evaluation.participants import CodePolicy
    from csro_tui.games.registry import get_game

    repeats = 5 if quick else 9
    for game_name, (name_a, name_b) in ENTRIES.items():
        spec = get_game(game_name)
        seeds = spec.seed_policies()
        counter = iter(range(10**6))

        def fresh(name: str) -> CodePolicy:
            # A fresh comment gives a fresh source hash: nothing comes from the
            # tabularisation cache, the policy is asked through its sandbox.
            return CodePolicy(name, seeds[name] + f"\n# bench run {next(counter)}\n")

        member = fresh(name_b)
        exact_payoff(spec, fresh(name_a), member)  # the member's table is cached from here on
        joined = fresh(name_a)
        exact_payoff(spec, joined, member)
        class_a, class_b = load_policy_class(seeds[name_a]), load_policy_class(seeds[name_b])
        timings = interleaved({
            "sampled": lambda: sampled_entry(spec, class_a, class_b, SIMS_PER_ENTRY, 11),
            "new": lambda: exact_payoff(spec, fresh(name_a), member),
            "cold": lambda: exact_payoff(spec, fresh(name_a), fresh(name_b)),
        }, repeats)
        sampled, new, cold = timings["sampled"], timings["new"], timings["cold"]
        warm = timed(lambda: exact_payoff(spec, joined, member), 20)
        for result in (cold.value, new.value, warm.value):
            assert result.failure is None, result.failure
        mean, stderr = sampled.value
        exact_value = warm.value.mean
        error = abs(mean - exact_value)
        what = f"{game_name} entry {name_a} vs {name_b}"
        table.add("3", f"{what}: exact, one new policy, vs {SIMS_PER_ENTRY} samples",
                  fmt_seconds(new.best), fmt_seconds(sampled.best),
                  f"{ratio(sampled.best, new.best):.1f}x faster", "exact faster than 1000 samples",
                  new.best < sampled.best,
                  note=f"the engine's case: the new policy tabularised through its sandbox, the member's table "
                       f"cached; exact value {exact_value:+.4f}; sampled {mean:+.4f} +- {stderr:.4f} (stderr), "
                       f"error {error:.4f} = {error / stderr if stderr else float('nan'):.1f} stderr "
                       f"(psro_v2 sample_episode, seats alternating, policies in-process, no sandbox); "
                       f"{new.describe()}")
        table.add("3", f"{what}: exact, both tables cached, vs {SIMS_PER_ENTRY} samples",
                  fmt_seconds(warm.best), fmt_seconds(sampled.best),
                  f"{ratio(sampled.best, warm.best):.0f}x faster", "", None,
                  note=f"every further entry of a policy once it is tabularised; {warm.describe()}")
        table.add("3", f"{what}: exact, both policies new, vs {SIMS_PER_ENTRY} samples",
                  fmt_seconds(cold.best), fmt_seconds(sampled.best),
                  f"{ratio(sampled.best, cold.best):.2f}x", "", None,
                  note=f"two sandboxes started (overlapped) and asked; {cold.describe()}")


def psro_iterations(table: Table, quick: bool) -> None:
    import pyspiel
    from open_spiel.python import policy as os_policy
    from open_spiel.python.algorithms import exploitability
    from open_spiel.python.algorithms.psro_v2 import best_response_oracle, psro_v2

    from csro_tui.config import RunConfig
    from csro_tui.engine.setup import new_engine

    iterations = 3 if quick else 5
    config = RunConfig(game="kuhn_poker", oracle="best-response", iterations=iterations, review="auto", seed=0)

    def ours_run():
        engine = new_engine(config, store=None)
        engine.run()
        last = engine.state.metrics_for(iterations)
        return last.exploitability if last is not None else float("nan")

    ours = timed(ours_run, 1)

    game = pyspiel.load_game("kuhn_poker")

    def openspiel_run():
        np.random.seed(0)
        oracle = best_response_oracle.BestResponseOracle(game=game, best_response_backend="cpp")
        solver = psro_v2.PSROSolver(
            game, oracle, sims_per_entry=SIMS_PER_ENTRY,
            initial_policies=[os_policy.UniformRandomPolicy(game)] * 2,
            meta_strategy_method="nash", training_strategy_selector="probabilistic",
            symmetric_game=False,
        )
        for _ in range(iterations):
            solver.iteration()
        policies = solver.get_policies()
        meta = solver.get_meta_strategies()
        from open_spiel.python.algorithms import policy_aggregator

        aggregated = policy_aggregator.PolicyAggregator(game).aggregate(range(2), policies, meta)
        return exploitability.exploitability(game, aggregated)

    import contextlib
    import io

    with contextlib.redirect_stdout(io.StringIO()):  # psro_v2 prints as it goes
        openspiel = timed(openspiel_run, 1)
    table.add("5", f"Kuhn PSRO, {iterations} iterations, exact BR oracle: seconds",
              fmt_seconds(ours.best), fmt_seconds(openspiel.best),
              f"{ratio(openspiel.best, ours.best):.2f}x", "", None,
              note=f"ours: engine (best-response oracle, auto reviewer, exact entries through sandboxes, Nash LP), "
                   f"exploitability {ours.value:.4f}; OpenSpiel: PSROSolver + BestResponseOracle (cpp), "
                   f"sims_per_entry={SIMS_PER_ENTRY}, Nash meta-solver, exploitability {openspiel.value:.4f}")
