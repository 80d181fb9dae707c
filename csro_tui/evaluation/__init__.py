"""Evaluation: the referee, exact evaluation, population metrics, the runner.

Modules: `participants` (who plays), `referee` (sampled matches in
lockstep), `exact` (tabular policies, exact payoffs, exploitability,
mixtures), `metrics` (PopReturn/PopExpl/AggScore), `runner` (many matchups
in a process pool), `results` (MatchResult).
"""

from csro_tui.evaluation.participants import BotPolicy, CodePolicy, Participant
from csro_tui.evaluation.results import MatchResult

__all__ = ["BotPolicy", "CodePolicy", "MatchResult", "Participant"]
