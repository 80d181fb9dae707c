"""Sections 1 and 2: RRPS episodes through our referee and sandbox, against
an OpenSpiel-style evaluation loop and against the bare limit.

The OpenSpiel-style loop is written the way OpenSpiel's own
`examples/roshambo_population_example.py` evaluates agents (`eval_agents`):
an `rl_environment.Environment(..., include_full_state=True)`, agents that
deserialize the full state from each time step, bots stepped on that state.
Our seed policies play in it in-process, through the same observation view
our referee uses.  The bare limit is a plain loop that calls the two
policies' `act` with the same observation dicts: no game engine, no process
boundary.
"""

from __future__ import annotations

import random
import statistics

import numpy as np
import pyspiel

from bench.common import Table, fmt_seconds, interleaved, load_policy_class, ratio, timed

CODE_A, CODE_B = "frequency_counter", "markov_predictor"


# ---------------------------------------------------------------- in-process players


def _sample(answer, rng: random.Random) -> int:
    if isinstance(answer, dict):
        from csro_tui.evaluation.sampling import sample

        return sample({int(k): float(v) for k, v in answer.items()}, rng)
    return int(answer)


class CodeAgent:
    """A code policy as an OpenSpiel rl_agent, as the example wraps its bots:
    it deserializes the full state from the time step and acts on it."""

    def __init__(self, spec, policy_class, player: int, num_actions: int) -> None:
        self.spec, self.policy_class, self.player, self.num_actions = spec, policy_class, player, num_actions
        self.restart(0)

    def restart(self, seed: int) -> None:
        game = dict(self.spec.game_info(), player=self.player, seed=seed)
        self.policy = self.policy_class(self.player, game)
        self.view = self.spec.new_view(self.player)
        self.rng = random.Random(seed)

    def step(self, time_step, is_evaluation=False):
        from open_spiel.python import rl_agent

        if time_step.last():
            return None
        _, state = pyspiel.deserialize_game_and_state(time_step.observations["serialized_state"])
        action = _sample(self.policy.act(self.view.observe(state)), self.rng)
        probs = np.zeros(self.num_actions)
        probs[action] = 1.0
        return rl_agent.StepOutput(action=action, probs=probs)


class RoshamboBotAgent:
    """`BotAgent` of roshambo_population_example.py, verbatim in behaviour."""

    def __init__(self, num_actions: int, bot) -> None:
        self._bot, self._num_actions = bot, num_actions

    def restart(self, seed: int) -> None:
        self._bot.restart()

    def step(self, time_step, is_evaluation=False):
        from open_spiel.python import rl_agent

        if time_step.last():
            return None
        _, state = pyspiel.deserialize_game_and_state(time_step.observations["serialized_state"])
        action = self._bot.step(state)
        probs = np.zeros(self._num_actions)
        probs[action] = 1.0
        return rl_agent.StepOutput(action=action, probs=probs)


def openspiel_eval(env, seat_agents, episodes: int) -> float:
    """`eval_agents` of the example (without its prints), seats swapped every
    episode like our referee: a's mean return.  seat_agents[s] = (a, b) with
    a's agent built for seat s and b's for the other seat."""
    total = 0.0
    for episode in range(episodes):
        a_seat = episode % 2
        a_agent, b_agent = seat_agents[a_seat]
        agents = [a_agent, b_agent] if a_seat == 0 else [b_agent, a_agent]
        for agent in agents:
            agent.restart(episode)
        time_step = env.reset()
        rewards = np.zeros(2)
        while not time_step.last():
            actions = [agent.step(time_step, is_evaluation=True).action for agent in agents]
            time_step = env.step(actions)
            rewards += time_step.rewards
        total += rewards[a_seat]
    return total / episodes


def general_path(play):
    """`play()` with the RRPS fast path off: the lockstep the referee uses for
    every other game (OpenSpiel states, views, one observation dict per request)."""
    from csro_tui.evaluation import rrps_lockstep

    applies = rrps_lockstep.applies
    rrps_lockstep.applies = lambda spec, jobs: False
    try:
        return play()
    finally:
        rrps_lockstep.applies = applies


def bare_loop(spec, class_a, class_b, episodes: int, throws: int) -> float:
    """The bare limit: the two policies' `act` on the obs dicts, nothing else."""
    info = spec.game_info()
    total = 0
    for episode in range(episodes):
        a = class_a(episode % 2, dict(info, player=episode % 2, seed=episode))
        b = class_b(1 - episode % 2, dict(info, player=1 - episode % 2, seed=episode + 1))
        a_moves, b_moves = [], []
        score = 0
        for round_number in range(throws):
            x = a.act({"round": round_number, "my_moves": a_moves, "opp_moves": b_moves,
                       "my_score": score, "legal_actions": [0, 1, 2]})
            y = b.act({"round": round_number, "my_moves": b_moves, "opp_moves": a_moves,
                       "my_score": -score, "legal_actions": [0, 1, 2]})
            a_moves.append(x)
            b_moves.append(y)
            score += (0, 1, -1)[(x - y) % 3]
        total += score
    return total / episodes


# ---------------------------------------------------------------- sections


def code_vs_code(table: Table, quick: bool) -> None:
    from open_spiel.python import rl_environment

    from csro_tui.evaluation.participants import CodePolicy
    from csro_tui.evaluation.referee import play_match
    from csro_tui.games.registry import get_game

    spec = get_game("rrps")
    throws = spec.num_repetitions
    seeds = spec.seed_policies()
    ours_episodes = 60 if quick else 200
    openspiel_episodes = 2 if quick else 6
    bare_episodes = 60 if quick else 200
    repeats = 3 if quick else 5

    a, b = CodePolicy(CODE_A, seeds[CODE_A]), CodePolicy(CODE_B, seeds[CODE_B])
    class_a, class_b = load_policy_class(seeds[CODE_A]), load_policy_class(seeds[CODE_B])
    env = rl_environment.Environment(spec.game_string, include_full_state=True)
    actions = env.action_spec()["num_actions"]
    seat_agents = {
        seat: (CodeAgent(spec, class_a, seat, actions), CodeAgent(spec, class_b, 1 - seat, actions))
        for seat in (0, 1)
    }
    # Warm hosts (the pool the engine keeps for exact games) as the host
    # factory: what ours costs without the hosts' start-up.  The pool
    # refills while the other measurements run; any wait for it is counted.
    from csro_tui.sandbox.host_pool import HostPool

    with HostPool(2) as pool:
        pool.wait_ready(2)

        def warm():
            pool.wait_ready(2)
            return play_match(spec, a, b, episodes=ours_episodes, seed=7, host_factory=pool)

        timings = interleaved({
            "ours": lambda: play_match(spec, a, b, episodes=ours_episodes, seed=7),
            "bare": lambda: bare_loop(spec, class_a, class_b, bare_episodes, throws),
            "general": lambda: general_path(lambda: play_match(spec, a, b, episodes=ours_episodes, seed=7)),
            "warm": warm,
        }, repeats)
    ours, bare, general, warm = timings["ours"], timings["bare"], timings["general"], timings["warm"]
    assert ours.value.failure is None, ours.value.failure
    # The same episodes, played three ways.
    assert general.value.returns == ours.value.returns == warm.value.returns
    openspiel = timed(lambda: openspiel_eval(env, seat_agents, openspiel_episodes), 1)

    ours_rate = ours_episodes / ours.best
    openspiel_rate = openspiel_episodes / openspiel.best
    bare_rate = bare_episodes / bare.best
    what = f"RRPS {CODE_A} vs {CODE_B}, {throws} throws"
    table.add("1a", f"{what}: episodes/s vs OpenSpiel-style loop",
              f"{ours_rate:.1f} eps/s", f"{openspiel_rate:.2f} eps/s",
              f"{ratio(ours_rate, openspiel_rate):.1f}x faster", ">= 10x",
              ratio(ours_rate, openspiel_rate) >= 10,
              note=f"ours: play_match, {ours_episodes} episodes incl. sandbox start, {ours.describe()}; "
                   f"OpenSpiel-style: rl_environment include_full_state, {openspiel_episodes} episodes, "
                   f"{openspiel.describe()}")
    table.add("1b", f"{what}: episodes/s vs bare limit",
              f"{ours_rate:.1f} eps/s", f"{bare_rate:.1f} eps/s",
              f"{ratio(bare_rate, ours_rate):.2f}x slower", "<= 3x slower",
              ratio(bare_rate, ours_rate) <= 3,
              note=f"bare: two act() calls per throw in one process, {bare_episodes} episodes, {bare.describe()}; "
                   f"ratio within each turn (ours and bare timed back to back): median "
                   f"{statistics.median(o / ours_episodes / (b / bare_episodes) for o, b in zip(ours.runs, bare.runs)):.2f}x; "
                   f"the referee's general path (an OpenSpiel state and a view per episode, a dict per request), "
                   f"same match: {ours_episodes / general.best:.1f} eps/s, "
                   f"{ratio(bare_rate, ours_episodes / general.best):.2f}x slower than bare, {general.describe()}; "
                   f"ours on warm hosts (a HostPool as the host factory; the engine uses one for exact games "
                   f"only): {ours_episodes / warm.best:.1f} eps/s, {ratio(bare_rate, ours_episodes / warm.best):.2f}x "
                   f"slower than bare, {warm.describe()}")


def code_vs_bots(table: Table, quick: bool) -> None:
    from open_spiel.python import rl_environment

    from csro_tui.evaluation.participants import BotPolicy, CodePolicy
    from csro_tui.evaluation.runner import MatchJob, evaluate_matchups
    from csro_tui.games.registry import get_game
    from csro_tui.games.rrps import roshambo_bot_names

    spec = get_game("rrps")
    seeds = spec.seed_policies()
    names = list(roshambo_bot_names())
    bots = names[::4] if quick else names
    episodes = 2  # the engine's benchmark_episodes default: one seat-swapped pair
    code = CodePolicy(CODE_B, seeds[CODE_B])
    jobs = [MatchJob(code, BotPolicy(name), episodes, 100 + i) for i, name in enumerate(bots)]
    import os

    cores = os.cpu_count() or 1
    # The default (what `csro eval` does: one lockstep in this process below
    # 200k moves, a pool of every core above); and every core forced, pool
    # start-up included.
    ours = timed(lambda: evaluate_matchups(spec, jobs), 1)
    failures = [r.failure for r in ours.value if r.failure is not None]
    assert not failures, failures[0]
    pooled = timed(lambda: evaluate_matchups(spec, jobs, workers=cores), 1)

    class_b = load_policy_class(seeds[CODE_B])
    env = rl_environment.Environment(spec.game_string, include_full_state=True)
    actions = env.action_spec()["num_actions"]

    def openspiel_all() -> None:
        for name in bots:
            seat_agents = {
                seat: (CodeAgent(spec, class_b, seat, actions),
                       RoshamboBotAgent(actions, pyspiel.make_roshambo_bot(1 - seat, name)))
                for seat in (0, 1)
            }
            openspiel_eval(env, seat_agents, episodes)

    openspiel = timed(openspiel_all, 1)
    scope = f"{len(bots)} of {len(names)} bots (every 4th; --quick)" if quick else f"all {len(names)} bots"
    table.add("2", f"{CODE_B} vs {scope}, {episodes} episodes each: seconds",
              fmt_seconds(ours.best), fmt_seconds(openspiel.best),
              f"{ratio(openspiel.best, ours.best):.1f}x faster", "", None,
              note=f"ours: evaluate_matchups with its default workers; with {cores} workers forced, pool "
                   f"start-up included: {fmt_seconds(pooled.best)}; baseline: OpenSpiel-style loop, the "
                   f"example's BotAgent, same bots and episodes")
