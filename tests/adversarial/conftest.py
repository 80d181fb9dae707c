"""The corpus tests' fixtures: an arena per test, each sandbox mode in turn."""

from __future__ import annotations

import pytest

from csro_tui.sandbox.isolation import bubblewrap_problem
from tests.adversarial.harness import MODES, Arena


@pytest.fixture
def arena():
    arena = Arena()
    yield arena
    arena.close()


@pytest.fixture(params=MODES)
def mode(request):
    if request.param == "bubblewrap" and bubblewrap_problem():
        pytest.skip(f"bubblewrap unavailable: {bubblewrap_problem()}")
    return request.param
