"""Shared pytest configuration (keep additive: several test suites use it)."""

import os

import pytest

# Tests marked real_llm talk to a real model at this OpenAI-compatible base URL
# (scripts/local-llm.sh start; .ci/run sets it) and are skipped without it.
REAL_LLM_ENV = "CSRO_REAL_LLM_BASE_URL"


@pytest.fixture(autouse=True, scope="session")
def _private_table_cache(tmp_path_factory):
    """Exact tables are cached on disk across sessions (evaluation/table_cache.py):
    tests keep theirs in a directory of their own, never the user's cache."""
    os.environ["CSRO_TABLE_CACHE_DIR"] = str(tmp_path_factory.mktemp("table-cache"))
    yield


@pytest.fixture
def no_llm_env(monkeypatch):
    """The developer's own key, endpoint or LLM settings must not leak into a test: OPENAI_*,
    CSRO_LLM_*, CSRO_MODEL, CSRO_BASE_URL and CSRO_PROMPTS_DIR are unset for it.
    Modules that talk to an LLM server use it for every test (`pytestmark`)."""
    for name in list(os.environ):
        if name.startswith(("OPENAI_", "CSRO_LLM_")) or name in ("CSRO_MODEL", "CSRO_BASE_URL", "CSRO_PROMPTS_DIR"):
            monkeypatch.delenv(name, raising=False)


@pytest.fixture(params=["rlimits", "bubblewrap"])
def sandbox_mode(request, monkeypatch):
    """Each sandbox mode in turn (CSRO_SANDBOX set for the test); bubblewrap skipped where missing."""
    from csro_tui.sandbox.isolation import bubblewrap_problem  # start-up time: only the sandbox tests need it

    if request.param == "bubblewrap" and bubblewrap_problem():
        pytest.skip(f"bubblewrap unavailable: {bubblewrap_problem()}")
    monkeypatch.setenv("CSRO_SANDBOX", request.param)
    return request.param


def pytest_addoption(parser):
    parser.addoption("--run-slow", action="store_true", help="also run tests marked slow")


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: takes more than a few seconds; run with --run-slow")
    config.addinivalue_line("markers", f"real_llm: needs a real model; runs when ${REAL_LLM_ENV} is set, skipped otherwise")


def pytest_collection_modifyitems(config, items):
    if os.environ.get(REAL_LLM_ENV):
        # The real-model tests take minutes and share one server slot (a file lock): first in
        # the order, xdist hands them to one worker at the start, so they overlap the rest of
        # the suite instead of holding its tail (they are independent of every other test).
        items.sort(key=lambda item: "real_llm" not in item.keywords)
    else:
        no_model = pytest.mark.skip(reason=f"no real model: set {REAL_LLM_ENV} (scripts/local-llm.sh start; url)")
        for item in items:
            if "real_llm" in item.keywords:
                item.add_marker(no_model)
    if config.getoption("--run-slow"):
        return
    skip = pytest.mark.skip(reason="slow; run with --run-slow")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)
