"""The evaluation jobs behind recorded results, built in one place.

The engine builds its payoff-entry and benchmark jobs here, and
`csro replay --verify` rebuilds the same jobs (same seeds, same episodes)
from a recorded session to check that they reproduce.
"""

from __future__ import annotations

from typing import Any

from csro_tui.config import RunConfig
from csro_tui.engine.evaluator import derive_seed
from csro_tui.records import Bot, MatchJob, PolicyRecord

# Episodes per payoff entry when neither the configuration nor the game says.
FALLBACK_EPISODES = 100


def entry_episodes(config: RunConfig, spec: Any) -> int:
    """Episodes per payoff entry: `--episodes`, else the game's default."""
    if config.episodes:
        return config.episodes
    return int(getattr(spec, "default_episodes", 0) or FALLBACK_EPISODES)


def payoff_job(config: RunConfig, spec: Any, row: PolicyRecord, col: PolicyRecord, *, exact: bool) -> MatchJob:
    """The job behind the payoff entry `row` vs `col`; with two populations `row` is the
    seat-0 member and plays seat 0 only (`MatchJob.seat`)."""
    seed = derive_seed(config.seed, "payoff", row.id, col.id)
    return MatchJob(row, col, seed, entry_episodes(config, spec), exact, seat=row.seat)


def benchmark_jobs(config: RunConfig, member: PolicyRecord, bots: list[str]) -> list[MatchJob]:
    """A member against each bot; a member of one seat's population plays that seat only."""
    return [
        MatchJob(member, Bot(bot), derive_seed(config.seed, "benchmark", member.id, bot), config.benchmark_episodes,
                 seat=member.seat)
        for bot in bots
    ]
