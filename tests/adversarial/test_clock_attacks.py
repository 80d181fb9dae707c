"""Attacks on the sandbox's clock that the corpus's fixed opponent cannot
show (issue 34): a CPU hog against an honest opponent that needs ~14 ms a
decision, both hosts on one CPU; and a host that never answers, against
the evaluation's cap while the parent waits for it.  Both sandbox modes
(the `mode` fixture)."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass

from csro_tui.evaluation.participants import CodePolicy
from csro_tui.evaluation.referee import MatchJob, play_match, play_matches
from csro_tui.evaluation.runner import evaluate_matchups
from csro_tui.games.registry import get_game
from csro_tui.sandbox.clock import _policy_pid
from csro_tui.sandbox.sandbox import PolicyHost, SandboxLimits
from tests.adversarial.harness import CASES, environment

GAME = "rrps(num_repetitions=150)"


def _iterations_for(seconds: float) -> int:
    """Loop iterations (of the policies' loop below) that take `seconds` of CPU here."""
    count, started = 200_000, time.process_time()
    total = 0
    for step in range(count):
        total += step
    return max(1, int(count * seconds / max(time.process_time() - started, 1e-6)))


def _busy_policy(iterations: int, answer: str) -> str:
    """A policy that spends `iterations` of a plain loop on every decision."""
    return f"""
class Policy:
    def __init__(self, player, game):
        self.counts = [0, 0, 0]

    def act(self, obs):
        total = 0
        for step in range({iterations}):
            total += step
        if obs["opp_moves"]:
            self.counts[obs["opp_moves"][-1]] += 1
        {answer}
"""


HONEST_ANSWER = "return (self.counts.index(max(self.counts)) + 1) % 3"  # beats the opponent's favourite move
HOG_ANSWER = "return obs['round'] % 3"


class _OneCpuHost(PolicyHost):
    """A host whose policy process runs on CPU 0 only: two of them compete for it."""

    pinned = False

    def start(self) -> None:
        super().start()
        if not self.pinned:
            self.pinned = True
            os.sched_setaffinity(_policy_pid(self._process), {0})


def test_a_cpu_hog_never_makes_an_honest_opponent_forfeit(mode):
    """The honest policy needs ~14 ms of CPU a decision (its budget is 20 ms);
    the hog all of its 20 ms (its reserve covers the loop running slower in
    its host than here; 300 decisions, two episodes at a time).  On one shared CPU the honest one's replies take
    ~56 ms of wall time for its 40 ms of budget a request, which sandbox v3
    charged to it (its reserve gone after ~125 requests); charged its own
    CPU time, it plays every decision, and so does the hog."""
    spec = get_game(GAME)
    honest = CodePolicy("honest", _busy_policy(_iterations_for(0.014), HONEST_ANSWER))
    hog = CodePolicy("hog", _busy_policy(_iterations_for(0.012), HOG_ANSWER))
    with environment(CSRO_SANDBOX=mode):
        result = play_match(spec, honest, hog, episodes=2, seed=5, limits=SandboxLimits(move_timeout=2.0),
                            host_factory=_OneCpuHost)
    assert result.failure is None, result.failure.summary()
    assert result.episodes == 2 and len(result.returns) == 2


@dataclass(frozen=True)
class _CappedLimits(SandboxLimits):
    evaluation_seconds: float = 3.0  # the evaluation's cap (runner.evaluation_seconds reads it)


def test_the_evaluation_cap_holds_while_the_parent_waits_for_a_host_that_never_answers(mode):
    """A host that stopped its own timers and never answers, with a move
    limit of 30 s (and a budget reserve as long, so that its sleep is not
    charged out first): the whole evaluation still ends at its 3 s cap, the
    failure named and charged to that policy."""
    case = next(case for case in CASES if case.name == "takeover_never_answer")
    spec = get_game("rrps(num_repetitions=20)")
    never = CodePolicy("never", case.source_text())
    opponent = CodePolicy("opponent", spec.seed_policies()["frequency_counter"])
    limits = _CappedLimits(move_timeout=30.0, init_timeout=15.0, budget_reserve=30.0)
    started = time.monotonic()
    with environment(CSRO_SANDBOX=mode):
        [result] = evaluate_matchups(spec, [MatchJob(never, opponent, 2, 11)], workers=1, limits=limits)
    elapsed = time.monotonic() - started
    assert result.failure is not None and result.failure.policy == "never"
    assert result.failure.summary() == "timeout: the evaluation reached its wall-time cap of 3 s (never)"
    assert elapsed < 15.0, f"took {elapsed:.1f} s"  # the cap (3 s) plus the hosts' start-up; 30 s+ without it


def test_the_match_limit_holds_while_the_parent_waits(mode):
    """A call that loops with a 10 s move limit in a match limited to 0.5 s:
    the host is stopped at the match limit, while the parent waits for it,
    charged to it; the opponent's other match plays on to its end."""
    spec = get_game("rrps(num_repetitions=20)")
    looping = CodePolicy("looping", _busy_policy(10**12, HOG_ANSWER))
    opponent = CodePolicy("opponent", spec.seed_policies()["frequency_counter"])
    bystander = CodePolicy("bystander", spec.seed_policies()["markov_predictor"])
    started = time.monotonic()
    with environment(CSRO_SANDBOX=mode):
        hostile, clean = play_matches(spec, [MatchJob(looping, opponent, 2, 3), MatchJob(bystander, opponent, 2, 4)],
                                      limits=SandboxLimits(move_timeout=10.0, budget_reserve=30.0), match_seconds=0.5)
    elapsed = time.monotonic() - started
    assert hostile.failure is not None
    assert hostile.failure.summary() == "timeout: the match overran its limit of 0.5 s (looping)"
    assert clean.failure is None and clean.episodes == 2
    assert elapsed < 8.0, f"took {elapsed:.1f} s"  # hosts' start-up and 0.5 s; 10 s + grace without the hold
