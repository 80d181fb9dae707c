"""The sandbox clock's figures and flags (policies/clock.py); the clock's
enforcement is tested against real hosts in test_sandbox.py and the corpus."""

from __future__ import annotations

from csro_tui.evaluation.results import MatchResult
from csro_tui.policies.clock import CallTiming, describe_timing, timing_of


def test_timing_reads_as_the_contract_speaks_and_flags_a_slow_act():
    fast = CallTiming(act_calls=2000, act_seconds=0.84, act_max=0.0031).to_dict()
    assert describe_timing(fast) == "act: 0.42 ms per call on average, 3.1 ms at most (2000 calls)"
    slow = CallTiming(act_calls=100, act_seconds=1.1, act_max=0.04).to_dict()
    assert describe_timing(slow) == (
        "slow: act: 11.0 ms per call on average, 40.0 ms at most (100 calls) (the contract expects act well under 1 ms)"
    )
    assert describe_timing(None) == "" and describe_timing(CallTiming().to_dict()) == ""


def test_timing_travels_with_match_results_and_combines_over_hosts():
    early = MatchResult("p", "b1", 0.0, 0.0, 2, timing=CallTiming(10, 0.01, 0.002).to_dict())
    late = MatchResult("p", "b2", 0.0, 0.0, 2, timing=CallTiming(20, 0.02, 0.001).to_dict())
    assert MatchResult.from_dict(late.to_dict(timing=True)).timing == late.timing  # between processes
    assert "timing" not in late.to_dict()  # never in a session log or a report's results
    combined = timing_of([early, late, MatchResult("p", "bot", 0.0, 0.0, 2)])
    assert combined["act_calls"] == 20 and combined["act_max"] == 0.002
    assert timing_of([MatchResult("p", "b", 0.0, 0.0, 2)]) is None


def test_the_budgets_are_run_options_that_reach_the_evaluator(tmp_path):
    from csro_tui.config import ConfigError, load_run_config
    from csro_tui.engine.setup import _parts

    path = tmp_path / "csro.toml"
    path.write_text("game = 'rrps(num_repetitions=10)'\nmove_budget = 0.05\nepisode_memory_mb = 8\n")
    config = load_run_config({"budget_reserve": "3"}, config_file=path, env={})
    assert (config.move_budget, config.budget_reserve, config.episode_memory_mb) == (0.05, 3.0, 8)
    _spec, _oracle, evaluator = _parts(config, None, None, None)
    limits = evaluator.limits
    assert (limits.move_budget, limits.budget_reserve, limits.episode_memory_mb) == (0.05, 3.0, 8)
    assert limits.move_timeout == 1.0  # not given: the sandbox's default
    assert _parts(load_run_config({}, config_file=None, env={}), None, None, None)[2].limits is None
    import pytest

    with pytest.raises(ConfigError, match="move_budget"):
        load_run_config({"move_budget": "-1"}, config_file=None, env={})


def test_a_session_report_says_what_an_unset_limit_meant():
    from csro_tui.sessions.export import setting_text

    assert setting_text("move_budget", None, "rrps") == "0.02 (default)"
    assert setting_text("episode_memory_mb", None, "rrps") == "8 (default)"
    assert setting_text("move_budget", 0.05, "rrps") != "0.02 (default)"
