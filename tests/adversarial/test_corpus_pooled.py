"""The adversarial corpus again, every host on a pre-started process (host_pool.py).

A warm host is spawned before its policy is known and only then given the
module; this runs every runtime case of test_corpus.py that way, with the
same checks, so the pool trades no isolation property for speed.  The
pool is started inside the case's arena (its environment and secret), as
a session's pool would be started inside the session's environment.
"""

from __future__ import annotations

import os

import pytest

from csro_tui.sandbox.host_pool import HostPool
from tests.adversarial import harness
from tests.adversarial.harness import CASES, IDS, arena_environment, check_runtime_layers, environment

HOSTS_PER_CASE = 3  # the hostile policy, its opponent and the bystander


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_runtime_layers_hold_on_pre_started_hosts(case, mode, arena, monkeypatch):
    with arena_environment(arena), environment(CSRO_SANDBOX=mode):
        pool = HostPool(HOSTS_PER_CASE, mode=mode)
    adopted = []
    make_host = harness.Recorder.__call__

    def on_pooled_process(recorder, source, game_info, **kwargs):
        host = make_host(recorder, source, game_info, **kwargs)
        assert pool.wait_ready(1, timeout=60.0)
        started = pool.take()
        assert started is not None
        host.adopt(started)
        adopted.append(started)
        return host

    monkeypatch.setattr(harness.Recorder, "__call__", on_pooled_process)
    try:
        assert pool.wait_ready(timeout=60.0)
        check_runtime_layers(case, mode, arena)
    finally:
        pool.close()
    assert adopted
    for started in adopted:
        with pytest.raises(ProcessLookupError):
            os.kill(started.process.pid, 0)
