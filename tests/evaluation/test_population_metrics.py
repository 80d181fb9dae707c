"""Population metrics follow the RRPS benchmark's definitions."""

from __future__ import annotations

import pytest

from csro_tui.errors import CsroError
from csro_tui.evaluation.population_metrics import population_metrics


def test_metrics_follow_the_definitions():
    payoffs = {"rockbot": 900.0, "randbot": -2.0, "greenberg": -150.0, "copybot": 40.0}
    metrics = population_metrics(payoffs)
    assert metrics.pop_return == pytest.approx((900 - 2 - 150 + 40) / 4)
    assert metrics.pop_expl == pytest.approx(150.0)  # the worst loss, as a positive number
    assert metrics.agg_score == pytest.approx(metrics.pop_return - metrics.pop_expl)
    assert metrics.per_opponent == payoffs


def test_a_policy_that_never_loses_has_negative_exploitability():
    metrics = population_metrics({"a": 3.0, "b": 1.0})
    assert metrics.pop_expl == pytest.approx(-1.0)
    assert metrics.agg_score == pytest.approx(2.0 + 1.0)


def test_matches_openspiel_roshambo_example_on_a_small_table():
    # The loop of roshambo_population_example.analyze_bot_table, one row.
    row = [0.5, -0.25, 0.0, 1.5]
    pop_expl = -1000.0
    for value in row:
        pop_expl = max(pop_expl, -value)
    metrics = population_metrics({str(i): v for i, v in enumerate(row)})
    assert metrics.pop_return == pytest.approx(sum(row) / len(row))
    assert metrics.pop_expl == pytest.approx(pop_expl)


def test_metrics_round_trip_as_a_dict():
    data = population_metrics({"x": -1.0, "y": 2.0}).to_dict()
    assert data == {"pop_return": 0.5, "pop_expl": 1.0, "agg_score": -0.5, "per_opponent": {"x": -1.0, "y": 2.0}}


def test_an_empty_population_is_a_clear_error():
    with pytest.raises(CsroError):
        population_metrics({})
