"""Exact tables on disk (csro_tui/evaluation/table_cache.py): reused across
sessions, keyed by everything that changes the answer, and never trusted
blindly."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from csro_tui.evaluation import exact, table_cache
from csro_tui.evaluation.participants import CodePolicy
from csro_tui.games.registry import get_game
from csro_tui.sandbox.sandbox import PolicyHost, bubblewrap_problem

KUHN = get_game("kuhn_poker")


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """A fresh cache directory and no table in memory (a new session)."""
    monkeypatch.setenv(table_cache.CACHE_DIR_ENV_VAR, str(tmp_path / "tables"))
    exact._policy_cache.clear()  # noqa: SLF001
    yield tmp_path / "tables"
    exact._policy_cache.clear()  # noqa: SLF001


class CountingFactory:
    """A host factory that counts the sandboxes it starts."""

    def __init__(self) -> None:
        self.started = 0

    def __call__(self, source, game_info, **kwargs):
        self.started += 1
        return PolicyHost(source, game_info, **kwargs)


def refusing_factory(source, game_info, **kwargs):
    raise AssertionError("the policy was asked again instead of read from the cache")


def policy(name: str, note: str = "") -> CodePolicy:
    return CodePolicy(name, KUHN.seed_policies()[name] + note)


def cache_file(spec, code_policy: CodePolicy, directory):
    key = exact._disk_key(spec, exact.game_tables(spec), code_policy)  # noqa: SLF001
    return directory / f"{key}.npz"


def test_a_table_made_in_another_process_is_reused_without_asking_the_policy(cache):
    code = policy("card_rules", "\n# table cache test: another process\n")
    script = (
        "import json, sys\n"
        "from csro_tui.evaluation.exact import tabularize\n"
        "from csro_tui.evaluation.participants import CodePolicy\n"
        "from csro_tui.games.registry import get_game\n"
        "table = tabularize(get_game('kuhn_poker'), CodePolicy('p', sys.stdin.read()))\n"
        "print(json.dumps(table.action_probability_array.tolist()))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], input=code.source, capture_output=True, text=True,
                          env=dict(os.environ), timeout=300, check=True)
    theirs = np.array(json.loads(done.stdout))
    assert cache_file(KUHN, code, cache).exists()
    mine = exact.tabularize(KUHN, code, host_factory=refusing_factory)
    np.testing.assert_array_equal(mine.action_probability_array, theirs)


def test_different_code_or_game_has_a_different_key(cache):
    tables = exact.game_tables(KUHN)
    keys = {
        exact._disk_key(KUHN, tables, policy("card_rules")),  # noqa: SLF001
        exact._disk_key(KUHN, tables, policy("card_rules", "\n# another comment\n")),  # noqa: SLF001
        exact._disk_key(KUHN, tables, policy("uniform")),  # noqa: SLF001
    }
    leduc = get_game("leduc_poker")
    same_code = CodePolicy("card_rules", KUHN.seed_policies()["card_rules"])
    keys.add(exact._disk_key(leduc, exact.game_tables(leduc), same_code))  # noqa: SLF001
    assert len(keys) == 4 and None not in keys
    # and the same code in the same game: the same key, whatever the name
    assert exact._disk_key(KUHN, tables, CodePolicy("other name", same_code.source)) in keys  # noqa: SLF001


def test_the_sandbox_mode_is_part_of_the_key(cache, monkeypatch):
    tables = exact.game_tables(KUHN)
    code = policy("uniform")
    monkeypatch.setenv("CSRO_SANDBOX", "rlimits")
    rlimits = exact._disk_key(KUHN, tables, code)  # noqa: SLF001
    if not bubblewrap_problem():
        monkeypatch.setenv("CSRO_SANDBOX", "bubblewrap")
        assert exact._disk_key(KUHN, tables, code) != rlimits  # noqa: SLF001


@pytest.mark.parametrize("damage", ["garbage", "wrong shape", "rows", "negative", "other key"])
def test_a_damaged_cache_file_is_ignored_with_one_line_and_rewritten(cache, caplog, damage):
    code = policy("card_rules", f"\n# table cache test: {damage}\n")
    counting = CountingFactory()
    good = exact.tabularize(KUHN, code, host_factory=counting).action_probability_array.copy()
    assert counting.started == 1
    path = cache_file(KUHN, code, cache)
    key = path.stem
    bad = good.copy()
    if damage == "garbage":
        path.write_bytes(b"not a numpy file at all")
    else:
        if damage == "wrong shape":
            bad = bad[:-1]
        elif damage == "rows":
            bad[0] = bad[0] * 0.5
        elif damage == "negative":
            bad[0, 0], bad[0, 1] = -0.5, 1.5
        with open(path, "wb") as file:
            np.savez(file, key=np.array(key if damage != "other key" else "0" * 64), probabilities=bad)
    exact._policy_cache.clear()  # noqa: SLF001 - a new session
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="csro_tui.evaluation.table_cache"):
        again = exact.tabularize(KUHN, code, host_factory=counting).action_probability_array
    assert counting.started == 2  # asked again, not trusted
    np.testing.assert_array_equal(again, good)
    warnings = [record.getMessage() for record in caplog.records]
    assert len(warnings) == 1 and "ignoring the cached policy table" in warnings[0]
    assert "\n" not in warnings[0]
    # rewritten: the next session reads it without asking
    exact._policy_cache.clear()  # noqa: SLF001
    np.testing.assert_array_equal(exact.tabularize(KUHN, code, host_factory=refusing_factory).action_probability_array, good)


def test_a_table_with_probability_on_an_illegal_action_is_refused():
    mask = np.array([[1, 1, 0], [0, 1, 1]])
    assert table_cache.table_problem(np.array([[0.5, 0.5, 0.0], [0.0, 0.0, 1.0]]), mask) is None
    assert "illegal" in table_cache.table_problem(np.array([[0.5, 0.25, 0.25], [0.0, 0.0, 1.0]]), mask)
    assert "not finite" in table_cache.table_problem(np.array([[np.nan, 1.0, 0.0], [0.0, 0.0, 1.0]]), mask)


def test_a_failing_policy_is_not_cached(cache):
    crashing = CodePolicy("crash", "class Policy:\n    def __init__(self, player, game):\n        pass\n\n"
                                   "    def act(self, obs):\n        raise ValueError('no table for me')\n")
    with pytest.raises(Exception, match="no table for me"):
        exact.tabularize(KUHN, crashing)
    assert not cache_file(KUHN, crashing, cache).exists()


def test_the_cache_can_be_turned_off(tmp_path, monkeypatch):
    monkeypatch.setenv(table_cache.CACHE_DIR_ENV_VAR, "off")
    exact._policy_cache.clear()  # noqa: SLF001
    counting = CountingFactory()
    code = policy("uniform", "\n# table cache test: off\n")
    exact.tabularize(KUHN, code, host_factory=counting)
    exact._policy_cache.clear()  # noqa: SLF001
    exact.tabularize(KUHN, code, host_factory=counting)
    assert counting.started == 2
    exact._policy_cache.clear()  # noqa: SLF001


@pytest.mark.parametrize("shared", ["group-writable", "world-writable"])
def test_a_cache_directory_others_may_write_is_not_used(cache, caplog, shared):
    """Whoever can write the directory could plant a table for any code (the key is public)."""
    code = policy("card_rules", f"\n# table cache test: {shared}\n")
    exact.tabularize(KUHN, code)  # made and kept while the directory is private
    assert cache_file(KUHN, code, cache).exists() and (cache.stat().st_mode & 0o077) == 0
    os.chmod(cache, 0o770 if shared == "group-writable" else 0o777)
    exact._policy_cache.clear()  # noqa: SLF001 - a new session
    counting = CountingFactory()
    with caplog.at_level("WARNING"):
        exact.tabularize(KUHN, CodePolicy("again", code.source), host_factory=counting)
    assert counting.started == 1, "the policy was asked again, not read from a directory others may write"
    assert "others may write to it" in caplog.text


def test_what_the_host_guard_forbids_and_the_host_environment_are_part_of_the_key():
    """A guard tightened after an escape (validation.py) or a new host environment
    (isolation.py) must not let old tables stand in for running the code again."""
    from csro_tui.sandbox import isolation, validation

    files = {path.resolve() for path in table_cache.fingerprinted_files()}
    assert {Path(validation.__file__).resolve(), Path(isolation.__file__).resolve()} <= files


def test_what_the_parent_sends_and_how_it_reads_answers_are_part_of_the_key():
    """The sandbox's parent side is split by concern (sandbox/wire.py, checks.py,
    ...): each file that encodes observations, checks answers or sets a host up
    is in the key, so a change there runs the code again."""
    from csro_tui.sandbox import checks, host_process, policy_host, wire

    files = {path.resolve() for path in table_cache.fingerprinted_files()}
    deciding = (wire.encode_observation, wire.column_message, checks.check_answers, checks.check_distribution,
                host_process.load_message, policy_host.PolicyHost.receive_act)
    assert {Path(function.__code__.co_filename).resolve() for function in deciding} <= files
