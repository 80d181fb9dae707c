"""The sandbox clock's figures and flags (policies/clock.py); the clock's
enforcement is tested against real hosts in test_isolation_limits_and_protocol.py and the corpus."""

from __future__ import annotations

from csro_tui.evaluation.results import MatchResult
from csro_tui.sandbox.clock import CallTiming, describe_timing, timing_of


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
    path.write_text("game = 'rrps(num_repetitions=10)'\noracle = 'seed'\nmove_budget = 0.05\nepisode_memory_mb = 8\n")
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


# -- HostClock.check, driven by hand: a page whose counter the test moves, the
# watchdog's looks at chosen moments (what a host could do to its counter).


class _Gone:
    """A process that has ended already: kill() signals nothing."""

    returncode = 0
    pid = -1


class _Usage:
    """Stands in for HostUsage: the host's (CPU seconds, seconds waiting for a CPU), as a test sets them."""

    def __init__(self) -> None:
        self.cpu = self.waited = 0.0

    def read(self):
        return self.cpu, self.waited

    def find(self) -> None:
        pass

    def close(self) -> None:
        pass


def _clock(usage=None, **limits):
    from csro_tui.sandbox.clock import HostClock, ProgressPage
    from csro_tui.sandbox.sandbox import SandboxLimits

    page = ProgressPage()
    clock = HostClock(page, _Gone(), SandboxLimits(**limits), usage)
    clock.note_started()
    return clock, page


def _message(verdict, category="timeout"):
    assert verdict is not None and verdict[0].value == category, verdict
    return verdict[1]


def test_a_call_without_progress_is_stopped_after_its_limit_and_grace():
    from csro_tui.sandbox.clock import KIND_ACT

    clock, page = _clock(move_timeout=1.0, call_grace=0.5, batch_timeout=2.0, budget_reserve=100.0)
    clock.arm(2, (KIND_ACT,), [7, 8], at=0.0)
    page.counts[0] += 1  # call 0 (episode 7) starts
    assert clock.check(0.1, lambda: False) is None
    assert clock.check(1.5, lambda: False) is None  # 1.4 s since the start was seen: within 1 + 0.5
    reason = _message(clock.check(1.7, lambda: False))
    assert reason.startswith("act (episode 7) ran past its limit of 1 s (stopped from outside the host")
    page.close()


def test_a_counter_claiming_every_call_done_buys_no_time():
    """Claiming every call done makes the request finished: its reply must
    follow within batch_timeout, or the host is stopped."""
    from csro_tui.sandbox.clock import KIND_ACT

    clock, page = _clock(move_timeout=1.0, call_grace=0.5, batch_timeout=2.0)
    clock.arm(3, (KIND_ACT,), [1, 2, 3], at=0.0)
    page.counts[0] += 4
    assert clock.check(0.1, lambda: False) is None
    assert clock.check(2.0, lambda: False) is None
    assert clock.check(2.2, lambda: True) is None  # the reply is in the pipe: nothing to stop
    assert "sent no reply within 2 s" in _message(clock.check(2.2, lambda: False))
    page.close()


def test_a_counter_that_goes_back_or_jumps_past_the_request_is_a_protocol_violation():
    from csro_tui.sandbox.clock import KIND_ACT

    clock, page = _clock(move_timeout=1.0, call_grace=0.5, batch_timeout=2.0)
    clock.arm(3, (KIND_ACT,), [1, 2, 3], at=0.0)
    page.counts[0] += 2
    assert clock.check(0.1, lambda: False) is None
    page.counts[0] -= 1  # flipped back: the call it is in would start afresh
    reason = _message(clock.check(0.2, lambda: False), "forbidden")
    assert reason.startswith("the host tampered with the sandbox's clock: its progress counter went back from 2 to 1")

    clock.arm(3, (KIND_ACT,), [1, 2, 3], at=1.0)
    page.counts[0] += 5  # more than 3 calls and the end of the request
    reason = _message(clock.check(1.1, lambda: False), "forbidden")
    assert "its progress counter jumped to 5 in a request of 3 call(s)" in reason
    page.close()


def test_the_request_deadline_is_the_parents_whatever_the_page_says():
    """Each call may run its limit, the request starts within batch_timeout,
    grace once: a host that shows a new call just before each limit gains
    nothing past that, and the deadline is the one the owner waits to."""
    from csro_tui.sandbox.clock import KIND_ACT

    clock, page = _clock(move_timeout=1.0, call_grace=0.5, batch_timeout=2.0, budget_reserve=100.0)
    clock.arm(2, (KIND_ACT,), [7, 8], at=10.0)
    assert clock.deadline() == 10.0 + 2.0 + 2 * 1.0 + 0.5
    page.counts[0] += 1
    assert clock.check(11.9, lambda: False) is None
    page.counts[0] += 1  # "call 2 starts" - the last call a 2-call request can claim
    assert clock.check(13.4, lambda: False) is None
    reason = _message(clock.check(14.6, lambda: False))  # within 1.5 s of the last claim, past the request's
    assert reason.startswith("act (episode 8) ran past its limit of 1 s (stopped from outside the host after 4.6 s")
    assert clock.check(14.6, lambda: True) is None  # its reply waits in the pipe: the owner reads it
    clock.disarm()
    assert clock.deadline() is None
    page.close()


def test_the_budget_is_pooled_over_the_hosts_episodes_and_earned_per_decision():
    from csro_tui.sandbox.clock import KIND_ACT

    clock, page = _clock(move_timeout=1.0, call_grace=0.5, move_budget=0.01, budget_reserve=0.5)
    # 100 decisions, one after another, each seen running: 1 s earned + 0.5 s reserve.
    now = 0.0
    for step in range(100):
        clock.arm(1, (KIND_ACT,), [step % 10], at=now)
        page.counts[0] += 1
        now += 0.014  # 14 ms a decision: 1.4 s over 100 decisions, within 1.5 s
        assert clock.check(now, lambda: False) is None, step
        page.counts[0] += 1  # done
        clock.disarm()
    assert clock.decisions == 100 and abs(clock.play_used - 1.4) < 1e-9
    clock.arm(1, (KIND_ACT,), [3], at=now)
    page.counts[0] += 1
    reason = _message(clock.check(now + 0.2, lambda: False))  # 1.6 s > 1.01 + 0.5
    assert reason.startswith("act (episode 3) ran out of the policy's time budget: 1.6 s used over 101 decision(s)")
    assert "(this episode 0.3 s, 10 episode(s) charged)" in reason
    page.close()


def test_the_budget_is_charged_the_hosts_own_time_never_its_wait_for_a_cpu():
    """With the host's figures, a decision costs its CPU time plus any time
    it sleeps while its reply is due, but never time it waited for a CPU (a
    neighbour's use of the machine); CPU it burns after replying is charged
    too."""
    from csro_tui.sandbox.clock import KIND_ACT

    usage = _Usage()
    clock, page = _clock(usage, move_timeout=1.0, call_grace=0.5, move_budget=0.02, budget_reserve=0.1)
    now = 0.0
    for step in range(100):  # 14 ms of CPU a decision, 40 ms of wall: 26 ms of it waiting for a CPU
        clock.arm(1, (KIND_ACT,), [0], at=now)
        page.counts[0] += 1
        now += 0.040
        usage.cpu += 0.014
        usage.waited += 0.026
        assert clock.check(now, lambda: False) is None, step
        page.counts[0] += 1
        clock.disarm()
    assert abs(clock.play_used - 1.4) < 1e-6  # not the 4 s of wall time
    clock.arm(1, (KIND_ACT,), [0], at=now)
    page.counts[0] += 1
    usage.cpu += 0.5  # burnt after its last reply, or now: the host's own CPU either way
    assert clock.check(now + 0.01, lambda: True) is None  # replied: CPU only
    assert abs(clock.play_used - 1.9) < 1e-6
    now += 0.3  # asleep while its reply is due: its own time (but the tick of credit the balance keeps)
    reason = _message(clock.check(now, lambda: False))
    assert abs(clock.play_used - (1.9 + 0.29 - 0.05)) < 1e-6  # 0.29 s since the last look
    assert reason.startswith("act (episode 0) ran out of the policy's time budget: 2.1 s used over 101 decision(s)")
    page.close()


def test_a_wait_for_a_cpu_the_kernel_reports_late_is_not_charged_for_long():
    """The kernel adds a wait for a CPU to the host's figures when the wait
    ends: a look in the middle of one sees it as sleep, the next look takes
    it back."""
    from csro_tui.sandbox.clock import KIND_ACT

    usage = _Usage()
    clock, page = _clock(usage, move_timeout=1.0, call_grace=0.5, budget_reserve=10.0)
    clock.arm(1, (KIND_ACT,), [0], at=0.0)
    page.counts[0] += 1
    usage.cpu = 0.010
    assert clock.check(0.040, lambda: False) is None  # 30 ms waiting for a CPU, not reported yet
    assert abs(clock.play_used - 0.040) < 1e-9
    usage.cpu, usage.waited = 0.020, 0.030  # now reported
    assert clock.check(0.050, lambda: False) is None
    assert abs(clock.play_used - 0.020) < 1e-9  # its CPU time, no more
    page.close()


def test_the_first_load_is_charged_to_the_set_up_budget():
    from csro_tui.sandbox.clock import KIND_INIT, KIND_LOAD

    usage = _Usage()
    clock, page = _clock(usage, init_timeout=2.0, init_budget=0.1, move_timeout=1.0, call_grace=0.5)
    clock.arm(1, (KIND_LOAD,), at=0.0)
    page.counts[0] += 1
    usage.cpu += 1.9
    assert clock.check(1.9, lambda: False) is None
    page.counts[0] += 1
    clock.disarm()
    assert abs(clock.setup_used - 1.9) < 1e-6
    clock.arm(4, (KIND_LOAD, KIND_INIT), [1, 2], at=2.0)  # 2 episodes: 0.2 s more
    page.counts[0] += 1
    usage.cpu += 0.35
    reason = _message(clock.check(2.35, lambda: False))
    assert reason.startswith("module load (episode 1) ran out of the time budget for loading the module")
    assert "2.2 s used for 2 episode(s)" in reason
    page.close()


def test_host_usage_reads_the_cpu_time_of_the_process_that_runs_the_policy():
    """HostUsage finds the policy's process below bwrap's chain of children
    and reads its CPU time, which grows as it burns CPU, not as it sleeps."""
    import subprocess
    import sys
    import time

    from csro_tui.sandbox.clock import HostUsage

    # A parent process whose only child burns CPU for a while (bwrap's shape: the work is below).
    burner = "import time\nend = time.process_time() + 0.3\nwhile time.process_time() < end: pass\ntime.sleep(30)\n"
    parent = subprocess.Popen([sys.executable, "-c",
                               f"import subprocess, sys; subprocess.run([sys.executable, '-c', {burner!r}])"])
    usage = HostUsage(parent)
    try:
        deadline = time.monotonic() + 30
        children = f"/proc/{parent.pid}/task/{parent.pid}/children"
        while not open(children).read().strip() and time.monotonic() < deadline:  # as a host's set-up reply
            time.sleep(0.01)
        usage.find()
        figures = None
        while time.monotonic() < deadline:
            figures = usage.read()
            if figures is not None and figures[0] >= 0.3:
                break
            time.sleep(0.05)
        assert figures is not None and figures[0] >= 0.3, figures
        time.sleep(0.2)
        later = usage.read()
        assert later[0] - figures[0] < 0.1  # asleep now: no more CPU
    finally:
        usage.close()
        subprocess.run(["pkill", "-KILL", "-P", str(parent.pid)], check=False)
        parent.kill()
        parent.wait()


def test_a_look_that_straddles_two_requests_accuses_no_one():
    """The watchdog reads the armed request, then the page; if the owner
    armed the next request in between (the watchdog's thread can lose the
    GIL there), the page's count belongs to the new request: that look
    judges nothing, rather than see a jump."""
    from csro_tui.sandbox.clock import KIND_ACT

    clock, page = _clock(move_timeout=1.0, call_grace=0.5, batch_timeout=2.0)
    clock.arm(1, (KIND_ACT,), [1], at=0.0)

    class _Page:  # the page as read at the moment the owner re-arms
        def ticks(self):
            page.counts[0] += 2  # the first request done...
            clock.page = page
            clock.arm(3, (KIND_ACT,), [1, 2, 3], at=0.0)  # ...the next one sent...
            clock.page = self
            page.counts[0] += 3  # ...and its calls started by the time the watchdog reads
            return page.counts[0]

    clock.page = _Page()
    assert clock.check(0.1, lambda: False) is None
    clock.page = page
    page.close()
